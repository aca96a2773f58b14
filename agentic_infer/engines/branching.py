"""ARPO / AEPO branched rollouts: the seeded branching decisions and the loop that runs the branches.

    engine = BranchingRollout(TIR(llm, sandbox), "arpo", ARPOConfig(per_prompt=8, initial=4), seed=0)
    rollout = await engine.run({"question": "..."})   # roots and branches, one Rollout (the group)

Decisions (pure; the rng is passed in), also exported by `train.core.branching`:

ARPO (after each tool result):
    h0 = window_entropy(first_turn_entropies)               # the initial entropy H_initial
    h = window_entropy(seg.entropies())                      # first k=20 tokens after the tool result
    n = arpo_branches(h, h0, budget=budget, config=ARPOConfig(), rng=random.Random(seed))
P_t = α + β·ΔH with ΔH = H_now − H_initial (β = 0.2); the step branches when P_t > τ (τ = 0.5) into
`branch_factor` (Z) partial rollouts, capped by what is left of the budget. Budget: `per_prompt` (M = 16)
trajectories per prompt, of which `initial` (N = 8) are sampled globally, leaving M − N for branches
(`Budget`). `stochastic=True` also draws u ~ U(0,1) from the given rng and branches only when u < P_t
(the branching "probability" read literally); the default is ARPO's threshold rule.
Entropies are Shannon entropies of the top-k renormalised distribution (`Segment.entropies()`);
`window_entropy(..., top_k=k)` divides by log k (k = the number of alternatives), giving values in [0, 1].

AEPO:
    m = aepo_global_samples(h_root, h_tool_mean, total=k, beta=1.0)   # m = k·σ(β·(H_root − H̄_tool))
    p = aepo_branch_probability(h, h0, consecutive=l, config=AEPOConfig())
High root uncertainty (vs the tool steps) spends more of the budget on global samples, high tool-step
uncertainty more on branches. The consecutive-branch penalty multiplies the branching probability by
(1 − penalty)^l after l consecutive branching steps of the same chain (our reading of AEPO's penalty; the
paper's exact constant is a setting).

The loop (`BranchingRollout`, any `LoopEngine`: Search-o1, TIR): it asks the backend for `logprobs` top
alternatives (>= 2) per token and drives the engine's episodes turn by turn. Before a generation that
follows a tool observation it snapshots the episode (`Episode.to_state`); after it, `h` is the window
entropy of that generation's first `window` tokens, `h0` the window entropy of the chain's root's first
generation, and the decision function says how many branches to fork there. A branch is the snapshot
restored (`Episode.from_state`), so it resamples from right after the tool result: its trajectory has a new
id, `parent_id` = the trajectory it forked from, `branch_token` = the length of the parent's token ids at
the fork (prompt included), and holds its FULL sequence (the parent's first `branch_token` ids, then its
own), which is what `train.core.advantages.arpo` attributes over. A branch does not decide again at its own
fork point (that decision made it). Every chain samples with its own seed (`seed + 10_000·i` for the i-th
trajectory, plus the loop's per-turn offset), so branches differ and a seeded run is reproducible.

ARPO: `initial` roots run together; decisions are taken in a fixed order (trajectory creation order) each
turn, spending the shared per-prompt budget. AEPO: a first root runs alone to the end (entropy
pre-monitoring: H_root = its first generation, H̄_tool = the mean over its post-tool generations); then
m = aepo_global_samples(...) roots in all (the first included) and k − m branches; the first root's recorded
fork points are decided then (in order, with the penalty), and the rest run with live decisions. The
consecutive count l of a chain is the number of its immediately preceding tool steps that branched (a
branch inherits its parent's count, the fork included); a tool step without branching resets it.
`rollout.metadata["branching"]` lists every decision (trajectory, token, h, h0, l, branches).
Not covered: branching inside a tool-free generation (ARPO branches only after tool calls), backends
without top-k logprobs (ConfigError), branches of text-prompt (inexact) episodes (ConfigError).
"""

from __future__ import annotations

import asyncio
import copy
import math
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from agentic_infer.engines.base import example_id
from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Usage

if TYPE_CHECKING:
    from agentic_infer.engines.base import LoopEngine
    from agentic_infer.engines.loop import AgentLoop, Episode

Strategy = Literal["arpo", "aepo"]
SEED_STRIDE = 10_000  # sampling seeds of successive trajectories (the loop adds the turn number)


