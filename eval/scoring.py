"""Verdicts and result rows of an eval run, read from one example's Rollout.

    names = write_item_verdicts(task, spec, example, rollout)   # verdicts -> rollout.rewards, trajectory rewards
    row = result_row(task, spec, index, example, rollout, names)  # row["metrics"] read back from rollout.rewards

Verdicts are written where every stage reads them (`agentic_infer.verify.write_verdicts`), under each
metric's name: the rollout's answer (sample 0's when the engine ran k samples) into `rollout.rewards` and
the trajectory it came from; each sample's own answer into that sample's trajectory (k samples of a
`Group`: each sample's chosen trajectory; DeepConf: every trace). Item figures that are no verdict on
one trajectory's answer go into `rollout.rewards` only: pass@1, pass@k and maj@k over the samples, and
Search-o1's answer backoff (it scores the direct run's answer when this one is empty). The eval row is
a flat view of the rollout (prediction, metrics, tokens, calls, the output text) for summaries and
reports; the trajectories themselves stay in `rollouts.jsonl` (the row lists their ids).
Env tasks (family "env") are not re-scored from text: the env engine verified each episode against its env
and wrote `success` / `env_reward` into each trajectory's rewards; those are the verdicts (sample 0's go
into `rollout.rewards`), and k samples add tau-bench's pass^j for j = 1..k (C(c, j) / C(k, j), c = successes;
a run's mean over tasks is its pass^j) and pass@k.
Not covered: LLM-judge verdicts (`eval.judging`, a phase after generation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentic_infer.engines.group import Group
from agentic_infer.errors import ConfigError
from agentic_infer.tasks.base import Task
from agentic_infer.types import Rollout, Trajectory
from agentic_infer.verify import (
    Scored,
    backoff,
    cover_exact_match,
    exact_match,
    f1_score,
    score,
    score_all,
    search_o1_answer,
    write_verdicts,
)
from eval.stats import majority, pass_at_k, pass_hat_k

if TYPE_CHECKING:
    from agentic_infer.engines.registry import EngineSpec

OUTPUT_CHARS = 2000  # the tail of the output text kept in a row


def backoff_metrics(text: str, gold: list[str], direct_pred: str | None) -> dict[str, float]:
    """Search-o1's metrics with answer backoff: an empty boxed answer takes the direct run's prediction."""
    pred = backoff(search_o1_answer(text), direct_pred)
    return {"search_o1_em_backoff": exact_match(pred, gold), "search_o1_f1_backoff": f1_score(pred, gold),
            "search_o1_acc_backoff": cover_exact_match(pred, gold) if pred else 0.0}


def _verdicts(task: Task, ex: Mapping[str, Any], answer: str | None, text: str) -> dict[str, float]:
    return score_all(task.metrics, Scored(answer, ex["gold"], text=text, example=ex))


def engine_verdicts(task: Task, traj: Trajectory | None) -> dict[str, float]:
    """An env task's verdicts on one sample: the env engine's, read from its trajectory's rewards."""
    missing = [m for m in task.metrics if traj is None or m not in traj.rewards]
    if missing:
        raise ConfigError(f"task {task.name!r}: the rollout carries no {missing} rewards; env tasks run on the "
                          "env engine, which verifies each episode (--engine env)")
    return {m: float(traj.rewards[m]) for m in task.metrics}  # type: ignore[union-attr]


def _env_item_verdicts(task: Task, rollout: Rollout) -> list[str]:
    samples = [engine_verdicts(task, p.trajectory) for p in Group.split(rollout)]
    write_verdicts(rollout, samples[0])
    extra: dict[str, float] = {}
    if len(samples) > 1:
        k, c = len(samples), sum(v[task.primary] >= 1.0 for v in samples)
        extra = {f"pass^{j}": pass_hat_k(k, c, j) for j in range(1, k + 1)}
        extra[f"pass@{k}"] = float(c > 0)
    rollout.rewards.update(extra)
    return [*samples[0], *extra]


def write_item_verdicts(task: Task, spec: EngineSpec, ex: Mapping[str, Any], rollout: Rollout, *,
                        direct_pred: str | None = None, has_backoff: bool = False) -> list[str]:
    """Score one item and write its verdicts (see the module docstring); returns the metric names written."""
    if task.family == "env":
        return _env_item_verdicts(task, rollout)
    parts = Group.split(rollout)
    first = parts[0]
    answer = _verdicts(task, ex, first.answer, spec.text(first))
    if spec.samples_internally:  # a vote over its own traces (deepconf): each trace is a sample
        samples = [(t, _verdicts(task, ex, t.answer, t.completion_text)) for t in first.trajectories]
        answers = [t.answer for t in first.trajectories]
    else:
        samples = [(p.trajectory, answer if j == 0 else _verdicts(task, ex, p.answer, spec.text(p)))
                   for j, p in enumerate(parts)]
        answers = [p.answer for p in parts]
    for traj, verdicts in samples:
        if traj is not None:
            write_verdicts(traj, verdicts)
    write_verdicts(rollout, answer)
    # item-level figures that are no verdict on this answer alone: rollout.rewards only
    extra = backoff_metrics(spec.text(first), ex["gold"], direct_pred) if has_backoff else {}
    if len(samples) > 1:
        n, c = len(samples), sum(v[task.primary] >= 1.0 for _, v in samples)
        maj = majority(answers)
        extra.update({"pass@1": pass_at_k(n, c, 1), f"pass@{n}": float(c > 0),
                      f"maj@{n}": 0.0 if maj is None else score(task.primary, maj, ex["gold"], text=maj, example=ex)})
    rollout.rewards.update(extra)
    return [*answer, *extra]


def result_row(task: Task, spec: EngineSpec, index: int, ex: Mapping[str, Any], rollout: Rollout,
               names: list[str]) -> dict[str, Any]:
    """The eval row of one item; `metrics` are read from `rollout.rewards` (written by `write_item_verdicts`)."""
    parts = Group.split(rollout)
    first = parts[0]
    chosen = first.trajectory
    row = {
        "id": ex["id"], "index": index, "question": ex.get("user_question", ex["question"]), "gold": ex["gold"],
        "prediction": first.answer, "metrics": {k: rollout.rewards[k] for k in names},
        "completion_tokens": rollout.usage.completion_tokens, "prompt_tokens": rollout.usage.prompt_tokens,
        "tool_calls": sum(spec.tool_calls(p) for p in parts), "search_calls": spec.tool_calls(first),
        "llm_calls": rollout.usage.llm_calls, "wall_s": round(rollout.usage.wall_s, 4),
        "unfinished": bool(chosen is not None and chosen.metadata.get("unfinished")),
        "trajectory_ids": [t.id for t in rollout.trajectories],
        "output": spec.text(first)[-OUTPUT_CHARS:],
    }
    if len(parts) > 1:
        row["predictions"] = [p.answer for p in parts]
    if spec.samples_internally:
        row["predictions"] = [t.answer for t in first.trajectories]
    row.update(spec.report(first))
    return row
