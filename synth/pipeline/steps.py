"""The pipeline's datatrove `PipelineStep`s: readers, `RolloutStep`, `JudgeStep`, `FilterStep`, writers.

Each step is an ordinary datatrove step (`run(data, rank, world_size)` over a generator of `Document`s), so
a list of them runs on `LocalPipelineExecutor` here and on datatrove's Slurm / Ray executors unchanged.
Records are datatrove Documents carrying our examples and Trajectory records (`synth.pipeline.records`).
Every step counts with datatrove's stats: `total` (in), `forwarded` (out), `dropped` and `dropped_<reason>`,
plus `prompt_tokens`, `completion_tokens`, `llm_calls`, `cache_hits`, `backend_calls` where it spends them;
`synth.pipeline.run` merges them into the output directory's `stats.json`.
Readers shard their items over datatrove tasks (item i goes to rank i % world_size).
Not covered: a streaming reader for corpora larger than memory (a corpus is read once per task).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.jsonl import JsonlWriter

from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import Trajectory
from synth.pipeline.filters import Result, get_filter
from synth.pipeline.records import (
    doc_example,
    doc_trajectory,
    example_doc,
    groups,
    set_trajectory,
    trajectory_doc,
)

log = logging.getLogger(__name__)
READER_KINDS = ("task", "jsonl", "parquet", "hf", "corpus", "trajectories")


# ----------------------------------------------------------------------------------- readers


def _load_examples(kind: str, path: Path, task: str | None, limit: int | None,
                   fields: Mapping[str, str]) -> list[dict[str, Any]]:
    if kind == "task":
        if not task:
            raise ConfigError("reader.kind=task needs reader.task (a benchmark name, see `agentic eval tasks`)")
        from eval.tasks import get_task

        return get_task(task).load(path, limit=limit, fields=dict(fields) or None)
    if kind == "parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
    elif kind == "hf":
        import datasets

        if path.is_dir():
            rows = list(datasets.load_from_disk(str(path)))
        else:
            fmt = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}.get(path.suffix)
            if fmt is None:
                raise ConfigError(f"reader.path={str(path)!r}: kind=hf reads a `save_to_disk` folder or a local "
                                  ".jsonl/.json/.csv/.parquet file")
            rows = list(datasets.load_dataset(fmt, data_files=str(path), split="train"))
    else:
        from eval.tasks.base import read_rows

        rows = [r for _, r in read_rows(path, "JSONL/JSON records with a 'question' field")]
    out = []
    for n, rec in enumerate(rows[:limit] if limit else rows):
        rec = dict(rec)
        for want, col in fields.items():  # the field we expect = the column in this file
            if col in rec:
                rec[want] = rec.pop(col)
        if "question" not in rec and "problem" in rec:
            rec["question"] = rec["problem"]
        if "question" not in rec:
            raise ConfigError(f"{path}: record {n} has no 'question' field (found: {', '.join(sorted(rec))[:200]}); "
                              "rename a column with reader.fields={question: COLUMN} or read it with kind=task")
        if "gold" not in rec and rec.get("answer") is not None:
            rec["gold"] = rec["answer"] if isinstance(rec["answer"], list) else [rec["answer"]]
        out.append(rec)
    return out


def trajectory_files(path: Path) -> list[Path]:
    """The trajectory JSONL files of an output directory (`trajectories.jsonl`, `trajectories/*.jsonl`) or a file."""
    if path.is_file():
        return [path]
    files = ([path / "trajectories.jsonl"] if (path / "trajectories.jsonl").is_file() else []) + sorted(
        (path / "trajectories").glob("*.jsonl"))
    if not files:
        raise ConfigError(f"--in {str(path)!r}: no trajectories.jsonl nor trajectories/*.jsonl there; point it at "
                          "the output directory of `agentic synth rollouts` / `run` or at a trajectories JSONL file")
    return files


class Reader(PipelineStep):
    """Input items as Documents: `kind` = task (an eval task's loader: any benchmark file), jsonl (JSONL or
    JSON records with `question`), parquet, hf (`datasets.load_from_disk` folder or a local data file),
    corpus (passages via `agentic_infer.tools.retrieval.corpus.read_corpus`, for QA synthesis) or
    trajectories (Trajectory JSONL written by a previous run, for `synth filter`)."""

    name = "read"
    type = "📖 - READER"

    def __init__(self, *, kind: str, path: str, task: str | None = None, limit: int | None = None,
                 fields: Mapping[str, str] | None = None):
        self.name = f"read:{kind}"
        super().__init__()
        if kind not in READER_KINDS:
            raise ConfigError(f"reader.kind={kind!r}: choose one of {', '.join(READER_KINDS)}")
        p = Path(path).expanduser()
        if not p.exists():
            raise ConfigError(f"reader.path={path!r}: no such file or directory; give the input file "
                              f"({'a folder of trajectories' if kind == 'trajectories' else 'the data file'})")
        if kind == "trajectories":
            trajectory_files(p)
        self.kind, self.path, self.task, self.limit, self.fields = kind, p, task, limit, dict(fields or {})

    def _docs(self) -> Iterator[Document]:
        if self.kind == "trajectories":
            n = 0
            for f in trajectory_files(self.path):
                with open(f, encoding="utf-8") as fh:
                    for line in fh:
                        if not line.strip():
                            continue
                        try:
                            traj = Trajectory.from_json(line)
                        except (json.JSONDecodeError, KeyError, TypeError) as e:
                            log.warning("%s: unreadable trajectory line skipped (%s)", f, e)
                            continue
                        yield trajectory_doc(traj)
                        n += 1
                        if self.limit and n >= self.limit:
                            return
        elif self.kind == "corpus":
            from itertools import islice

            from agentic_infer.tools.retrieval.corpus import read_corpus

            for d in islice(read_corpus(self.path), self.limit):
                yield Document(text=d.text, id=d.id, metadata={"kind": "example", "example": {
                    "id": d.id, "title": d.title, "text": d.text, "question": "", **d.metadata}})
        else:
            for ex in _load_examples(self.kind, self.path, self.task, self.limit, self.fields):
                yield example_doc(ex)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        for i, doc in enumerate(self._docs()):
            if i % world_size != rank:
                continue
            with self.track_time():
                self.stat_update("forwarded")
            yield doc


# ----------------------------------------------------------------------------------- rollout


class RolloutStep(PipelineStep):
    """Any engine x any backend on each input item: k samples as one group, one trajectory Document each.

    The engine comes from eval's engine table (`eval.engines.build_engine`: `direct`, `cot`, `search-o1`,
    `tir`, `deepconf`, `lats`, `rap`) with `samples` seeded samples as one `Group` rollout; the backend from
    `load_llm(backend)`, wrapped in `CachedLLM(cache_path)` so a rerun replays every finished request. Up to
    `concurrency` items run at once on an event loop in a worker thread, while the records of finished items
    flow on to the next steps. An engine error drops the item with reason `engine_error` (counted; retried
    on the next run, as `run_many` does). `make_llm` replaces `load_llm(backend)` (tests, benchmarks)."""

    name = "rollout"
    type = "🤖 - ROLLOUT"

    def __init__(self, *, engine: str, backend: str, task: str, samples: int = 1, max_tokens: int = 512,
                 temperature: float | None = None, seed: int = 0, concurrency: int = 8,
                 options: Mapping[str, Any] | None = None, index: str | None = None,
                 cache_path: str | None = None, make_llm: Callable[[], Any] | None = None):
        self.name = f"rollout:{engine}"
        super().__init__()
        from eval.engines import EvalOptions, get_engine
        from eval.tasks import get_task

        self.spec = get_engine(engine)
        self.task = get_task(task)
        self.options = EvalOptions(max_tokens=max_tokens, temperature=temperature, seed=seed, samples=samples,
                                   engine_options=dict(options or {}))
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"rollout.concurrency={concurrency!r}: must be an integer >= 1")
        if self.spec.needs_retriever and not index:
            raise ConfigError(f"rollout.engine={engine!r} searches: set rollout.index to a built index directory "
                              "(`agentic index build ...`)")
        if index and not Path(index).expanduser().is_dir():
            raise ConfigError(f"rollout.index={index!r}: no such index directory; build one with `agentic index`")
        if "://" not in backend:
            raise ConfigError(f"rollout.backend={backend!r}: not a backend URI; e.g. llamacpp://default, "
                              "openai://HOST:PORT/v1?model=NAME, fake://?reply=...")
        self.engine_name, self.backend, self.index = engine, backend, index
        self.concurrency, self.cache_path, self.make_llm = concurrency, cache_path, make_llm

    def _build(self) -> tuple[Any, Any]:
        from agentic_infer.backends import load_llm
        from agentic_infer.backends.cache import CachedLLM
        from eval.engines import EngineContext, build_engine

        llm = self.make_llm() if self.make_llm is not None else load_llm(self.backend)
        if self.cache_path:
            llm = CachedLLM(llm, self.cache_path)
        retriever_for = None
        if self.index:
            from agentic_infer.tools.retrieval.index import load_index

            index = load_index(self.index)
            retriever_for = lambda ex: index  # noqa: E731
        ctx = EngineContext(llm=llm, task=self.task, options=self.options, retriever_for=retriever_for)
        return build_engine(self.spec, ctx), llm

    def _emit(self, rollout: Any) -> Iterator[Document]:
        k = len(rollout.trajectories)
        for i, t in enumerate(rollout.trajectories):
            if not t.example:
                t.example = dict(rollout.example)
            t.group_id = rollout.example_id
            self.stat_update("prompt_tokens", value=t.usage.prompt_tokens)
            self.stat_update("completion_tokens", value=t.usage.completion_tokens)
            self.stat_update("llm_calls", value=t.usage.llm_calls)
            self.stat_update("forwarded")
            doc = trajectory_doc(t, sample=i, group_size=k)
            doc.metadata["rollout"] = {"answer": rollout.answer, "engine": rollout.engine, "chosen": rollout.chosen}
            yield doc

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data is None:
            return
        engine, llm = self._build()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="synth-rollout", daemon=True)
        thread.start()
        pending: dict[concurrent.futures.Future, dict[str, Any]] = {}
        inputs = iter(data)
        exhausted = False
        try:
            while True:
                while not exhausted and len(pending) < self.concurrency:
                    doc = next(inputs, None)
                    if doc is None:
                        exhausted = True
                        break
                    self.stat_update("total")
                    ex = doc_example(doc)
                    pending[asyncio.run_coroutine_threadsafe(engine.run(ex), loop)] = ex
                if not pending:
                    break
                with self.track_time("item"):
                    done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in done:
                    ex = pending.pop(fut)
                    try:
                        rollout = fut.result()
                    except AgenticError as e:
                        log.warning("rollout %s: %s (dropped; retried on the next run)", ex.get("id"), e)
                        self.stat_update("dropped", "dropped_engine_error")
                        continue
                    yield from self._emit(rollout)
        finally:
            for fut in pending:
                fut.cancel()
            hits, misses = getattr(llm, "hits", 0), getattr(llm, "misses", None)
            self.stat_update("cache_hits", value=hits)
            if misses is not None:
                self.stat_update("backend_calls", value=misses)
            close = getattr(llm, "aclose", None)
            if close is not None:
                asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=60)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=60)
            loop.close()


# ----------------------------------------------------------------------------------- judge


class JudgeStep(PipelineStep):
    """Score each trajectory's answer against its example's `gold` with verify metrics (`metrics`, names of
    `agentic_infer.verify.METRICS`) and/or `judges` (any `verify.Judge`: `MetricJudge`, an LLM judge); the
    verdicts land in `Trajectory.rewards` under each name (`verify.write_verdicts`). Counts `correct:<name>`."""

    name = "judge"
    type = "⚖️ - JUDGE"

    def __init__(self, *, metrics: Sequence[str] = ("em",), judges: Mapping[str, Any] | None = None):
        super().__init__()
        from agentic_infer.verify import get_metric

        for m in metrics:
            get_metric(m)
        if not metrics and not judges:
            raise ConfigError("judge: no metrics and no judges; give judge.metrics (e.g. [em, f1])")
        self.metrics, self.judges = tuple(metrics), dict(judges or {})

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from agentic_infer.verify import score, write_verdicts

        for doc in data or ():
            self.stat_update("total")
            with self.track_time():
                traj = doc_trajectory(doc)
                ex = traj.example
                gold = ex.get("gold", ex.get("answer"))
                if gold is None:
                    raise ConfigError(f"judge: example {ex.get('id')!r} has no 'gold' (nor 'answer') to judge "
                                      "against; read it with a task loader or add the field")
                verdicts = {m: score(m, traj.answer, gold) for m in self.metrics}
                for name, judge in self.judges.items():
                    ref = gold[0] if isinstance(gold, list) and gold else gold
                    verdicts[name] = float(asyncio.run(judge.score(str(ex.get("question", "")), traj.answer, ref)).score)
                write_verdicts(traj, verdicts)
                for name, v in verdicts.items():
                    if v >= 1.0:
                        self.stat_update(f"correct:{name}")
                set_trajectory(doc, traj)
            self.stat_update("forwarded")
            yield doc


# ----------------------------------------------------------------------------------- filters


def _drop_adapter(step: str) -> Callable[[Any, Document], dict]:
    def adapt(self: Any, doc: Document) -> dict:
        rec = doc.metadata.get("trajectory") if doc.metadata.get("kind") == "trajectory" else doc.metadata.get("example")
        return {"reason": doc.metadata.get("filter_reason"), "step": step, "id": doc.id, "record": rec}

    return adapt


def exclusion_writer(folder: str | Path, step: str) -> JsonlWriter:
    """datatrove's exclusion writer for one filter: `FOLDER/<step>/<rank>.jsonl`, `{reason, step, id, record}`."""
    return JsonlWriter(str(folder), output_filename=f"{step}/${{rank}}.jsonl", compression=None,
                       adapter=_drop_adapter(step))


