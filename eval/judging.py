"""LLM-judge verdicts of an eval run, written into its rollouts (`Rollout.rewards` and the answer's trajectory)
and read back into its rows after generation: `judge_acc` (and, on SimpleQA, `simpleqa_not_attempted`).

    judge = make_judge("hotpotqa", load_llm("openai://host:8000/v1?model=M"), verdict="json", cache=out / "judge.sqlite")
    paid, changed = await judge_rollouts(rows, rollouts, judge, concurrency=8)   # rows not judged by it

Judging is a phase of its own so that a judge can be added to a finished run (rerun the same command
with `--judge`) or swapped for another (rerun with the other `--judge`: rows record `judged_by`), without
regenerating.
Verdicts go through the judge's SQLite cache in the run directory, so a killed judging phase loses no
verdict it already paid for. An empty prediction is judged INCORRECT (SimpleQA: NOT_ATTEMPTED) without a
call. Verdict formats: `json` (`EquivalenceJudge`; SimpleQA: `SimpleQAGrader`, as published) and `yes-no`
(`YesNoEquivalenceJudge`, P(Yes) from one token's logprobs, for small local judges; on SimpleQA it
gives no NOT_ATTEMPTED grade). Check a judge against labelled pairs first: `eval.judge_agreement`.
Not covered: several judges voting on one run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentic_infer.engines.judge import EquivalenceJudge, LLMJudge, SimpleQAGrader, YesNoEquivalenceJudge
from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import Rollout
from agentic_infer.verify import write_verdicts

log = logging.getLogger(__name__)
VERDICTS = ("json", "yes-no")


def check_verdict(verdict: str) -> None:
    if verdict not in VERDICTS:
        raise ConfigError(f"--judge-verdict {verdict!r}: choose one of {', '.join(VERDICTS)}")


def make_judge(task: str, llm: Any, *, verdict: str = "json", cache: str | Path | None = None) -> LLMJudge:
    """The judge an eval run uses for `task` with the given verdict format."""
    check_verdict(verdict)
    if verdict == "yes-no":
        return YesNoEquivalenceJudge(llm, cache=cache)
    return (SimpleQAGrader if task == "simpleqa" else EquivalenceJudge)(llm, cache=cache)


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
    sem = asyncio.Semaphore(max(1, concurrency))
    who = judge_id(judge)
    todo = [r for r in rows if r.get("judged_by") != who]

    async def one(row: dict[str, Any]) -> int:
        rollout = rollouts.get(row["id"])
        judged = rollout is not None and rollout.metadata.get("judged_by") == who
        if not judged:
            pred = row.get("prediction")
            if not pred:
                label = "NOT_ATTEMPTED" if graded else "INCORRECT"
            else:
                async with sem:
                    try:
                        v = await judge.score(row["question"], pred, " | ".join(map(str, row["gold"])))
                    except AgenticError as e:
                        log.warning("judge failed on %s (%s); judged again on the next run", row["id"], e)
                        return 0
                label = v.label
            verdicts = {"judge_acc": float(label == "CORRECT")}
            if graded:
                verdicts["simpleqa_not_attempted"] = float(label == "NOT_ATTEMPTED")
            if rollout is None:
                row["metrics"].update(verdicts)
                row["judged_by"] = who
                return 0
            write_verdicts(rollout, verdicts)
            rollout.metadata["judged_by"] = who
        row["metrics"].update({k: rollout.rewards[k] for k in names})
        row["judged_by"] = who
        return 0 if judged else 1

    paid = await asyncio.gather(*(one(r) for r in todo))
    return sum(paid), sum(1 for r in todo if r.get("judged_by") == who)
