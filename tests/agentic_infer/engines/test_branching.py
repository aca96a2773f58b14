"""ARPO / AEPO branched rollouts (`BranchingRollout`) over TIR: where the rule branches, what a branch holds.

The scripted backend sets every token's top-k alternatives so the entropy of each generation is known:
the sampled token at logprob lp, the other k − 1 at lp − gap (gap 0: entropy log k; gap 4: nearly 0).
"""

import math

import pytest

from agentic_infer.engines.branching import AEPOConfig, ARPOConfig, BranchingRollout
from agentic_infer.engines.tir import TIR
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.base import ToolResult
from agentic_infer.types import TokenLogprob, TopLogprob
from train.core.advantages.arpo import arpo_token_advantages, check_shared_prefixes

CODE = "Compute.\n```python\nprint({n})\n```\n"


class GapLLM(FakeLLM):
    """FakeLLM whose alternatives sit `gap(prompt)` nats below the sampled token; records (prompt ids, seed)."""

    def __init__(self, script, gap):
        super().__init__(script)
        self.gap = gap
        self.calls: list[tuple[tuple[int, ...], int]] = []

    async def _stream_tokens(self, prompt, params, seed, cancelled):
        text = prompt if isinstance(prompt, str) else self.tokenizer.decode(prompt)
        self.calls.append((tuple(prompt), seed))
        g = self.gap(text)
        async for piece, tok in super()._stream_tokens(prompt, params, seed, cancelled):
            top = tuple(TopLogprob(t.token, tok.logprob - (g if j else 0.0), t.token_id) for j, t in enumerate(tok.top))
            yield piece, TokenLogprob(tok.token_id, tok.token, tok.logprob, top)


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


def entropy(gap: float, k: int) -> float:
    z = 1 + (k - 1) * math.exp(-gap)
    ps = [1 / z] + [math.exp(-gap) / z] * (k - 1)
    return -sum(p * math.log(p) for p in ps)


def llm_with(gaps: dict[int, float]) -> GapLLM:
    return GapLLM(script, lambda text: gaps[outputs(text)])


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
    index = {t.id: i for i, t in enumerate(rollout.trajectories)}
    return [(index[d["trajectory"]], d["branches"]) for d in rollout.metadata["branching"]["decisions"]]


async def test_arpo_branches_where_and_only_where_entropy_rises_within_budget():
    llm = llm_with({0: 4.0, 1: 0.0, 2: 0.0})  # first turn sure, both post-tool turns uncertain
    engine = BranchingRollout(TIR(llm, EchoSandbox()), "arpo", ARPOConfig(per_prompt=4, initial=1), seed=0, logprobs=2)
    rollout = await engine.run({"id": "q", "question": "q?"})
    trajs = rollout.trajectories
    # obs 1: root branches Z=2 (budget 1 -> 3 of 4); obs 2: root gets the last one, the branches none
    assert decisions(rollout) == [(0, 2), (0, 1), (1, 0), (2, 0)]
    assert [trajs.index(next(p for p in trajs if p.id == t.parent_id)) if t.parent_id else None for t in trajs] == \
        [None, 0, 0, 0]
    root = trajs[0]
    obs = [i for i, s in enumerate(root.segments) if s.kind == "observation"]
    cuts = [sum(len(s.token_ids) for s in root.segments[:i + 1]) for i in obs]
    assert [t.branch_token for t in trajs[1:]] == [cuts[0], cuts[0], cuts[1]]
    d = rollout.metadata["branching"]["decisions"][0]
    assert d["h0"] == pytest.approx(entropy(4.0, 2)) and d["h"] == pytest.approx(math.log(2))
    assert len(trajs) == 4 and rollout.metadata["branching"]["branches"] == 3
    check_branches(rollout)
    # each branch's first turn was generated from exactly the parent's prefix ids
    for t in trajs[1:]:
        assert any(p == tuple(root.token_ids()[:t.branch_token]) for p, _ in llm.calls)
    # generations from the same prefix sampled with different seeds (branches are distinct samples)
    seen: dict[tuple, list[int]] = {}
    for p, s in llm.calls:
        seen.setdefault(p, []).append(s)
    assert any(len(v) > 1 for v in seen.values()) and all(len(set(v)) == len(v) for v in seen.values())
    # the rollout's usage counts the shared prefix once
    assert rollout.usage.llm_calls == len(llm.calls)


