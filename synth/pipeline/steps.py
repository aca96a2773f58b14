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
import queue
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
                 fields: Mapping[str, str] | None = None, progress: Any = None):
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
        self.progress = progress  # a shared synth.pipeline.progress.ItemProgress, or None

    def _count(self) -> int | None:
        """How many items this reader gives (trajectories: the files' non-empty lines; corpus: `limit`)."""
        if self.kind == "corpus":
            return self.limit
        n = 0
        for f in trajectory_files(self.path):
            with open(f, "rb") as fh:
                n += sum(1 for line in fh if line.strip())
        return min(n, self.limit) if self.limit else n

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
            examples = _load_examples(self.kind, self.path, self.task, self.limit, self.fields)
            self._loaded = len(examples)
            for ex in examples:
                yield example_doc(ex)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        bar = self.progress
        counting = bar is not None and bar.counter == "reader"
        docs = self._docs()
        try:
            for i, doc in enumerate(docs):
                if i == 0 and bar is not None:  # the total is known once the items are loaded
                    n = getattr(self, "_loaded", None) if self.kind not in ("trajectories", "corpus") else self._count()
                    bar.start(None if n is None else len(range(rank, n, world_size)), rank, world_size)
                if i % world_size != rank:
                    continue
                with self.track_time():
                    self.stat_update("forwarded")
                yield doc
                if counting:
                    bar.advance()
        finally:
            if counting:
                bar.close()


# ----------------------------------------------------------------------------------- rollout