class FilterStep(PipelineStep):
    """One filter of `synth.pipeline.filters.FILTERS` by name with its options; dropped records go to
    `exclusion_writer` (datatrove's exclusion-writer mechanism: `metadata["filter_reason"]` + a writer) and
    every reason is counted as `dropped_<reason>`."""

    type = "🔻 - FILTER"

    def __init__(self, name: str, *, options: Mapping[str, Any] | None = None, exclusion_folder: str | None = None,
                 label: str | None = None):
        self.name = label or f"filter:{name}"
        super().__init__()
        import inspect

        self.spec = get_filter(name)
        self.opts = dict(options or {})
        sig = inspect.signature(self.spec.fn)
        takes = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        bad = sorted(set(self.opts) - {p.name for p in takes})
        if bad:
            raise ConfigError(f"filter {name!r}: unknown option(s) {bad}; it takes {[p.name for p in takes]}")
        self.exclusion_folder = exclusion_folder

    def _decide(self, data: DocumentsPipeline) -> Iterator[tuple[Document, Result]]:
        scope, fn = self.spec.scope, self.spec.fn
        if scope == "trajectory":
            for doc in data or ():
                yield doc, fn(doc_trajectory(doc), **self.opts)
        elif scope == "group":
            for g in groups(data or ()):
                yield from zip(g, fn([doc_trajectory(d) for d in g], **self.opts))
        elif scope == "dataset":
            gs = list(groups(data or ()))
            for g, res in zip(gs, fn([[doc_trajectory(d) for d in g] for g in gs], **self.opts)):
                for d in g:
                    yield d, res
        else:
            check = fn(**self.opts)
            for doc in data or ():
                text = doc_example(doc).get("question", "") if self.spec.text == "question" else doc.text
                yield doc, check(str(text or doc.text))

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        writer = exclusion_writer(self.exclusion_folder, self.name.replace(":", "_")) if self.exclusion_folder else None
        try:
            for doc, res in self._decide(data):
                self.stat_update("total")
                keep, reason = (res if isinstance(res, tuple) else (res, None))
                if keep:
                    self.stat_update("forwarded")
                    yield doc
                    continue
                self.stat_update("dropped", f"dropped_{reason or 'unspecified'}")
                if writer is not None:
                    doc.metadata["filter_reason"] = reason
                    writer.write(doc, rank)
        finally:
            if writer is not None:
                writer.close()


