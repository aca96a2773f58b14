"""ARPO / AEPO branched rollouts (`BranchingRollout`) over TIR: where the rule branches, what a branch holds.

The scripted backend sets every token's top-k alternatives, so the entropy of each token is known: the other
k − 1 alternatives sit `gap` nats below the sampled token; SURE (gap 50) gives entropy ~1e−20 (0 below),
EVEN (gap 0) gives log k, normalised to 1. Each episode writes two code blocks then the answer: generation 0
(from the prompt), 1 (after tool result 1: fork point at turn 2) and 2 (after tool result 2: turn 3).

Expected decisions are hand-computed from P = clip((u + β·ΔH)·f, 0, 1) >= τ (β 0.2, τ 0.5) and the seeded
draws of the decision rng `random.Random(f"{seed}:{example_id}")`, written down once:
    "0:q" -> 0.4796, 0.7567, 0.9355      "6:q" -> 0.9038, 0.5594      "7:q" -> 0.2477, 0.8899
"""

import json
import math

import pytest

from agentic_infer.engines.branching import AEPOConfig, ARPOConfig, BranchingRollout
from agentic_infer.engines.tir import TIR
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.base import ToolResult
from agentic_infer.types import TokenLogprob, TopLogprob
from train.core.advantages.arpo import arpo_token_advantages, check_shared_prefixes

CODE = "Compute.\n```python\nprint({n})\n```\n"  # 30 tokens (bytes): more than the 20-token window
SURE, EVEN = 50.0, 0.0


class GapLLM(FakeLLM):
    """FakeLLM whose alternatives sit `gaps[n](i)` nats below token i of the generation made after n tool
    results (a float: every token); records (prompt ids, seed) per call."""

    def __init__(self, script, gaps):
        super().__init__(script)
        self.gaps = {n: g if callable(g) else (lambda i, g=g: g) for n, g in gaps.items()}
        self.calls: list[tuple[tuple[int, ...], int]] = []

    async def _stream_tokens(self, prompt, params, seed, cancelled):
        gap = self.gaps[outputs(prompt if isinstance(prompt, str) else self.tokenizer.decode(prompt))]
        self.calls.append((tuple(prompt), seed))
        i = 0
        async for piece, tok in super()._stream_tokens(prompt, params, seed, cancelled):
            top = tuple(TopLogprob(t.token, tok.logprob - (gap(i) if j else 0.0), t.token_id)
                        for j, t in enumerate(tok.top))
            yield piece, TokenLogprob(tok.token_id, tok.token, tok.logprob, top)
            i += 1


class EchoSandbox:
    async def __call__(self, code: str) -> ToolResult:
        return ToolResult(f"ran {code.strip()}")


def outputs(text: str) -> int:
    """Tool results so far (the instruction itself shows an output block, so count the sandbox's marker)."""
    return text.count("ran print(")


def script(text: str) -> str:
    """Two code blocks, then the answer."""
    n = outputs(text)
    return CODE.format(n=n) if n < 2 else "So \\boxed{1}"


def first_sure(i: int) -> float:
    """Token 0 sure, the rest even: window 20 -> 19/20 = 0.95, window 1 -> 0."""
    return SURE if i == 0 else EVEN


async def run(gaps, strategy="arpo", config=None, *, seed=0, **kw):
    llm = GapLLM(script, gaps)
    rollout = await BranchingRollout(TIR(llm, EchoSandbox()), strategy, config, seed=seed, **kw).run(
        {"id": "q", "question": "q?"})
    check_branches(rollout)
    return rollout, llm


def check_branches(rollout):
    """Every branch: the parent's first `branch_token` ids then its own, forked right after an observation."""
    by_id = {t.id: t for t in rollout.trajectories}
    for t in rollout.trajectories:
        if t.parent_id is None:
            assert t.branch_token is None and "branch" not in t.metadata
            continue
        parent, cut, seg = by_id[t.parent_id], t.branch_token, t.metadata["branch"]["segment"]
        own = [i for s in t.segments[seg:] for i in s.token_ids]
        assert t.token_ids() == parent.token_ids()[:cut] + own
        assert sum(len(s.token_ids) for s in t.segments[:seg]) == cut
        assert t.segments[seg - 1].kind == "observation" and t.segments[seg].kind == "model"
        assert t.token_exact and t.finish_reason is not None
    check_shared_prefixes(rollout)
    adv = arpo_token_advantages(rollout, [float(i) for i in range(len(rollout.trajectories))])
    assert len(adv) == len(rollout.trajectories)