def window_entropy(entropies: Sequence[float] | None, *, k: int = 20, top_k: int | None = None) -> float:
    """Mean entropy of the first `k` tokens (0.0 for none); divided by log(top_k) when `top_k` is given."""
    if k < 1:
        raise ConfigError(f"k={k!r}: must be >= 1 (ARPO uses the first 20 tokens)")
    vals = list(entropies or ())[:k]
    h = sum(vals) / len(vals) if vals else 0.0
    if top_k is not None:
        if top_k < 2:
            raise ConfigError(f"top_k={top_k!r}: normalising needs >= 2 alternatives per token")
        h /= math.log(top_k)
    return h


@dataclass(frozen=True)
class BranchRule:
    """P_t = α + β·ΔH; branch `branch_factor` (Z) partial rollouts when P_t > τ."""

    alpha: float = 0.5
    beta: float = 0.2
    tau: float = 0.5
    branch_factor: int = 2

    def __post_init__(self) -> None:
        if self.branch_factor < 1:
            raise ConfigError(f"{type(self).__name__}.branch_factor={self.branch_factor!r}: must be >= 1")


@dataclass(frozen=True)
class ARPOConfig(BranchRule):
    per_prompt: int = 16
    initial: int = 8
    stochastic: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.initial <= self.per_prompt:
            raise ConfigError(f"ARPOConfig.initial={self.initial!r}: must be in 1..per_prompt ({self.per_prompt})")


@dataclass(frozen=True)
class Budget:
    """What one prompt has spent: `used` trajectories so far (the initial samples count)."""

    per_prompt: int
    used: int

    @property
    def left(self) -> int:
        return max(0, self.per_prompt - self.used)

    def spend(self, n: int) -> Budget:
        return Budget(self.per_prompt, self.used + n)


def branch_probability(h_now: float, h_initial: float, *, alpha: float, beta: float) -> float:
    """P_t = α + β·(H_now − H_initial)."""
    return alpha + beta * (h_now - h_initial)


def arpo_branches(h_now: float, h_initial: float, *, budget: Budget, config: ARPOConfig = ARPOConfig(),
                  rng: random.Random | None = None) -> int:
    """How many partial rollouts to branch at this step: Z when P_t > τ (and, if stochastic, u < P_t),
    capped by `budget.left`; else 0."""
    p = branch_probability(h_now, h_initial, alpha=config.alpha, beta=config.beta)
    if p <= config.tau or budget.left == 0:
        return 0
    if config.stochastic:
        if rng is None:
            raise ConfigError("ARPOConfig.stochastic=True needs rng=random.Random(seed)")
        if rng.random() >= p:
            return 0
    return min(config.branch_factor, budget.left)


def aepo_global_samples(h_root: float, h_tool_mean: float, *, total: int, beta: float = 1.0) -> int:
    """m = round(k·σ(β·(H_root − H̄_tool))), at least 1 and at most k; the other k − m go to branches."""
    if total < 1:
        raise ConfigError(f"total={total!r}: the rollout budget must be >= 1")
    m = total / (1 + math.exp(-beta * (h_root - h_tool_mean)))
    return int(min(total, max(1, round(m))))


@dataclass(frozen=True)
class AEPOConfig(BranchRule):
    """The branch rule with the consecutive-branch `penalty`; `per_prompt` (k) trajectories per prompt, split
    between global samples and branches by `aepo_global_samples(..., beta=global_beta)`."""

    penalty: float = 0.5
    per_prompt: int = 16
    global_beta: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.penalty <= 1:
            raise ConfigError(f"AEPOConfig.penalty={self.penalty!r}: must be in [0, 1]")
        if self.per_prompt < 1:
            raise ConfigError(f"AEPOConfig.per_prompt={self.per_prompt!r}: must be >= 1")


def aepo_branch_probability(h_now: float, h_initial: float, *, consecutive: int,
                            config: AEPOConfig = AEPOConfig()) -> float:
    """(α + β·ΔH)·(1 − penalty)^consecutive: the ARPO probability lowered after repeated branching."""
    if consecutive < 0:
        raise ConfigError(f"consecutive={consecutive!r}: the count of consecutive branching steps is >= 0")
    p = branch_probability(h_now, h_initial, alpha=config.alpha, beta=config.beta)
    return p * (1 - config.penalty) ** consecutive


def aepo_branches(h_now: float, h_initial: float, *, consecutive: int, branches_left: int,
                  config: AEPOConfig = AEPOConfig(), rng: random.Random) -> int:
    """Branch `branch_factor` (capped by `branches_left`) when the penalised P_t > τ and u < P_t (seeded)."""
    p = aepo_branch_probability(h_now, h_initial, consecutive=consecutive, config=config)
    if branches_left <= 0 or p <= config.tau or rng.random() >= p:
        return 0
    return min(config.branch_factor, branches_left)