# ----------------------------------------------------------------------------------- writers


def _trajectory_adapter(self: Any, doc: Document) -> dict:
    return doc.metadata["trajectory"] if doc.metadata.get("kind") == "trajectory" else doc.metadata.get("example", {})


class TrajectoryWriter(JsonlWriter):
    """datatrove's JsonlWriter writing one Trajectory record a line (`Trajectory.to_json`'s shape) to
    `FOLDER/trajectories/<rank>.jsonl` (input items, when no rollout ran, as their example dicts)."""

    name = "💾 trajectories.jsonl"

    def __init__(self, folder: str | Path, *, filename: str = "trajectories/${rank}.jsonl"):
        super().__init__(str(folder), output_filename=filename, compression=None, adapter=_trajectory_adapter)


def _parquet_adapter(self: Any, doc: Document) -> dict:
    t = doc.metadata.get("trajectory") or {}
    text = "".join(s.get("text", "") for s in t.get("segments", ()))
    return {"id": doc.id, "group_id": t.get("group_id"), "engine": t.get("engine"), "answer": t.get("answer"),
            "finish_reason": t.get("finish_reason"), "text": text,
            "record": json.dumps(t or doc.metadata.get("example"), ensure_ascii=False, default=str)}


def parquet_writer(folder: str | Path) -> PipelineStep:
    """datatrove's ParquetWriter: one row per trajectory in `trajectories_to_dataset`'s schema (flat columns +
    the whole record as JSON in `record`), `FOLDER/parquet/<rank>.parquet`."""
    from datatrove.pipeline.writers.parquet import ParquetWriter

    return ParquetWriter(str(folder), output_filename="parquet/${rank}.parquet", adapter=_parquet_adapter)


__all__ = ["READER_KINDS", "FilterStep", "JudgeStep", "Reader", "RolloutStep", "TrajectoryWriter",
           "exclusion_writer", "parquet_writer", "trajectory_files"]
