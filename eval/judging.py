"""LLM-judge verdicts of an eval run, written into its rollouts (`Rollout.rewards` and the answer's trajectory)
and read back into its rows after generation: `judge_acc` (and, on SimpleQA, `simpleqa_not_attempted`).

    judge = make_judge("hotpotqa", load_llm("openai://host:8000/v1?model=M"), verdict="json", cache=out / "judge.sqlite")
    paid, changed = await judge_rollouts(rows, rollouts, judge, concurrency=8)   # rows not judged by it

Judging is a phase of its own so that a judge can be added to a finished run (rerun the same command
with `--judge`) or swapped for another (rerun with the other `--judge`: rows record `judged_by`), without
regenerating.
Verdicts go through the judge's SQLite cache in the run directory, so a killed judging phase loses no
verdict it already paid for. The judges and the verdict rule are `agentic_infer`'s, shared with synth and
train: `agentic_infer.engines.judge.make_judge` (`json`: `EquivalenceJudge`, on SimpleQA `SimpleQAGrader`, as
published; `yes-no`: `YesNoEquivalenceJudge`, P(Yes) from one token's logprobs, for small local judges; on
SimpleQA it gives no NOT_ATTEMPTED grade) and `agentic_infer.verify.judge_answers` (an empty prediction is
INCORRECT, SimpleQA: NOT_ATTEMPTED, without a call; all gold aliases in one call). This module keeps only the
run directory's bookkeeping. Check a judge against labelled pairs first: `eval.judge_agreement`.
Not covered: several judges voting on one run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentic_infer.engines.judge import LLMJudge, SimpleQAGrader
from agentic_infer.types import Rollout
from agentic_infer.verify import judge_answers, write_verdicts


def judge_id(judge: Any) -> str:
    """Which judge gave a verdict (kind and model), stored in each judged row as `judged_by`."""
    return f"{type(judge).__name__}:{getattr(judge, 'model', '')}"


async def judge_rollouts(rows: list[dict[str, Any]], rollouts: Mapping[str, Rollout], judge: LLMJudge, *,
                         concurrency: int = 1) -> tuple[int, int]:
    """Judge the rows this judge has not judged yet; returns (rollouts given a verdict, rows changed).

    A verdict is written into the item's rollout (`write_verdicts`: `rollout.rewards` and the trajectory
    its answer came from, under `judge_acc`; on SimpleQA also `simpleqa_not_attempted`), which records
    `metadata["judged_by"]`, and the row's metrics are read back from there. The caller rewrites
    rollouts.jsonl, then results.jsonl: a row whose rollout this judge already judged (a run killed
    between the two rewrites) takes the rollout's verdict without a call. A row without a rollout (a run
    directory from before rollouts.jsonl) is judged into the row alone. A row judged by another judge
    (`judged_by` differs) is judged again, so a run's verdicts always come from the judge of its latest
    command. A row whose judge call fails (after the judge's retries) keeps no judge metric and is judged
    again on the next run; the failure is logged.
    """
    graded = isinstance(judge, SimpleQAGrader)  # SimpleQA's three grades
    names = ("judge_acc", "simpleqa_not_attempted") if graded else ("judge_acc",)
    who = judge_id(judge)
    todo = [r for r in rows if r.get("judged_by") != who]
    fresh = [r for r in todo if not ((ro := rollouts.get(r["id"])) is not None and ro.metadata.get("judged_by") == who)]
    verdicts = await judge_answers(judge, [(r["question"], r.get("prediction"), r["gold"]) for r in fresh],
                                   concurrency=max(1, concurrency), skip_failures=True)
    paid = 0
    for row, v in zip(fresh, verdicts):
        if v is None:  # the call failed: judged again on the next run
            continue
        scores = {"judge_acc": float(v.correct)}
        if graded:
            scores["simpleqa_not_attempted"] = float(v.label == "NOT_ATTEMPTED")
        rollout = rollouts.get(row["id"])
        if rollout is None:
            row["metrics"].update(scores)
            row["judged_by"] = who
            continue
        write_verdicts(rollout, scores)
        rollout.metadata["judged_by"] = who
        paid += 1
    for row in todo:
        rollout = rollouts.get(row["id"])
        if rollout is not None and rollout.metadata.get("judged_by") == who:
            row["metrics"].update({k: rollout.rewards[k] for k in names})
            row["judged_by"] = who
    return paid, sum(1 for r in todo if r.get("judged_by") == who)
