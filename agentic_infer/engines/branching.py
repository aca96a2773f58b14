"""ARPO / AEPO branched rollouts: the seeded branching decisions and the loop that runs the branches.

    engine = BranchingRollout(TIR(llm, sandbox), "arpo", ARPOConfig(per_prompt=16, initial=8), seed=0)
    rollout = await engine.run({"question": "..."})   # roots and branches, one Rollout (the group)

Decisions (pure; the rng is passed in), also exported by `train.core.branching`:

    h0 = window_entropy(first.entropies(), k=20, top_k=10)   # H_initial: the chain's first generation
    h = window_entropy(seg.entropies(), k=20, top_k=10)      # the generation right after a tool result
    n = arpo_branches(h, h0, budget=Budget(16, used), config=ARPOConfig(), rng=random.Random(seed))
    m = aepo_global_samples(h_root, h_tool_mean, total=16, beta=0.5)   # AEPO: global samples of the 16
    n = aepo_branches(h, h0, consecutive=l, branches_left=16 - used, config=AEPOConfig(), rng=rng)

Entropy: per token, the Shannon entropy of its top-k alternatives renormalised (`Segment.entropies()`), averaged
over the first k = 20 tokens and divided by log(top_k), top_k the alternatives asked for (10, as the reference):
values in [0, 1]. The rule: P_t = clip((a + β·ΔH)·f, 0, 1) with ΔH = h − h0 (β = 0.2); f = 1 for ARPO and
AEPO's consecutive-branch penalty f = max(0, 1 − 0.05·l) after l consecutive forking turns. Each of the
`branch_factor` copies (Z = the reference's beam_size − 1 = 1) that the budget allows is decided by the `rule`:
- "sampled" (default; the released code of both): a = u ~ U(0,1), one draw per copy, branch when P_t >= τ
  (τ = 0.5): with probability clip(1 − τ/f + β·ΔH, 0, 1), so also when the entropy fell (ΔH <= 0).
- "threshold" (the paper's reading of ARPO): a = `alpha` (required; α = τ reduces it to ΔH > 0, where β no
  longer matters), all Z copies branch when P_t > τ.

Where the reference code differs (RUC-NLPIR/ARPO, `ARPO/verl_arpo_entropy/...` and `AEPO/verl_aepo_entropy/...`
`verl/workers/rollout/vllm_rollout/vllm_rollout_with_tools.py`):
- ARPO's code draws the other way round (branch when u − β·ΔH <= τ, P = τ + β·ΔH): the same distribution at its
  shipped τ = 0.5; ours keeps the paper's and AEPO's sense of τ (a higher τ branches less) for both.
- It sums −p·log p over the raw top-10 logprobs of the 20 tokens and divides by log |V| (a scale that grows
  with the window); ours is the per-token mean over log(top_k), with the reference's β and τ.
- It measures ΔH on the generation that issued the tool call, one turn late, and keys H_initial by trajectory
  slot (a branch compares with its own first generation; stale across batches) [bug]: ours measures the
  generation after the tool result (the paper) against the root's first generation.
- AEPO's l is per prompt (`consecutive_branches`): the turns in a row in which the group forked; a turn without
  a fork resets it (the code skips that update in a batch where nothing forked at all).
- AEPO's budget: m = ⌊k·σ(β·(H_root − H̄_tool))⌋ + 1 in [1, k], β = 0.5, H̄_tool the mean over ALL the probe's
  generations, the first included (`_calculate_initial_rollouts_dynamical`; the released scripts switch it off).

The loop (`BranchingRollout`, any `LoopEngine`: Search-o1, TIR, the env agent) drives the engine's episodes turn
by turn. Before a generation that follows a tool observation it snapshots the episode (`Episode.to_state`, and
its env with `Env.fork`: a branch acts on its own copy of the env as it was at the fork); after
it, `h` is that generation's window entropy, `h0` the one of the chain's root's first generation, and the
decision function says how many branches to fork there. A branch is the snapshot restored
(`Episode.from_state`), so it resamples from right after the tool result: a new trajectory id, `parent_id`,
`branch_token` = the length of the parent's token ids at the fork (prompt included), and its FULL sequence
(the parent's first `branch_token` ids, then its own), which `train.core.advantages.arpo` attributes over.
A branch does not decide again at its own fork point (that decision made it). Every chain samples with its
own seed (`seed + 10_000·i` for the i-th trajectory, plus the loop's per-turn offset). Each finished episode
goes through the engine's `rollout` (the env agent writes its verdict there: `env_reward`, `success`).

Each turn, the fork points are decided in trajectory creation order, spending the shared per-prompt budget.
ARPO: `initial` (N = 8) roots of `per_prompt` (M = 16) run together. AEPO: a first root runs alone to the end
(entropy pre-monitoring: H_root = its first generation, H̄_tool = the mean over its generations); then
m = aepo_global_samples(...) roots in all (the first included) and k − m branches; the first root's recorded
fork points are decided at their own turn (before that turn's live ones), the rest live.
`rollout.metadata["branching"]` lists every decision (trajectory, turn, token, h, h0, l, branches).
Not covered: branching inside a tool-free generation (ARPO branches only after tool calls), backends
without top-k logprobs (ConfigError), branches of text-prompt (inexact) episodes (ConfigError).
"""