async def test_arpo_does_not_branch_when_entropy_falls():
    llm = llm_with({0: 0.0, 1: 4.0, 2: 4.0})
    rollout = await BranchingRollout(TIR(llm, EchoSandbox()), "arpo", ARPOConfig(per_prompt=4, initial=2),
                                     logprobs=2).run({"question": "q?"})
    assert len(rollout.trajectories) == 2 and all(t.parent_id is None for t in rollout.trajectories)
    assert decisions(rollout) == [(0, 0), (1, 0), (0, 0), (1, 0)]
    assert all(t.answer == "1" for t in rollout.trajectories)


@pytest.mark.parametrize(("penalty", "expected"), [(1.0, [(0, 2), (0, 0), (1, 0), (2, 0)]),
                                                   (0.0, [(0, 2), (0, 1), (1, 0), (2, 0)])])
async def test_aepo_dynamic_budget_and_consecutive_branch_penalty(penalty, expected):
    llm = llm_with({0: 4.0, 1: 0.0, 2: 0.0})
    cfg = AEPOConfig(alpha=1.0, per_prompt=4, penalty=penalty)
    rollout = await BranchingRollout(TIR(llm, EchoSandbox()), "aepo", cfg, logprobs=2).run({"question": "q?"})
    meta = rollout.metadata["branching"]
    h_root, h_tool = entropy(4.0, 2), math.log(2)
    assert meta["h_root"] == pytest.approx(h_root) and meta["h_tool"] == pytest.approx(h_tool)
    assert meta["global_samples"] == round(4 / (1 + math.exp(-(h_root - h_tool)))) == 1  # root sure: budget to branches
    # the probe branches at obs 1 (l = 0); at obs 2 its l = 1 (and its branches' too): p·(1 − penalty)
    assert decisions(rollout) == expected
    assert [d["consecutive"] for d in meta["decisions"]] == [0, 1, 1, 1]
    check_branches(rollout)


async def test_aepo_uncertain_root_spends_the_budget_on_global_samples():
    llm = llm_with({0: 0.0, 1: 4.0, 2: 4.0})
    rollout = await BranchingRollout(TIR(llm, EchoSandbox()), "aepo", AEPOConfig(per_prompt=4), logprobs=2
                                     ).run({"question": "q?"})
    m = round(4 / (1 + math.exp(-(math.log(2) - entropy(4.0, 2)))))
    assert m == 3 and rollout.metadata["branching"]["global_samples"] == 3
    assert len(rollout.trajectories) == 3 and all(t.parent_id is None for t in rollout.trajectories)


async def test_seeded_stochastic_decisions_are_reproducible():
    cfg = ARPOConfig(per_prompt=6, initial=2, stochastic=True)  # P = 0.5 + 0.2·ΔH ≈ 0.62: u ~ U(0,1) decides

    async def run(seed):
        llm = llm_with({0: 4.0, 1: 0.0, 2: 0.0})
        r = await BranchingRollout(TIR(llm, EchoSandbox()), "arpo", cfg, seed=seed, logprobs=2).run({"question": "q"})
        check_branches(r)
        return decisions(r), [t.token_ids() for t in r.trajectories], [t.branch_token for t in r.trajectories]

    first = await run(1)
    assert await run(1) == first
    assert len({str((await run(s))[0]) for s in range(6)}) > 1  # the seed matters


def test_configuration_errors():
    engine = TIR(FakeLLM([]), EchoSandbox())
    with pytest.raises(ConfigError, match="strategy='tree'"):
        BranchingRollout(engine, "tree")
    with pytest.raises(ConfigError, match="takes a AEPOConfig"):
        BranchingRollout(engine, "aepo", ARPOConfig())
    with pytest.raises(ConfigError, match="logprobs=1"):
        BranchingRollout(engine, logprobs=1)
    assert BranchingRollout(engine).sampling.logprobs == 5 and engine.loop.sampling.logprobs == 0  # engine untouched


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
    cfg = ARPOConfig(per_prompt=3, initial=1, alpha=1.0)  # P >= 1 - 0.2·|ΔH| > τ: always branch while budget lasts

    async def run():
        return await BranchingRollout(engine, "arpo", cfg, seed=3, logprobs=3).run({"question": "Capital of France?"})

    rollout = await run()
    trajs = rollout.trajectories
    assert len(trajs) == 3 and [t.parent_id for t in trajs[1:]] == [trajs[0].id] * 2
    d = rollout.metadata["branching"]["decisions"][0]
    assert d["branches"] == 2 and d["h"] > 0 and d["token"] == trajs[1].branch_token
    check_branches(rollout)
    # the fork point is the same again (forced query + retrieval); the sampled ids may drift, since llama.cpp's
    # prefix cache changes logits in the last digits depending on what ran before (see backends/llamacpp.py)
    again = await run()
    assert [t.branch_token for t in again.trajectories] == [t.branch_token for t in trajs]
