"""SE-Agent trajectory evolution at a fixed generation budget B per item, against best-of-B sampling.

    result = await evolve(example, make_engine, verify, budget=8, pool=4)   # EvolveResult(solved, attempts, ...)
    result = await best_of(example, make_engine, verify, budget=8)          # the baseline at the same budget

`make_engine(seed)` builds one attempt's engine (any engine: one generation for Game of 24's CoT, a Search-o1
episode for multi-hop); `verify(example, trajectory) -> float` is the exact check (1.0 solved). SE-Agent first
samples a pool of `pool` attempts, then, until the budget is spent or an attempt is solved, applies the operators
in turn (`operators.py`: revision of the latest failed attempt, recombination of the two latest, refinement of the
best with diversity) over the pool (the `pool` best with diversity) and runs a new attempt conditioned on the
guidance (`example["guidance"]`). Every attempt is a really executed trajectory whose `metadata["lineage"]` holds
its operator, its parents' ids and the guidance; its verdict is in `rewards["verdict"]`. With `analyst=` (the
optional LLM summariser, `analyst.py`) each failed attempt also gets an LLM's analysis (`metadata["analysis"]`, and
on its summary, where the operators quote it); those generations are counted in `EvolveResult.analyses`, not in B. An attempt is one engine
run, so B counts generations exactly for single-call engines (and episodes for agent loops); best-of-B runs B
independent seeded attempts and stops at the first solved one, as SE-Agent does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory
from synth.evolve.operators import OPERATORS, recombination, refinement, revision
from synth.evolve.summary import AttemptSummary, summarize

Verify = Callable[[Mapping[str, Any], Trajectory], float]
Analyst = Callable[[Mapping[str, Any], Trajectory, AttemptSummary], Awaitable[str]]


@dataclass
class EvolveResult:
    example_id: str
    solved: bool
    attempts: list[Trajectory] = field(default_factory=list)
    summaries: list[AttemptSummary] = field(default_factory=list)
    analyses: int = 0  # generations the LLM summariser made (outside the budget)

    @property
    def used(self) -> int:
        return len(self.attempts)


async def _attempt(example: Mapping[str, Any], make_engine: Callable[[int], Any], verify: Verify, seed: int, *,
                   operator: str, parents: list[str], guidance: str | None, tools_expected: bool,
                   analyst: Analyst | None = None) -> tuple[Trajectory, AttemptSummary]:
    ex = dict(example) if guidance is None else {**example, "guidance": guidance}
    rollout = await make_engine(seed).run(ex)
    traj = rollout.trajectory or rollout.trajectories[0]
    traj.answer = rollout.answer if traj.answer is None else traj.answer
    verdict = float(verify(example, traj))
    traj.rewards["verdict"] = verdict
    traj.metadata["lineage"] = {"source": example.get("id"), "engine": traj.engine, "operator": operator,
                                "parents": parents, "guidance": guidance, "seed": seed}
    summary = summarize(traj, verdict=verdict, tools_expected=tools_expected)
    if analyst is not None and verdict < 1.0:
        summary.analysis = traj.metadata["analysis"] = await analyst(example, traj, summary)
    return traj, summary


def _check(budget: int, pool: int) -> None:
    if budget < 1 or pool < 1:
        raise ConfigError(f"budget={budget}, pool={pool}: both must be >= 1 (attempts per item)")


async def best_of(example: Mapping[str, Any], make_engine: Callable[[int], Any], verify: Verify, *, budget: int,
                  seed: int = 0, tools_expected: bool = False) -> EvolveResult:
    """Up to `budget` independent seeded attempts, stopping at the first solved one."""
    _check(budget, 1)
    out = EvolveResult(str(example.get("id")), False)
    for i in range(budget):
        traj, s = await _attempt(example, make_engine, verify, seed + i, operator="sample", parents=[], guidance=None,
                                 tools_expected=tools_expected)
        out.attempts.append(traj)
        out.summaries.append(s)
        if s.verdict >= 1.0:
            out.solved = True
            break
    return out


async def evolve(example: Mapping[str, Any], make_engine: Callable[[int], Any], verify: Verify, *, budget: int,
                 pool: int = 4, seed: int = 0, tools_expected: bool = False, analyst: Analyst | None = None
                 ) -> EvolveResult:
    """SE-Agent on one item within `budget` attempts (module docstring)."""
    _check(budget, pool)
    out = EvolveResult(str(example.get("id")), False)
    turn = 0
    while out.used < budget and not out.solved:
        operator, parents, guidance = "sample", [], None
        if out.used >= pool:
            kept, refine_guidance = refinement(out.summaries, pool)
            operator = OPERATORS[turn % len(OPERATORS)]
            turn += 1
            order = {id(s): i for i, s in enumerate(out.summaries)}
            latest = sorted(kept, key=lambda s: order[id(s)], reverse=True)
            if operator == "revision":
                failed = next(s for s in latest if s.verdict < 1.0)
                parents, guidance = [failed.id], revision(failed)
            elif operator == "recombination" and len(latest) >= 2:
                parents, guidance = [latest[0].id, latest[1].id], recombination(latest[0], latest[1])
            else:
                operator, parents, guidance = "refinement", [kept[0].id], refine_guidance
        traj, s = await _attempt(example, make_engine, verify, seed + out.used, operator=operator, parents=parents,
                                 guidance=guidance, tools_expected=tools_expected, analyst=analyst)
        out.attempts.append(traj)
        out.summaries.append(s)
        out.analyses += s.analysis is not None
        out.solved = s.verdict >= 1.0
    return out