from __future__ import annotations

import asyncio
import copy
import math
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, cast

from agentic_infer.engines.base import example_id
from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Usage

if TYPE_CHECKING:
    from agentic_infer.engines.base import LoopEngine
    from agentic_infer.engines.loop import AgentLoop, Episode

Strategy = Literal["arpo", "aepo"]
Rule = Literal["sampled", "threshold"]
SEED_STRIDE = 10_000  # sampling seeds of successive trajectories (the loop adds the turn number)


def window_entropy(entropies: Sequence[float] | None, *, k: int = 20, top_k: int) -> float:
    """Mean entropy of the first `k` tokens divided by log(top_k), the alternatives per token asked for
    (0.0 for none): 0 for a sure token, 1 for `top_k` equally likely ones."""
    if k < 1:
        raise ConfigError(f"k={k!r}: must be >= 1 (ARPO uses the first 20 tokens)")
    if top_k < 2:
        raise ConfigError(f"top_k={top_k!r}: normalising needs >= 2 alternatives per token")
    vals = list(entropies or ())[:k]
    return sum(vals) / len(vals) / math.log(top_k) if vals else 0.0


@dataclass(frozen=True)
class BranchRule:
    """P_t = clip((a + β·ΔH)·f, 0, 1): a = u ~ U(0,1) per copy, branch when P_t >= τ ("sampled"), or a = α, branch
    all `branch_factor` copies when P_t > τ ("threshold"); see the module docstring."""

    beta: float = 0.2
    tau: float = 0.5
    branch_factor: int = 1
    rule: Rule = "sampled"
    alpha: float | None = None

    def __post_init__(self) -> None:
        name = type(self).__name__
        if self.rule not in ("sampled", "threshold"):
            raise ConfigError(f"{name}.rule={self.rule!r}: choose 'sampled' (the reference code) or 'threshold'")
        if self.branch_factor < 1:
            raise ConfigError(f"{name}.branch_factor={self.branch_factor!r}: must be >= 1")
        if not 0 <= self.tau <= 1:
            raise ConfigError(f"{name}.tau={self.tau!r}: τ, the bar for P_t in [0, 1], must be in [0, 1]")
        if self.rule == "threshold" and self.alpha is None:
            raise ConfigError(f"{name}(rule='threshold') needs alpha: it branches when α + β·ΔH > τ "
                              "(α = τ reduces it to ΔH > 0)")
        if self.rule == "sampled" and self.alpha is not None:
            raise ConfigError(f"{name}.alpha={self.alpha!r}: the sampled rule (the default) draws u ~ U(0,1) in "
                              "place of α; drop alpha, or set rule='threshold' for the paper's fixed α")


@dataclass(frozen=True)
class ARPOConfig(BranchRule):
    """The rule with the budget: `per_prompt` (M) trajectories per prompt, `initial` (N) of them roots."""

    per_prompt: int = 16
    initial: int = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.initial <= self.per_prompt:
            raise ConfigError(f"ARPOConfig.initial={self.initial!r}: must be in 1..per_prompt ({self.per_prompt})")


@dataclass(frozen=True)
class AEPOConfig(BranchRule):
    """The rule with the consecutive-branch `penalty` (f = max(0, 1 − penalty·l)); `per_prompt` (k) trajectories
    per prompt, split between global samples and branches by `aepo_global_samples(..., beta=global_beta)`."""

    penalty: float = 0.05
    per_prompt: int = 16
    global_beta: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.penalty <= 1:
            raise ConfigError(f"AEPOConfig.penalty={self.penalty!r}: must be in [0, 1] (the reference's is 0.05)")
        if self.per_prompt < 1:
            raise ConfigError(f"AEPOConfig.per_prompt={self.per_prompt!r}: must be >= 1")


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


def branch_score(h_now: float, h_initial: float, *, base: float, beta: float, factor: float = 1.0) -> float:
    """P_t = clip((base + β·(H_now − H_initial))·factor, 0, 1); `base` is α or the draw u."""
    return min(1.0, max(0.0, (base + beta * (h_now - h_initial)) * factor))