def decisions(rollout):
    """(trajectory index, turn, l, branches) of every decision, in order."""
    index = {t.id: i for i, t in enumerate(rollout.trajectories)}
    return [(index[d["trajectory"]], d["turn"], d["consecutive"], d["branches"])
            for d in rollout.metadata["branching"]["decisions"]]


def forks(rollout):
    """(parent index, fork point: 1 = after tool result 1, 2 = after tool result 2) of every branch."""
    trajs = rollout.trajectories
    index = {t.id: i for i, t in enumerate(trajs)}
    out = []
    for t in trajs:
        if t.parent_id is not None:
            parent = trajs[index[t.parent_id]]
            obs = [i for i, s in enumerate(parent.segments) if s.kind == "observation"]
            cuts = [sum(len(s.token_ids) for s in parent.segments[:i + 1]) for i in obs]
            out.append((index[t.parent_id], cuts.index(t.branch_token) + 1))
    return out


# -- ARPO: the sampled rule where its effect lands ---------------------------------------------------------

RISE = {0: SURE, 1: first_sure, 2: SURE}  # h0 = 0; after result 1: 0.95 (window 20) / 0 (window 1); after 2: 0


async def test_arpo_default_branches_where_the_seeded_draw_and_the_entropy_rise_say():
    rollout, _ = await run(RISE, config=ARPOConfig(per_prompt=3, initial=1))
    # turn 2: ΔH = 0.95: 0.4796 + 0.2·0.95 = 0.6696 >= 0.5 -> 1 (1 left); turn 3: ΔH = 0: 0.7567 >= 0.5 -> 1;
    # turn 4: the first branch's own result-2 fork point, nothing left -> 0 (no draw)
    assert decisions(rollout) == [(0, 2, 0, 1), (0, 3, 1, 1), (1, 4, 2, 0)]
    assert forks(rollout) == [(0, 1), (0, 2)]
    logged = rollout.metadata["branching"]["decisions"]
    assert [d["h"] for d in logged] == pytest.approx([0.95, 0.0, 0.0], abs=1e-12)
    assert [d["h0"] for d in logged] == pytest.approx([0.0] * 3, abs=1e-12)  # a branch keeps its root's H_initial


async def test_arpo_window_changes_the_branches():
    rollout, _ = await run(RISE, config=ARPOConfig(per_prompt=3, initial=1), window=1)
    # window 1: h = 0 after result 1: 0.4796 < 0.5 -> 0; turn 3: 0.7567 -> 1; its branch regenerates the answer
    assert decisions(rollout) == [(0, 2, 0, 0), (0, 3, 0, 1)]
    assert forks(rollout) == [(0, 2)]


async def test_arpo_beta_changes_the_branches():
    rollout, _ = await run(RISE, config=ARPOConfig(per_prompt=3, initial=1, beta=0.0))
    # β = 0: 0.4796 < 0.5 -> 0 at turn 2; 0.7567 -> 1 at turn 3
    assert decisions(rollout) == [(0, 2, 0, 0), (0, 3, 0, 1)]
    assert forks(rollout) == [(0, 2)]


async def test_arpo_branches_also_when_the_entropy_falls():
    rollout, _ = await run({0: EVEN, 1: SURE, 2: SURE}, config=ARPOConfig(per_prompt=2, initial=1), seed=6)
    # h0 = 1, h = 0: ΔH = −1; turn 2: 0.9038 − 0.2 = 0.7038 >= 0.5 -> 1, the budget is spent (no more draws;
    # turn 3 forks nothing, so l is back to 0 at turn 4)
    assert decisions(rollout) == [(0, 2, 0, 1), (0, 3, 1, 0), (1, 4, 0, 0)]
    assert forks(rollout) == [(0, 1)]