class RolloutStep(PipelineStep):
    """Any engine x any backend on each input item: k samples as one group, one trajectory Document each.

    The engine comes from eval's engine table (`eval.engines.build_engine`: `direct`, `cot`, `search-o1`,
    `tir`, `deepconf`, `lats`, `rap`) with `samples` seeded samples as one `Group` rollout; the backend from
    `load_llm(backend)`, wrapped in `CachedLLM(cache_path)` so a rerun replays every finished request. Up to
    `concurrency` items run at once on an event loop in a worker thread, whose workers take the next input
    item themselves (so the upstream steps run on that thread, one call at a time), while the main thread
    passes the records of finished items on to the next steps (at most 2 x concurrency finished items wait
    for it). `index`: a built index directory or one of eval's corpora (`per-question`: each example's own
    paragraphs via the task's `question_corpus`; `pooled` (of `data`); `wiki-vital`), made by eval's
    `make_retriever_factory`. An engine error drops the item with reason `engine_error` (counted; retried
    on the next run, as `run_many` does); any other error stops the step. `make_llm` replaces
    `load_llm(backend)` (tests, benchmarks). `progress` advances once per item."""

    name = "rollout"
    type = "🤖 - ROLLOUT"

    def __init__(self, *, engine: str, backend: str, task: str, samples: int = 1, max_tokens: int = 512,
                 temperature: float | None = None, seed: int = 0, concurrency: int = 8,
                 options: Mapping[str, Any] | None = None, index: str | None = None, data: str | None = None,
                 cache_path: str | None = None, make_llm: Callable[[], Any] | None = None, progress: Any = None):
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
        from eval.runner import CORPORA

        self.index = index
        if index in CORPORA:  # eval's corpora: per-question (each example's own paragraphs), pooled, wiki-vital
            if index == "per-question":
                self._retrievers(data)  # cheap here; raises when the task has no per-question paragraphs
            elif index == "pooled" and not data:
                raise ConfigError("rollout.index=pooled pools the input file's paragraphs: read it with reader.path")
        elif index and not Path(index).expanduser().is_dir():
            raise ConfigError(f"rollout.index={index!r}: no such index directory; build one with `agentic index`, "
                              f"or name a corpus: {', '.join(CORPORA)}")
        if "://" not in backend:
            raise ConfigError(f"rollout.backend={backend!r}: not a backend URI; e.g. llamacpp://default, "
                              "openai://HOST:PORT/v1?model=NAME, fake://?reply=...")
        self.engine_name, self.backend, self.index, self.data = engine, backend, index, data
        self.concurrency, self.cache_path, self.make_llm = concurrency, cache_path, make_llm
        self.progress = progress  # a shared synth.pipeline.progress.ItemProgress, or None

    def _retrievers(self, data: str | None) -> Callable[[Mapping[str, Any]], Any] | None:
        """`example -> retriever` for `index`, made by eval's own `make_retriever_factory` (an index directory,
        or a corpus name: per-question, pooled, wiki-vital)."""
        from eval.runner import CORPORA, RunConfig, make_retriever_factory

        if not self.index:
            return None
        corpus = self.index if self.index in CORPORA else None
        cfg = RunConfig(task=self.task.name, data=data or "", corpus=corpus, index=None if corpus else self.index)
        return make_retriever_factory(cfg, self.task, Path(data or "."))

    def _build(self) -> tuple[Any, Any]:
        from agentic_infer.backends import load_llm
        from agentic_infer.backends.cache import CachedLLM
        from eval.engines import EngineContext, build_engine

        llm = self.make_llm() if self.make_llm is not None else load_llm(self.backend)
        if self.cache_path:
            llm = CachedLLM(llm, self.cache_path)
        ctx = EngineContext(llm=llm, task=self.task, options=self.options, retriever_for=self._retrievers(self.data))
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

    async def _drive(self, engine: Any, inputs: Iterator[Document], window: asyncio.Semaphore,
                     results: queue.SimpleQueue) -> None:
        """`concurrency` workers on the event loop: each takes the next input item (the upstream steps run here,
        one call at a time) and puts `(example, rollout or AgenticError)` on `results` for the main thread. An
        item is taken only while fewer than 2 x concurrency taken items wait to be consumed (`window`)."""

        async def worker() -> None:
            while True:
                await window.acquire()
                doc = next(inputs, None)
                if doc is None:
                    window.release()
                    return
                ex = doc_example(doc)
                try:
                    results.put((ex, await engine.run(ex)))
                except AgenticError as e:
                    results.put((ex, e))

        workers = [asyncio.ensure_future(worker()) for _ in range(self.concurrency)]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data is None:
            return
        engine, llm = self._build()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="synth-rollout", daemon=True)
        thread.start()
        results: queue.SimpleQueue = queue.SimpleQueue()
        finished = object()
        window = asyncio.Semaphore(2 * self.concurrency)  # made here, used on the loop only (py >= 3.10)
        drive = asyncio.run_coroutine_threadsafe(self._drive(engine, iter(data), window, results), loop)
        drive.add_done_callback(lambda _: results.put(finished))
        bar = self.progress if self.progress is not None and self.progress.counter == "rollout" else None
        try:
            while True:
                with self.track_time("item"):
                    item = results.get()
                if item is finished:
                    drive.result()  # an error of an upstream step or a non-AgenticError of the engine: raised here
                    break
                loop.call_soon_threadsafe(window.release)  # the loop takes the next item while we pass this one on
                ex, rollout = item
                self.stat_update("total")
                if bar is not None:
                    bar.advance()
                if isinstance(rollout, AgenticError):
                    log.warning("rollout %s: %s (dropped; retried on the next run)", ex.get("id"), rollout)
                    self.stat_update("dropped", "dropped_engine_error")
                    continue
                yield from self._emit(rollout)
        finally:
            drive.cancel()
            concurrent.futures.wait([drive], timeout=60)
            if bar is not None:
                bar.close()
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
    `agentic_infer.verify.METRICS`), LLM judges from specs (`judge_specs`: `{name, backend, verdict}` mappings,
    each built in the worker with `eval.judging.make_judge(task, load_llm(backend), verdict=...)`: `json` ->
    `EquivalenceJudge` (SimpleQA: `SimpleQAGrader`), `yes-no` -> `YesNoEquivalenceJudge`; its verdicts are
    cached in `cache_dir/judge-<name>.sqlite3`, so a rerun pays for no verdict twice) and/or ready `judges`
    (any `verify.Judge` object: `MetricJudge`, an LLM judge). Verdicts (an LLM judge's `score`: 1/0, or P(Yes))
    land in `Trajectory.rewards` under each name (`verify.write_verdicts`). Counts `correct:<name>`,
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
        from eval.judging import make_judge

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
        from agentic_infer.verify import score, write_verdicts

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
            async def one(judge: Any, ex: Mapping[str, Any], answer: Any, gold: Any) -> float:
                ref = gold[0] if isinstance(gold, list) and gold else gold
                return float((await judge.score(str(ex.get("question", "")), answer, ref)).score)

            return await asyncio.gather(*(asyncio.gather(*(one(j, ex, rec.get("answer"), gold) for j in judges.values()))
                                          for rec, ex, gold in items))

        scored = loop.run_until_complete(llm_verdicts()) if judges else [[] for _ in items]
        for doc, (rec, _, gold), llm_scores in zip(batch, items, scored):
            verdicts = {m: score(m, rec.get("answer"), gold) for m in self.metrics}
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
    from eval.judging import VERDICTS

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
    verdict = spec.get("verdict", "json")
    if verdict not in VERDICTS:
        raise ConfigError(f"judge verdict={verdict!r}: choose one of {', '.join(VERDICTS)}")
    return {"name": str(spec.get("name") or "judge_acc"), "backend": str(spec["backend"]), "verdict": verdict}


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


__all__ = ["READER_KINDS", "FilterStep", "check_judge_spec", "JudgeStep", "Reader", "RolloutStep", "TrajectoryWriter",
           "exclusion_writer", "parquet_writer", "trajectory_files"]