def consecutive_penalty(consecutive: int, *, penalty: float) -> float:
    """AEPO's factor max(0, 1 − penalty·l) after l consecutive turns that forked."""
    if consecutive < 0:
        raise ConfigError(f"consecutive={consecutive!r}: the count of consecutive branching turns is >= 0")
    return max(0.0, 1.0 - penalty * consecutive)


def _branches(h_now: float, h_initial: float, rule: BranchRule, *, copies: int, factor: float,
              rng: random.Random | None) -> int:
    """How many of `copies` branch: one draw each ("sampled"), or all or none ("threshold")."""
    if rule.rule == "threshold":
        p = branch_score(h_now, h_initial, base=cast(float, rule.alpha), beta=rule.beta, factor=factor)
        return copies if copies > 0 and p > rule.tau else 0
    if rng is None:
        raise ConfigError(f"{type(rule).__name__}(rule='sampled') needs rng=random.Random(seed): each copy draws u")
    return sum(branch_score(h_now, h_initial, base=rng.random(), beta=rule.beta, factor=factor) >= rule.tau
               for _ in range(copies))


def arpo_branches(h_now: float, h_initial: float, *, budget: Budget, config: ARPOConfig = ARPOConfig(),
                  rng: random.Random | None = None) -> int:
    """How many partial rollouts to fork at this step: of min(Z, `budget.left`) copies, those the rule branches."""
    return _branches(h_now, h_initial, config, copies=min(config.branch_factor, budget.left), factor=1.0, rng=rng)


def aepo_branches(h_now: float, h_initial: float, *, consecutive: int, branches_left: int,
                  config: AEPOConfig = AEPOConfig(), rng: random.Random | None = None) -> int:
    """As `arpo_branches`, P_t lowered by the consecutive-branch penalty after `consecutive` (l) forking turns."""
    factor = consecutive_penalty(consecutive, penalty=config.penalty)
    return _branches(h_now, h_initial, config, copies=min(config.branch_factor, max(0, branches_left)),
                     factor=factor, rng=rng)


def aepo_global_samples(h_root: float, h_tool_mean: float, *, total: int, beta: float) -> int:
    """m = ⌊k·σ(β·(H_root − H̄_tool))⌋ + 1, at most k (the reference's rounding; AEPO's β = 0.5); the other k − m
    go to branches."""
    if total < 1:
        raise ConfigError(f"total={total!r}: the rollout budget must be >= 1")
    x = beta * (h_root - h_tool_mean)
    sigma = 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))
    return min(total, int(total * sigma) + 1)


# -- the rollout loop ---------------------------------------------------------------------------------


@dataclass
class _Mark:
    """A fork point: the episode just before the generation that follows a tool observation."""

    state: dict[str, Any]
    env: Any  # the episode's env forked here (`Env.fork`), None without one; each branch forks it again
    token: int  # len(parent ids) here: the branch_token of a branch forked at this point
    segments: int  # the parent's segment count here
    turn: int  # the loop turn of the generation that follows
    h: float = 0.0  # window entropy of that generation


@dataclass
class _Chain:
    episode: Episode
    loop: AgentLoop
    h0: float | None = None  # window entropy of the root's first generation
    fresh: bool = False  # a branch that has not generated since its fork
    inherited: Usage = field(default_factory=Usage)  # the parent's usage copied at the fork
    hs: list[float] = field(default_factory=list)  # window entropy of each of its generations (AEPO's probe)
    pending: list[_Mark] = field(default_factory=list)  # fork points recorded, not yet decided (AEPO's probe)


