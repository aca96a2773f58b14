"""GRPO with ARPO / AEPO branched rollouts through TRL 1.16 on a tiny random model (CPU): each group of
`num_generations` rows is one BranchingRollout (roots + branches, filled with roots), the `arpo` estimator
attributes over its real branch structure, and a training step runs.

The policy is the trainer's model through `HFLLM.from_model`; a random model never writes a code block, so the
engine (TIR) opens every episode with a forced one and the backend wrapper reports each turn as stopped on the
closing fence (ids, text and logprobs untouched): the first turn's tokens then act, the tool result follows, and
the next generation is a fork point whose tokens before it (the first turn) are shared by the branches.
Branching is forced with α = 1, β = 0 (P_t = 1 > τ = 0.5 at every fork point) and suppressed with α = 0.
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.train.trainers.conftest import tiny_model

pytest.importorskip("trl")

PROMPTS = [{"prompt": "What is the capital of France?", "answer": "Paris"},
           {"prompt": "What is the capital of Italy?", "answer": "Rome"}]
G = 4
ALWAYS = {"rule": "threshold", "alpha": 1.0, "beta": 0.0, "branch_factor": 2}  # P_t = 1 > τ: every fork point branches
NEVER = {"rule": "threshold", "alpha": 0.0, "beta": 0.0}


class FenceStops:
    """The policy's backend with every turn reported as stopped on TIR's closing fence (`stop_reason`)."""

    def __init__(self, llm):
        self.llm = llm

    def __getattr__(self, name):
        return getattr(self.llm, name)

    async def generate(self, prompt, params):
        return [dataclasses.replace(c, finish_reason="stop", stop_reason="```\n")
                for c in await self.llm.generate(prompt, params)]


class EchoSandbox:
    async def __call__(self, code):
        from agentic_infer.tools.base import ToolResult

        return ToolResult("1")


def engine(llm, seed):
    from agentic_infer.engines.tir import TIR, TIRConfig
    from agentic_infer.types import SamplingParams

    class OpenedTIR(TIR):
        def start(self, example):  # the code block opens the turn; the model's first turn completes the action
            return self.loop.start(dict(example), self.messages(example), assistant_prefix="```python\nprint(1)\n```")

    sampling = SamplingParams(max_tokens=4, temperature=1.0, logprobs=0, seed=seed)
    return OpenedTIR(FenceStops(llm), EchoSandbox(), TIRConfig(max_turns=3, sampling=sampling))


def root_reward(completions, trajectory, **kw):
    """1 for a root, 0 for a branch: the group's advantages differ, so hard attribution is visible."""
    return [float(t.parent_id is None) for t in trajectory]


def build(tokenizer, tmp_path, *, branching="arpo", options=ALWAYS, estimator="arpo", mode="hard", steps=1):
    from datasets import Dataset
    from trl import GRPOConfig

    from train.grpo.rollout import RolloutFunc
    from train.grpo.trainer import AgenticGRPOTrainer, Estimator

    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=2 * G, num_generations=G,
                      max_steps=steps, learning_rate=5e-2, use_cpu=True, report_to="none", logging_steps=1,
                      save_strategy="no", beta=0.0, max_completion_length=64)
    rf = RolloutFunc(engine, tokenizer=tokenizer, seed=0, branching=branching, branching_options=options)
    return AgenticGRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[root_reward], args=args,
                              train_dataset=Dataset.from_list(PROMPTS * 2), processing_class=tokenizer,
                              rollout_func=rf, estimator=Estimator(name=estimator, arpo_mode=mode))


def batch_of(trainer):
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    return trainer._generate_and_score_completions([dict(p) for p in PROMPTS for _ in range(G)])


def rows_of(batch):
    return batch["completion_ids"].size(0)