async def test_entropies_are_normalised_by_the_alternatives_asked_for():
    gaps = {0: SURE, 1: EVEN, 2: SURE}
    rollout, llm = await run(gaps, config=ARPOConfig(per_prompt=2, initial=1), seed=7, logprobs=4)
    assert all(p.logprobs == 4 for p in llm.params) and rollout.metadata["branching"]["top_k"] == 4
    d = rollout.metadata["branching"]["decisions"][0]
    assert d["h"] == pytest.approx(1.0)  # ln 4 / ln 4: uniform over the 4 alternatives asked for
    # turn 2: 0.2477 + 0.2·1 = 0.4477 < 0.5 -> 0 (unnormalised, 0.2477 + 0.2·ln 4 = 0.525 would branch);
    # turn 3: ΔH = 0: 0.8899 -> 1
    assert decisions(rollout) == [(0, 2, 0, 0), (0, 3, 0, 1)]
    assert forks(rollout) == [(0, 2)]
    two, _ = await run(gaps, config=ARPOConfig(per_prompt=2, initial=1), seed=7, logprobs=2)
    assert two.metadata["branching"]["decisions"][0]["h"] == pytest.approx(1.0)  # ln 2 / ln 2


# -- ARPO: structure, branch factor, the paper's threshold option -----------------------------------------

ALWAYS = {"tau": 0.0, "beta": 0.0}  # P = u >= 0: every copy branches while the budget lasts


@pytest.mark.parametrize(("factor", "expected", "where"), [
    (1, [(0, 2, 0, 1), (0, 3, 1, 1), (1, 4, 2, 0)], [(0, 1), (0, 2)]),  # one copy per fork point
    (2, [(0, 2, 0, 2), (0, 3, 1, 0), (1, 4, 0, 0), (2, 4, 0, 0)], [(0, 1), (0, 1)]),  # both at the first one
])
async def test_arpo_branch_factor_places_the_branches(factor, expected, where):
    cfg = ARPOConfig(per_prompt=3, initial=1, branch_factor=factor, **ALWAYS)
    rollout, llm = await run({0: SURE, 1: EVEN, 2: EVEN}, config=cfg)
    assert decisions(rollout) == expected and forks(rollout) == where
    trajs = rollout.trajectories
    assert len(trajs) == 3 and rollout.metadata["branching"]["branches"] == 2
    # each branch's first turn was generated from exactly the parent's prefix ids
    for t in trajs[1:]:
        assert any(p == tuple(trajs[0].token_ids()[:t.branch_token]) for p, _ in llm.calls)
    # generations from the same prefix sampled with different seeds (branches are distinct samples)
    seen: dict[tuple, list[int]] = {}
    for p, s in llm.calls:
        seen.setdefault(p, []).append(s)
    assert all(len(set(v)) == len(v) for v in seen.values())
    assert rollout.usage.llm_calls == len(llm.calls)  # the rollout's usage counts the shared prefix once


async def test_arpo_threshold_rule_branches_only_where_the_entropy_rises():
    cfg = ARPOConfig(per_prompt=4, initial=2, rule="threshold", alpha=0.5)  # α = τ: branch when ΔH > 0
    rollout, _ = await run({0: EVEN, 1: SURE, 2: SURE}, config=cfg)  # ΔH = −1 at both fork points
    assert len(rollout.trajectories) == 2 and all(t.parent_id is None for t in rollout.trajectories)
    assert [d[3] for d in decisions(rollout)] == [0, 0, 0, 0]
    assert all(t.answer == "1" for t in rollout.trajectories)
    rollout, _ = await run({0: SURE, 1: EVEN, 2: SURE}, config=cfg)  # ΔH = 1 after result 1, 0 after result 2
    # turn 2: roots 0 and 1 each 0.5 + 0.2 = 0.7 > 0.5 -> 1 each (budget 2 spent)
    assert decisions(rollout)[:2] == [(0, 2, 0, 1), (1, 2, 0, 1)] and forks(rollout) == [(0, 1), (1, 1)]


# -- AEPO -------------------------------------------------------------------------------------------------

PROBE = {0: SURE, 1: EVEN, 2: EVEN}  # h_root = 0, the generations after the tool results 1


