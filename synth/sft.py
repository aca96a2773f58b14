"""Cold-start SFT data by rejection sampling: k samples per question, keep the judged-correct, best first.

    engine = Group.seeded(lambda s: SearchO1(llm, index, sampling=DEFAULT_SAMPLING.replace(seed=s)), k=8)
    result = asyncio.run(rejection_sample(engine, examples, metric="em", per_question=1))
    write_demos(out, result)   # trajectories.jsonl + stats.json, then `agentic synth export`

`rejection_sample` runs any engine (the engine registry's `agentic_infer.engines.registry.build_engine` gives a `Group` of
k seeded samples when `samples > 1`) through the shared runner (`run_many`), splits each group into
its samples (`Group.split`), writes each sample's verdict with the one scorer (`agentic_infer.verify`:
`score(metric, sample.answer, gold, text=...)` into `rewards`, so any registered metric, e.g. `search_o1_em`,
works), and `select_sft` keeps per question the
`per_question` correct, finished samples with the highest confidence (mean sampling logprob of the
model tokens; samples without logprobs rank last). Correctness and finish use the pipeline's filters
(`synth.pipeline.filters.correct`, `finished`), so a reason string is recorded for every drop.
Not covered: LLM judges (pass pre-judged trajectories to `select_sft`), resuming a killed run (use
`agentic synth rollouts`, which caches LLM requests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from agentic_infer.engines.group import Group
from agentic_infer.runner import run_many
from agentic_infer.types import Trajectory
from agentic_infer.verify import score, write_verdicts
from synth.demos.build import DemoResult
from synth.pipeline.filters import correct, finished


def mean_logprob(traj: Trajectory) -> float | None:
    """Mean sampling logprob over the model tokens (None when the backend gave none)."""
    lps = [lp.logprob for s in traj.segments if s.kind == "model" for lp in (s.logprobs or ())]
    return sum(lps) / len(lps) if lps else None


def select_sft(groups: Sequence[Sequence[Trajectory]], *, metric: str = "em", threshold: float = 1.0,
               per_question: int = 1) -> tuple[list[Trajectory], list[tuple[Trajectory, str]]]:
    """(kept, dropped with reasons): per group the `per_question` most confident correct, finished samples."""
    kept: list[Trajectory] = []
    dropped: list[tuple[Trajectory, str]] = []
    for group in groups:
        ok = []
        for t in group:
            verdict = correct(t, metric=metric, threshold=threshold)
            done = finished(t)
            if verdict is not True:
                dropped.append((t, verdict[1]))
            elif done is not True:
                dropped.append((t, done[1]))
            else:
                ok.append(t)
        ok.sort(key=lambda t: (mean_logprob(t) is not None, mean_logprob(t) or 0.0), reverse=True)
        for rank, t in enumerate(ok):
            t.metadata["sft_rank"] = rank
            t.metadata["confidence"] = mean_logprob(t)
            t.metadata["lineage"] = {"source": t.group_id, "engine": t.engine, "operator": "rejection_sampling",
                                     "parents": [], "filter": f"{metric} >= {threshold}, finished, rank {rank}"}
            (kept.append(t) if rank < per_question else dropped.append((t, "not_most_confident")))
    return kept, dropped


def judge_samples(rollout: Any, gold: Sequence[str], *, metrics: Sequence[str] = ("em", "f1", "cover_em")
                  ) -> list[Trajectory]:
    """The chosen trajectory of each sample of a (group) rollout, with its verdicts in `rewards`."""
    out = []
    for sample in Group.split(rollout):
        t = sample.trajectory
        if t is None:
            continue
        write_verdicts(t, {m: score(m, sample.answer, list(gold), text=t.completion_text) for m in metrics})
        t.group_id = rollout.example_id
        out.append(t)
    return out


async def rejection_sample(engine: Any, examples: Sequence[Mapping[str, Any]], *, metric: str = "em",
                           per_question: int = 1, concurrency: int = 4, out: str | None = None) -> DemoResult:
    """Run, judge and select (see module docstring); `result.stats` counts samples, kept and drops by reason."""
    rollouts = await run_many(engine, examples, concurrency=concurrency, out=out, progress=False)
    groups = [judge_samples(r, ex.get("gold") or [ex.get("answer", "")]) for r, ex in zip(rollouts, examples)
              if r is not None]
    kept, dropped = select_sft(groups, metric=metric, per_question=per_question)
    reasons = Counter(reason for _, reason in dropped)
    stats = {"step": "rejection_sampling", "questions": len(examples), "samples": sum(map(len, groups)),
             "kept": len(kept), "questions_with_sft": len({t.group_id for t in kept}), "dropped": dict(reasons),
             "metric": metric, "per_question": per_question, "engine": getattr(engine, "name", None)}
    return DemoResult(trajectories=kept, stats=stats)
