"""The pipeline's judge step: `JudgeStep` writes verify-metric and LLM-judge verdicts into each trajectory's
`rewards`; `check_judge_spec` validates an LLM-judge spec of the YAML config.

Counts (datatrove stats) `total`, `forwarded`, `correct:<name>`, `judge_calls` and `judge_backend_calls`.
Not covered: which records to keep (the `correct` filter of `synth.pipeline.filters` reads these verdicts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory
from synth.pipeline.records import doc_trajectory


class JudgeStep(PipelineStep):
    """Score each trajectory's answer against its example's `gold` with verify metrics (`metrics`, names of
    `agentic_infer.verify.METRICS`: em, f1, the published variants such as search_o1_em, which read the
    completion text), LLM judges from specs (`judge_specs`: `{name, backend, verdict}` mappings, each built in
    the worker with `agentic_infer.engines.judge.make_judge(task, load_llm(backend), verdict=...)`: `json` ->
    `EquivalenceJudge` (SimpleQA: `SimpleQAGrader`), `yes-no` -> `YesNoEquivalenceJudge`; its verdicts are
    cached in `cache_dir/judge-<name>.sqlite3`, so a rerun pays for no verdict twice) and/or ready `judges`
    (any `verify.Judge` object: `MetricJudge`, an LLM judge), which judge by `verify.judge_answers`' rule, as
    eval does (every gold alias in one call; an empty answer without a call). Verdicts (1.0 when the judge's label
    is CORRECT, else 0.0: the value eval and train's rewards give the same verdict, whatever its confidence
    `score`, e.g. P(Yes)) land in `Trajectory.rewards` under each name (`verify.write_verdicts`). Counts `correct:<name>`,
    `judge_calls` (LLM-judge verdicts) and `judge_backend_calls` (those not replayed from the judges' caches).
    LLM judges score `concurrency` records at once."""

    name = "judge"
    type = "⚖️ - JUDGE"

    def __init__(self, *, metrics: Sequence[str] = ("em",), judges: Mapping[str, Any] | None = None,
                 judge_specs: Sequence[Mapping[str, Any]] = (), task: str = "", cache_dir: str | None = None,
                 concurrency: int = 8, make_llm: Callable[[str], Any] | None = None):
        super().__init__()
        from agentic_infer.verify import get_metric

        for m in metrics:
            get_metric(m)
        specs = [check_judge_spec(j) for j in judge_specs]
        if not metrics and not judges and not specs:
            raise ConfigError("judge: no metrics and no judges; give judge.metrics (e.g. [em, f1] or "
                              "[{name: judge_acc, backend: URI, verdict: json}])")
        names = [*metrics, *(judges or {}), *(j["name"] for j in specs)]
        if len(set(names)) != len(names):
            raise ConfigError(f"judge: a verdict name is given twice in {names}; name each judge apart (name: ...)")
        self.metrics, self.judges, self.judge_specs = tuple(metrics), dict(judges or {}), specs
        self.task_name, self.cache_dir, self.concurrency, self.make_llm = task, cache_dir, concurrency, make_llm

    def _llm_judges(self) -> dict[str, Any]:
        """The judges of `judge_specs`, built here (in the worker process, not pickled with the step)."""
        from agentic_infer.backends import load_llm
        from agentic_infer.engines.judge import make_judge

        out = dict(self.judges)
        for spec in self.judge_specs:
            llm = self.make_llm(spec["backend"]) if self.make_llm is not None else load_llm(spec["backend"])
            cache = Path(self.cache_dir) / f"judge-{spec['name']}.sqlite3" if self.cache_dir else None
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
            out[spec["name"]] = make_judge(self.task_name, llm, verdict=spec.get("verdict", "json"), cache=cache)
        return out

    def _verdicts(self, loop: asyncio.AbstractEventLoop | None, judges: Mapping[str, Any],
                  batch: list[Document]) -> Iterator[Document]:
        from agentic_infer.types import Segment
        from agentic_infer.verify import judge_answers, score, write_verdicts

        items = []
        for doc in batch:
            rec = doc.metadata.get("trajectory") if doc.metadata.get("kind") == "trajectory" else None
            if rec is None:
                doc_trajectory(doc)  # raises the ConfigError that names the step order
            ex = rec.get("example") or {}
            gold = ex.get("gold", ex.get("answer"))
            if gold is None:
                raise ConfigError(f"judge: example {ex.get('id')!r} has no 'gold' (nor 'answer') to judge "
                                  "against; read it with a task loader or add the field")
            items.append((rec, ex, gold))

        async def llm_verdicts() -> list[list[float]]:
            asked = [(str(ex.get("question", "")), rec.get("answer"), gold) for rec, ex, gold in items]
            per_judge = await asyncio.gather(*(judge_answers(j, asked, concurrency=self.concurrency)
                                               for j in judges.values()))
            return [[float(v.correct) for v in row] for row in zip(*per_judge)]  # eval's and train's rule

        scored = loop.run_until_complete(llm_verdicts()) if judges else [[] for _ in items]
        for doc, (rec, ex, gold), llm_scores in zip(batch, items, scored):
            # the completion text (variant metrics extract from it), without decoding the whole record
            segments = [Segment(s["kind"], s["text"]) for s in rec.get("segments") or ()]
            text = Trajectory(segments=segments).completion_text
            verdicts = {m: score(m, rec.get("answer"), gold, text=text, example=ex) for m in self.metrics}
            verdicts.update(zip(judges, llm_scores))
            # only the rewards change: update them in the record, without a round trip through Trajectory
            rec["rewards"] = write_verdicts(Trajectory(rewards=dict(rec.get("rewards") or {})), verdicts)
            for name, v in verdicts.items():
                if v >= 1.0:
                    self.stat_update(f"correct:{name}")
            self.stat_update("judge_calls", value=len(llm_scores))
            self.stat_update("forwarded")
            yield doc

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        judges = self._llm_judges()
        loop = asyncio.new_event_loop() if judges else None
        size = self.concurrency if judges else 1
        batch: list[Document] = []
        try:
            for doc in data or ():
                self.stat_update("total")
                batch.append(doc)
                if len(batch) >= size:
                    with self.track_time():
                        out = list(self._verdicts(loop, judges, batch))
                    yield from out
                    batch = []
            if batch:
                with self.track_time():
                    out = list(self._verdicts(loop, judges, batch))
                yield from out
        finally:
            if loop is not None:
                built = [j for name, j in judges.items() if name not in self.judges]
                self.stat_update("judge_backend_calls", value=sum(getattr(j, "calls", 0) for j in built))
                for j in built:
                    close = getattr(getattr(j, "llm", None), "aclose", None)
                    if close is not None:
                        loop.run_until_complete(close())
                loop.close()


JUDGE_SPEC_KEYS = ("name", "backend", "verdict")


def check_judge_spec(spec: Any) -> dict[str, Any]:
    """An LLM-judge spec `{name, backend: URI, verdict: json|yes-no}`, checked (a ConfigError names the key)."""
    from agentic_infer.engines.judge import check_verdict

    if not isinstance(spec, Mapping) or not spec.get("backend"):
        raise ConfigError(f"judge.metrics entry {spec!r}: a metric name or {{name: NAME, backend: URI, "
                          "verdict: json|yes-no}")
    bad = sorted(set(spec) - set(JUDGE_SPEC_KEYS))
    if bad:
        raise ConfigError(f"judge.metrics entry {dict(spec)!r}: unknown key(s) {bad}; a judge takes "
                          f"{list(JUDGE_SPEC_KEYS)}")
    if "://" not in str(spec["backend"]):
        raise ConfigError(f"judge backend={spec['backend']!r}: not a backend URI; e.g. openai://HOST:PORT/v1?model=M, "
                          "llamacpp://default, fake://?reply=...")
    verdict = check_verdict(spec.get("verdict", "json"))  # json | yes-no (the old `yesno`: an error naming it)
    return {"name": str(spec.get("name") or "judge_acc"), "backend": str(spec["backend"]), "verdict": verdict}


__all__ = ["JUDGE_SPEC_KEYS", "JudgeStep", "check_judge_spec"]