async def test_aepo_dynamic_budget_from_the_probe():
    rollout, _ = await run(PROBE, "aepo", AEPOConfig(per_prompt=4), logprobs=2)
    meta = rollout.metadata["branching"]
    # H̄_tool = the mean over the probe's three generations (0 + 1 + 1)/3; m = ⌊4·σ(0.5·(0 − 2/3))⌋ + 1
    # = ⌊4·0.4174⌋ + 1 = ⌊1.67⌋ + 1 = 2
    assert meta["h_root"] == pytest.approx(0.0, abs=1e-12) and meta["h_tool"] == pytest.approx(2 / 3)
    assert meta["global_samples"] == meta["roots"] == 2
    # 2 branches left; turn 2, in creation order, the probe's recorded fork point then root 1's, both l = 0:
    # (0.4796 + 0.2)·1 = 0.68 -> 1, (0.7567 + 0.2)·1 = 0.96 -> 1; turn 3 (l = 1) and 4 (l = 0): nothing left
    assert decisions(rollout) == [(0, 2, 0, 1), (1, 2, 0, 1), (0, 3, 1, 0), (1, 3, 1, 0), (2, 4, 0, 0), (3, 4, 0, 0)]
    assert forks(rollout) == [(0, 1), (1, 1)]
    rollout, _ = await run({0: EVEN, 1: SURE, 2: SURE}, "aepo", AEPOConfig(per_prompt=4), logprobs=2)
    # uncertain root: H̄_tool = 1/3, ⌊4·σ(0.5·2/3)⌋ + 1 = ⌊4·0.5826⌋ + 1 = ⌊2.33⌋ + 1 = 3
    assert rollout.metadata["branching"]["global_samples"] == 3
    assert sum(t.parent_id is None for t in rollout.trajectories) == 3


@pytest.mark.parametrize(("penalty", "expected", "where"), [
    # the default penalty 0.05: turn 2, l = 0: (0.4796 + 0.2·1)·1 = 0.6796 -> 1; turn 3, l = 1: (0.7567 + 0.2)·0.95 = 0.9089 -> 1 (twice in a
    # row); turn 4, l = 2: the first branch's fork point, nothing left -> 0
    (None, [(0, 2, 0, 1), (0, 3, 1, 1), (1, 4, 2, 0)], [(0, 1), (0, 2)]),
    # turn 3, l = 1: 0.9567·0.5 = 0.478 < 0.5 -> 0, which resets l; turn 4, l = 0: 0.9355 + 0.2 -> 1, forked from
    # the first branch after its result 2
    (0.5, [(0, 2, 0, 1), (0, 3, 1, 0), (1, 4, 0, 1)], [(0, 1), (1, 2)]),
])
async def test_aepo_consecutive_branch_penalty_per_prompt(penalty, expected, where):
    # global_beta 10: m = ⌊3·σ(10·(0 − 2/3))⌋ + 1 = ⌊0.004⌋ + 1 = 1, so the probe alone and two branches;
    # its recorded fork points are decided at their own turns (2 and 3)
    cfg = AEPOConfig(per_prompt=3, global_beta=10.0, **({} if penalty is None else {"penalty": penalty}))
    rollout, _ = await run(PROBE, "aepo", cfg, logprobs=2)
    assert rollout.metadata["branching"]["global_samples"] == 1
    assert decisions(rollout) == expected and forks(rollout) == where


# -- reproducibility, errors, a real model ----------------------------------------------------------------


async def test_seeded_stochastic_decisions_are_reproducible():
    cfg = ARPOConfig(per_prompt=6, initial=2)

    async def once(seed):
        r, _ = await run(RISE, config=cfg, seed=seed)
        return decisions(r), [t.token_ids() for t in r.trajectories], [t.branch_token for t in r.trajectories]

    first = await once(1)
    assert await once(1) == first
    assert len({str((await once(s))[0]) for s in range(6)}) > 1  # the seed matters


def test_configuration_errors():
    engine = TIR(FakeLLM([]), EchoSandbox())
    with pytest.raises(ConfigError, match="strategy='tree'"):
        BranchingRollout(engine, "tree")
    with pytest.raises(ConfigError, match="takes a AEPOConfig"):
        BranchingRollout(engine, "aepo", ARPOConfig())
    with pytest.raises(ConfigError, match="logprobs=1"):
        BranchingRollout(engine, logprobs=1)
    with pytest.raises(ConfigError, match="window=0"):
        BranchingRollout(engine, window=0)
    b = BranchingRollout(engine)
    assert b.sampling.logprobs == b.top_k == 10 and engine.loop.sampling.logprobs == 0  # engine untouched