Decide = Callable[[_Chain, float, int], int]  # (chain, h, l: the turns in a row that forked) -> branches


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
    `window` is k, the tokens whose entropy is averaged; `logprobs` the top alternatives asked for (>= 2), which
    also normalise the entropy (log of it).
    """

    def __init__(self, engine: LoopEngine, strategy: Strategy = "arpo", config: ARPOConfig | AEPOConfig | None = None,
                 *, seed: int | None = 0, window: int = 20, logprobs: int = 10):
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
        self.top_k = self.sampling.logprobs  # the alternatives asked for: entropies are divided by log(top_k)
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

            def decide(c: _Chain, h: float, streak: int) -> int:
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
            h_root = probe.hs[0] if probe.hs else 0.0
            h_tool = sum(probe.hs) / len(probe.hs) if probe.hs else h_root
            roots = aepo_global_samples(h_root, h_tool, total=cfg.per_prompt, beta=cfg.global_beta)
            left = [cfg.per_prompt - roots]

            def decide(c: _Chain, h: float, streak: int) -> int:
                n = aepo_branches(h, c.h0 or 0.0, consecutive=streak, branches_left=left[0], config=cfg, rng=rng)
                left[0] -= n
                return n

            for _ in range(roots - 1):
                self._chain(chains, self.engine.start(example))
            pending, probe.pending = probe.pending, []
            await self._drive(chains, decide, log, pending=[(probe, m) for m in pending])
            meta = {"h_root": h_root, "h_tool": h_tool, "global_samples": roots}
        trajs = [self.engine.rollout(c.episode).trajectories[0] for c in chains]  # the engine's finish (env verdicts)
        meta = {"strategy": self.strategy, "config": asdict(cfg), "seed": self.seed, "window": self.window,
                "top_k": self.top_k, "roots": roots, "branches": len(trajs) - roots, "decisions": log, **meta}
        return Rollout(example_id=example_id(example), trajectories=trajs, answer=trajs[0].answer, usage=_spent(chains),
                       engine=self.name, example=dict(example), chosen=0, metadata={"branching": meta})

    async def _drive(self, chains: list[_Chain], decide: Decide | None, log: list[dict[str, Any]],
                     pending: Sequence[tuple[_Chain, _Mark]] = ()) -> None:
        """Step every live chain one turn at a time until all are done; after each turn decide its fork points in
        creation order (`pending` ones of that turn first), all with the group's l (the turns in a row that
        forked); with `decide=None` the fork points are only recorded (`chain.pending`)."""
        waiting, turn, streak = list(pending), 0, 0
        while (live := [c for c in chains if not c.episode.done]) or waiting:
            turn += 1
            marks = [self._mark(c, turn) for c in live]
            await asyncio.gather(*(c.loop.step([c.episode]) for c in live))
            due = [(c, m) for c, m in waiting if m.turn == turn]
            waiting = [(c, m) for c, m in waiting if m.turn != turn]
            for c, (before, mark) in zip(live, marks):
                h = self._measure(c, before)
                if h is None or mark is None:
                    continue
                mark.h = h
                if decide is None:
                    c.pending.append(mark)
                else:
                    due.append((c, mark))
            if decide is not None:
                forked = [self._decide(c, m, decide, streak, chains, log) for c, m in due]
                streak = streak + 1 if any(forked) else 0

    def _measure(self, c: _Chain, before: int) -> float | None:
        """The window entropy of the generation this turn added to `c` (None when it generated nothing)."""
        new = [s for s in c.episode.trajectory.segments[before:] if s.kind == "model"]
        if not new:
            return None
        c.fresh = False
        ent = new[0].entropies()
        if ent is None and new[0].token_ids:
            raise ConfigError(f"engine {self.engine.name!r}: the backend returned no top-k alternatives; "
                              "branching needs a backend that gives logprobs >= 2 per token")
        h = window_entropy(ent, k=self.window, top_k=self.top_k)
        c.hs.append(h)
        if c.h0 is None:
            c.h0 = h
        return h

    def _mark(self, c: _Chain, turn: int) -> tuple[int, _Mark | None]:
        ep = c.episode
        segs = ep.trajectory.segments
        if c.fresh or ep.forced_action or not segs or segs[-1].kind != "observation":
            return len(segs), None
        if ep.ids is None:
            raise ConfigError(f"trajectory {ep.trajectory.id}: branching needs token ids (a backend that returns "
                              "them); this episode runs on text prompts")
        env = ep.env.fork() if ep.env is not None else None
        return len(segs), _Mark(copy.deepcopy(ep.to_state()), env, len(ep.ids), len(segs), turn)

    def _decide(self, c: _Chain, mark: _Mark, decide: Decide, streak: int, chains: list[_Chain],
                log: list[dict[str, Any]]) -> int:
        from agentic_infer.engines.loop import Episode

        parent = c.episode.trajectory
        n = decide(c, mark.h, streak)
        log.append({"trajectory": parent.id, "turn": mark.turn, "token": mark.token, "h": mark.h, "h0": c.h0,
                    "consecutive": streak, "branches": n})
        for _ in range(n):
            ep = Episode.from_state(mark.state)
            ep.env = mark.env.fork() if mark.env is not None else None
            t = ep.trajectory
            t.id, t.parent_id, t.branch_token = uuid.uuid4().hex, parent.id, mark.token
            t.metadata["branch"] = {"parent": parent.id, "token": mark.token, "segment": mark.segments, "h": mark.h}
            self._chain(chains, ep, h0=c.h0, fresh=True, inherited=copy.deepcopy(t.usage))
        return n


__all__ = ["AEPOConfig", "ARPOConfig", "BranchRule", "BranchingRollout", "Budget", "Rule", "Strategy", "aepo_branches",
           "aepo_global_samples", "arpo_branches", "branch_score", "consecutive_penalty", "window_entropy"]