def test_each_group_is_one_branched_rollout(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path)
    batch = batch_of(trainer)
    rollouts = trainer.rollout_func.last_rollouts
    assert rows_of(batch) == G * len(PROMPTS) and len(rollouts) == len(PROMPTS)
    assert trainer._metrics["train"]["diag/branch_share"] == [0.5]  # G/2 branches of G per group
    for r in rollouts:
        trajs = r.trajectories
        assert len(trajs) == G
        meta = r.metadata["branching"]
        # ARPO: initial = G/2 roots; the first root's fork spends the other G/2 as branches; no fill needed
        assert (meta["roots"], meta["branches"], meta["filled"]) == (G // 2, G // 2, 0)
        parents = [t.parent_id for t in trajs]
        assert parents == [None, None, trajs[0].id, trajs[0].id]
        for t in trajs[2:]:  # a branch: the root's ids up to the fork (first turn + tool result), then its own
            assert t.token_ids()[:t.branch_token] == trajs[0].token_ids()[:t.branch_token]
            assert any(s.kind == "model" and s.token_ids for s in t.segments[:t.metadata["branch"]["segment"]])
    # row order: group after group, each group's trajectories in Rollout order (what TRL groups by)
    from train.core.masks import completion_view

    rows = [t for r in rollouts for t in r.trajectories]
    for i, t in enumerate(rows):
        ids = completion_view(t, **trainer.rollout_func.view_kwargs).completion_ids
        assert batch["completion_ids"][i, :len(ids)].tolist() == ids


def test_arpo_estimator_attributes_over_the_branches(tokenizer, tmp_path):
    from train.core.advantages import arpo_token_advantages, grpo_advantages
    from train.core.masks import completion_view

    trainer = build(tokenizer, tmp_path)
    batch = batch_of(trainer)
    rf = trainer.rollout_func
    adv = batch["advantages"]
    assert adv.shape == batch["completion_ids"].shape
    rewards = trainer._last_rewards.sum(1)
    assert rewards.tolist() == [1.0, 1.0, 0.0, 0.0] * len(PROMPTS)
    base = grpo_advantages(rewards, group_size=G).tolist()
    shared_checked = 0
    for g, r in enumerate(rf.last_rollouts):
        own = base[g * G:(g + 1) * G]
        expect = arpo_token_advantages(r, own, mode="hard", **rf.view_kwargs)
        for i in range(G):
            row = g * G + i
            assert adv[row, :len(expect[i])].tolist() == pytest.approx(expect[i], abs=1e-6)
            assert (adv[row, len(expect[i]):] == 0).all()
        # the shared first turn: root 0 and its two branches each carry the mean of their three advantages
        root = r.trajectories[0]
        view = completion_view(root, **rf.view_kwargs)
        cut = r.trajectories[2].branch_token - len(view.prompt_ids)
        shared = [k for k in range(cut) if view.env_mask[k]]
        assert shared
        mean = (own[0] + own[2] + own[3]) / 3
        for i in (0, 2, 3):
            assert adv[g * G + i, shared].tolist() == pytest.approx([mean] * len(shared), abs=1e-6)
            shared_checked += 1
        assert mean != pytest.approx(own[0])  # hard attribution differs from the root's own advantage
        # after the fork each keeps its own
        tail = [k for k in range(cut, len(view.env_mask)) if view.env_mask[k]]
        assert adv[g * G, tail].tolist() == pytest.approx([own[0]] * len(tail), abs=1e-6)
    assert shared_checked == 3 * len(PROMPTS)


def test_fewer_branches_are_filled_with_roots(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path, options=NEVER, estimator="grpo")
    batch = batch_of(trainer)
    assert rows_of(batch) == G * len(PROMPTS)
    for r in trainer.rollout_func.last_rollouts:
        meta = r.metadata["branching"]
        assert (meta["roots"], meta["branches"], meta["filled"]) == (G // 2, 0, G // 2)
        assert all(t.parent_id is None for t in r.trajectories) and len({t.id for t in r.trajectories}) == G
        # fill roots are fresh samples (own seeds), not copies
        assert len({tuple(t.token_ids()) for t in r.trajectories}) == G


def test_aepo_branching_fills_each_group(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path, branching="aepo", options={**ALWAYS, "penalty": 0.0})
    batch = batch_of(trainer)
    assert rows_of(batch) == G * len(PROMPTS)
    for r in trainer.rollout_func.last_rollouts:
        assert len(r.trajectories) == G and any(t.parent_id for t in r.trajectories)
        meta = r.metadata["branching"]
        assert meta["roots"] + meta["branches"] + meta["filled"] == G


def test_branched_grpo_step_changes_parameters(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path)
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    trainer.train()
    changed = [k for k, v in trainer.model.named_parameters() if not (v.detach() == before[k]).all()]
    assert changed
    # TRL's own sampler fed the rollout_func each prompt G times, consecutively: one branched rollout per prompt
    rollouts = trainer.rollout_func.last_rollouts
    assert len(rollouts) == 2 and all(sum(t.parent_id is not None for t in r.trajectories) == G // 2 for r in rollouts)


def test_groups_must_be_whole_and_repeated():
    from agentic_infer.errors import ConfigError
    from train.grpo.rollout import prompt_groups

    assert prompt_groups(["a", "a", "b", "b"], 2) == [0, 2]
    with pytest.raises(ConfigError, match="whole groups"):
        prompt_groups(["a", "a", "b"], 2)
    with pytest.raises(ConfigError, match="not one prompt repeated"):
        prompt_groups(["a", "b", "a", "b"], 2)


def test_settings_reach_the_rollout_func(tokenizer, tmp_path):
    from agentic_infer.config import build_config
    from agentic_infer.errors import ConfigError
    from train.grpo.config import GRPOSettings
    from train.grpo.rollout import branching_config
    from train.grpo.run import build_grpo_trainer

    settings = build_config(GRPOSettings, overrides={
        "out": str(tmp_path / "o"), "num_generations": G, "batch_size": G, "branching": "arpo",
        "branching_config": {"rule": "threshold", "alpha": 1.0, "window": 5}, "estimator": {"name": "arpo"}})
    trainer = build_grpo_trainer(settings, tiny_model(tokenizer), tokenizer, PROMPTS, factory=engine,
                                 reward_funcs=[root_reward])
    rf = trainer.rollout_func
    assert (rf.branching, rf.branching_options) == ("arpo", {"rule": "threshold", "alpha": 1.0, "window": 5})
    cfg, kw = branching_config("arpo", G, rf.branching_options)
    assert (cfg.per_prompt, cfg.initial, cfg.alpha, kw) == (G, G // 2, 1.0, {"window": 5})
    for bad in ({"branching": "tree"}, {"branching": "arpo", "branching_config": {"per_prompt": 8}},
                {"branching": "aepo", "branching_config": {"initial": 2}}):
        with pytest.raises(ConfigError):
            GRPOSettings(num_generations=G, batch_size=G, **bad)


def test_hard_attribution_trains_each_shared_token_once(tokenizer, tmp_path):
    """hard vs soft changes the gradient. Hand derivation, on-policy (ratio 1, the loss per trained token is
    −A, token-mean over N trained tokens): the gradient at a shared position is g·(Σ of the advantages on the
    rows that train it)/N, g the same in every row (same context, same token). soft: the root and its two
    branches each train it with their own advantage: Σ = A0 + A2 + A3. hard: only the root row trains it, with
    the mean (A0 + A2 + A3)/3; the branches' copies leave the loss (tool_mask 0) and N shrinks."""
    from tests.train.trainers.test_trainer_grpo import logits_grad
    from train.core.masks import completion_view

    grads, sums, tokens = {}, {}, {}
    for mode in ("hard", "soft"):
        trainer = build(tokenizer, tmp_path / mode, mode=mode)
        batch = batch_of(trainer)
        rf = trainer.rollout_func
        r = rf.last_rollouts[0]
        root = completion_view(r.trajectories[0], **rf.view_kwargs)
        cut = r.trajectories[2].branch_token - len(root.prompt_ids)
        shared = [k for k in range(cut) if root.env_mask[k]]
        assert shared
        g = logits_grad(trainer, batch)  # (B, C, H)
        mask = batch["tool_mask"] * batch["completion_mask"]
        if mode == "hard":
            assert (mask[[2, 3]][:, shared] == 0).all() and (mask[0, shared] == 1).all()
            assert g[[2, 3]][:, shared].abs().max() == 0
        else:
            assert (mask[[0, 2, 3]][:, shared] == 1).all()
        grads[mode] = g[[0, 2, 3]][:, shared].sum(0)  # what the shared tokens contribute, all rows together
        tokens[mode] = float(mask.sum())
        rewards = trainer._last_rewards.sum(1)[:G].tolist()  # [1, 1, 0, 0]: roots 1, branches 0
        m = sum(rewards) / G
        s = (sum((x - m) ** 2 for x in rewards) / (G - 1)) ** 0.5
        a = [(x - m) / (s + 1e-4) for x in rewards]  # GRPO by hand: ±0.866
        sums[mode] = (a[0] + a[2] + a[3]) / 3 if mode == "hard" else a[0] + a[2] + a[3]
    # g = grads·N/Σ is the same per-unit-advantage gradient in both modes
    unit_hard = grads["hard"] * tokens["hard"] / sums["hard"]
    unit_soft = grads["soft"] * tokens["soft"] / sums["soft"]
    # (rtol 1e-2: TRL 1.16 autocasts to bf16 on CPU by default, so rows differ in the third digit)
    assert unit_hard.abs().sum() > 0 and unit_hard.allclose(unit_soft, rtol=1e-2, atol=1e-6)
    assert not grads["hard"].allclose(grads["soft"], rtol=1e-2)


@pytest.mark.parametrize("opened", [True, False])
def test_the_tool_use_collapse_watch_logs_the_share_of_episodes_that_called_a_tool(tokenizer, tmp_path, opened,
                                                                                  monkeypatch):
    """`diag/tool_call_rate` / `diag/tool_calls`: every episode of the opened engine runs its forced code block
    (the sandbox saw it), a random model alone never writes one."""
    ran = []

    async def counting(self, code):
        from agentic_infer.tools.base import ToolResult

        ran.append(code)
        return ToolResult("1")

    monkeypatch.setattr(EchoSandbox, "__call__", counting)
    if not opened:  # the plain engine: the model's own turns only
        def plain(llm, seed):
            from agentic_infer.engines.tir import TIR, TIRConfig
            from agentic_infer.types import SamplingParams

            sampling = SamplingParams(max_tokens=4, temperature=1.0, logprobs=0, seed=seed)
            return TIR(FenceStops(llm), EchoSandbox(), TIRConfig(max_turns=3, sampling=sampling))

        monkeypatch.setitem(globals(), "engine", plain)
    trainer = build(tokenizer, tmp_path, branching="none", options=None, estimator="grpo")
    batch_of(trainer)
    episodes = G * len(PROMPTS)
    assert trainer._metrics["train"]["diag/tool_call_rate"] == [float(opened)]
    assert trainer._metrics["train"]["diag/tool_calls"] == [len(ran) / episodes]
    assert (len(ran) >= episodes) == opened