async def test_backend_without_top_k_is_refused():
    class NoTop(FakeLLM):
        async def _stream_tokens(self, prompt, params, seed, cancelled):
            async for piece, tok in super()._stream_tokens(prompt, params, seed, cancelled):
                yield piece, TokenLogprob(tok.token_id, tok.token, tok.logprob)

    with pytest.raises(ConfigError, match="no top-k alternatives"):
        await BranchingRollout(TIR(NoTop(script), EchoSandbox()), "arpo").run({"question": "q"})


async def test_embedded_model_branches_after_the_search_result(embedded_llm):
    from agentic_infer.engines.search_o1 import SearchO1
    from agentic_infer.tools.retrieval.base import Document
    from agentic_infer.tools.retrieval.memory import InMemoryRetriever
    from agentic_infer.types import SamplingParams

    docs = [Document("d1", "Paris", "Paris is the capital and most populous city of France.")]
    engine = SearchO1(embedded_llm, InMemoryRetriever(docs), rid=False, first_query="question", k=1, max_turns=2,
                      sampling=SamplingParams(max_tokens=8, temperature=0.8))
    cfg = ARPOConfig(per_prompt=3, initial=1, branch_factor=2, **ALWAYS)

    async def once():
        return await BranchingRollout(engine, "arpo", cfg, seed=3, logprobs=3).run({"question": "Capital of France?"})

    rollout = await once()
    trajs = rollout.trajectories
    assert len(trajs) == 3 and [t.parent_id for t in trajs[1:]] == [trajs[0].id] * 2
    d = rollout.metadata["branching"]["decisions"][0]
    assert d["branches"] == 2 and 0 < d["h"] <= 1 + 1e-9 and d["token"] == trajs[1].branch_token
    check_branches(rollout)
    # the fork point is the same again (forced query + retrieval); the sampled ids may drift, since llama.cpp's
    # prefix cache changes logits in the last digits depending on what ran before (see backends/llamacpp.py)
    again = await once()
    assert [t.branch_token for t in again.trajectories] == [t.branch_token for t in trajs]
    assert math.isfinite(d["h0"])


# -- the env agent: a branch acts on its own copy of the env ------------------------------------------------

LAKE = {"id": "lake-1", "seed": 1, "view": "described"}  # the solver's moves: Right, Up, Up


def lake_moves(text: str) -> str:
    """The solver's next move (one per tool result so far: each observation has one "Goal:" line), then a reply."""
    from agentic_infer.envs.registry import make_env

    moves, done = make_env("frozenlake", LAKE).solve(), text.count("Goal:") - 1
    if done >= len(moves):
        return "Done."
    call = json.dumps({"name": "act", "arguments": {"action": moves[done]}})
    return f"<tool_call>\n{call}\n</tool_call>"


async def test_env_branches_act_on_their_own_env():
    """Each branch gets the env as it was at its fork: replaying a trajectory's own moves on a fresh env gives
    its final state and verdict (with one env shared, a branch's moves land where its parent had already moved)."""
    from agentic_infer.engines.env_agent import EnvAgent
    from agentic_infer.envs.registry import make_env

    always = ARPOConfig(per_prompt=4, initial=1, rule="threshold", alpha=1.0, beta=0.0)  # P_t = 1 > τ: every fork
    engine = EnvAgent(GapLLM(lake_moves, {0: EVEN}), env="frozenlake", max_calls=5)
    rollout = await BranchingRollout(engine, "arpo", always, seed=0).run(LAKE)
    check_branches(rollout)
    trajs = rollout.trajectories
    assert len(trajs) == 4 and sum(t.parent_id is not None for t in trajs) == 3
    for t in trajs:
        replay = make_env("frozenlake", LAKE)
        for step in t.steps:
            replay.call_record(step.action, step.arguments)
        assert [s.arguments["action"] for s in t.steps] == ["Right", "Up", "Up"]
        assert t.metadata["env_digest"] == replay.digest()
        assert t.rewards == {"env_reward": 1.0, "success": 1.0}  # the engine's verdict, written per trajectory