# -- the rollout loop ---------------------------------------------------------------------------------


@dataclass
class _Mark:
    """A fork point: the episode just before the generation that follows a tool observation."""

    state: dict[str, Any]
    token: int  # len(parent ids) here: the branch_token of a branch forked at this point
    segments: int  # the parent's segment count here
    h: float = 0.0  # window entropy of the generation that followed


@dataclass
class _Chain:
    episode: Episode
    loop: AgentLoop
    h0: float | None = None  # window entropy of the root's first generation
    consecutive: int = 0  # l: immediately preceding tool steps of this chain that branched
    fresh: bool = False  # a branch that has not generated since its fork
    inherited: Usage = field(default_factory=Usage)  # the parent's usage copied at the fork
    pending: list[_Mark] = field(default_factory=list)  # fork points recorded, not yet decided (AEPO's probe)


def _spent(chains: Sequence[_Chain]) -> Usage:
    """What the rollout cost: every trajectory's usage minus what a branch inherited from its parent."""
    out = Usage()
    for c in chains:
        for f in fields(Usage):
            setattr(out, f.name, getattr(out, f.name) + getattr(c.episode.trajectory.usage, f.name)
                    - getattr(c.inherited, f.name))
    return out


class BranchingRollout:
    """An engine: `engine`'s episodes with ARPO or AEPO branching (see the module docstring).

    `seed` seeds the decisions (`random.Random(f"{seed}:{example_id}")`) and, when the engine's sampling has
    no seed, the sampling (`seed + 10_000·i` for the i-th trajectory); None leaves both unseeded.
    `window` is k, the tokens whose entropy is averaged; `logprobs` the top alternatives asked for (>= 2).
    """

    def __init__(self, engine: LoopEngine, strategy: Strategy = "arpo", config: ARPOConfig | AEPOConfig | None = None,
                 *, seed: int | None = 0, window: int = 20, logprobs: int = 5):
        if strategy not in ("arpo", "aepo"):
            raise ConfigError(f"strategy={strategy!r}: choose 'arpo' (entropy-triggered branching) or 'aepo' "
                              "(dynamic budget with the consecutive-branch penalty)")
        want = ARPOConfig if strategy == "arpo" else AEPOConfig
        config = want() if config is None else config
        if type(config) is not want:
            raise ConfigError(f"strategy {strategy!r} takes a {want.__name__}, got {type(config).__name__}")
        if not isinstance(logprobs, int) or logprobs < 2:
            raise ConfigError(f"logprobs={logprobs!r}: the entropy needs >= 2 top alternatives per token")
        if not isinstance(window, int) or window < 1:
            raise ConfigError(f"window={window!r}: must be >= 1 (ARPO uses the first 20 tokens)")
        self.engine, self.strategy, self.config, self.seed, self.window = engine, strategy, config, seed, window
        base = engine.loop.sampling
        self.sampling = base.replace(logprobs=max(base.logprobs or 0, logprobs))
        self._seed0 = base.seed if base.seed is not None else seed

    @property
    def name(self) -> str:
        return f"{self.engine.name}+{self.strategy}"

    def _chain(self, chains: list[_Chain], episode: Episode, **kw: Any) -> _Chain:
        loop = copy.copy(self.engine.loop)  # handlers shared; its own sampling seed
        loop.sampling = self.sampling.replace(seed=None if self._seed0 is None else self._seed0 + SEED_STRIDE * len(chains))
        chain = _Chain(episode, loop, **kw)
        chains.append(chain)
        return chain

    async def run(self, example: Mapping[str, Any]) -> Rollout:
        rng = random.Random(f"{self.seed}:{example_id(example)}") if self.seed is not None else random.Random()
        cfg = self.config
        chains: list[_Chain] = []
        log: list[dict[str, Any]] = []
        meta: dict[str, Any] = {}
        if isinstance(cfg, ARPOConfig):
            budget = [Budget(cfg.per_prompt, cfg.initial)]

            def decide(c: _Chain, h: float) -> int:
                n = arpo_branches(h, c.h0 or 0.0, budget=budget[0], config=cfg, rng=rng)
                budget[0] = budget[0].spend(n)
                return n

            for _ in range(cfg.initial):
                self._chain(chains, self.engine.start(example))
            await self._drive(chains, decide, log)
            roots = cfg.initial
        else:
            probe = self._chain(chains, self.engine.start(example))
            await self._drive(chains, None, log)  # entropy pre-monitoring: the first root, fork points recorded
            h_root = probe.h0 or 0.0
            h_tool = sum(m.h for m in probe.pending) / len(probe.pending) if probe.pending else h_root
            roots = aepo_global_samples(h_root, h_tool, total=cfg.per_prompt, beta=cfg.global_beta)
            left = [cfg.per_prompt - roots]

            def decide(c: _Chain, h: float) -> int:
                n = aepo_branches(h, c.h0 or 0.0, consecutive=c.consecutive, branches_left=left[0], config=cfg, rng=rng)
                left[0] -= n
                return n

            for _ in range(roots - 1):
                self._chain(chains, self.engine.start(example))
            pending, probe.pending = probe.pending, []
            for mark in pending:
                self._decide(probe, mark, decide, chains, log)
            await self._drive(chains, decide, log)
            meta = {"h_root": h_root, "h_tool": h_tool, "global_samples": roots}
        trajs = [c.episode.trajectory for c in chains]
        meta = {"strategy": self.strategy, "config": asdict(cfg), "seed": self.seed, "window": self.window,
                "roots": roots, "branches": len(trajs) - roots, "decisions": log, **meta}
        return Rollout(example_id=example_id(example), trajectories=trajs, answer=trajs[0].answer, usage=_spent(chains),
                       engine=self.name, example=dict(example), chosen=0, metadata={"branching": meta})

    async def _drive(self, chains: list[_Chain], decide: Any, log: list[dict[str, Any]]) -> None:
        """Step every live chain one turn at a time until all are done, deciding at each post-tool generation
        (in creation order); with `decide=None` the fork points are only recorded (`chain.pending`)."""
        while live := [c for c in chains if not c.episode.done]:
            marks = [self._mark(c) for c in live]
            await asyncio.gather(*(c.loop.step([c.episode]) for c in live))
            for c, (before, mark) in zip(live, marks):
                new = [s for s in c.episode.trajectory.segments[before:] if s.kind == "model"]
                if not new:
                    continue
                c.fresh = False
                ent = new[0].entropies()
                if ent is None and new[0].token_ids:
                    raise ConfigError(f"engine {self.engine.name!r}: the backend returned no top-k alternatives; "
                                      "branching needs a backend that gives logprobs >= 2 per token")
                h = window_entropy(ent, k=self.window)
                if c.h0 is None:
                    c.h0 = h
                if mark is None:
                    continue
                mark.h = h
                if decide is None:
                    c.pending.append(mark)
                else:
                    self._decide(c, mark, decide, chains, log)

    def _mark(self, c: _Chain) -> tuple[int, _Mark | None]:
        ep = c.episode
        segs = ep.trajectory.segments
        if c.fresh or ep.forced_action or not segs or segs[-1].kind != "observation":
            return len(segs), None
        if ep.ids is None:
            raise ConfigError(f"trajectory {ep.trajectory.id}: branching needs token ids (a backend that returns "
                              "them); this episode runs on text prompts")
        return len(segs), _Mark(copy.deepcopy(ep.to_state()), len(ep.ids), len(segs))

    def _decide(self, c: _Chain, mark: _Mark, decide: Any, chains: list[_Chain], log: list[dict[str, Any]]) -> None:
        from agentic_infer.engines.loop import Episode

        parent = c.episode.trajectory
        n = decide(c, mark.h)
        log.append({"trajectory": parent.id, "token": mark.token, "h": mark.h, "h0": c.h0,
                    "consecutive": c.consecutive, "branches": n})
        if n == 0:
            c.consecutive = 0
            return
        c.consecutive += 1
        for _ in range(n):
            ep = Episode.from_state(mark.state)
            t = ep.trajectory
            t.id, t.parent_id, t.branch_token = uuid.uuid4().hex, parent.id, mark.token
            t.metadata["branch"] = {"parent": parent.id, "token": mark.token, "segment": mark.segments, "h": mark.h}
            self._chain(chains, ep, h0=c.h0, consecutive=c.consecutive, fresh=True, inherited=copy.deepcopy(t.usage))


__all__ = ["AEPOConfig", "ARPOConfig", "BranchRule", "BranchingRollout", "Budget", "Strategy", "aepo_branch_probability",
           "aepo_branches", "aepo_global_samples", "arpo_branches", "branch_probability", "window_entropy"]
