"""The pipeline's rollout step: `RolloutStep` runs any engine x any backend on each input item, k samples as
one group, and emits one trajectory Document per sample.

Counts (datatrove stats) `total`, `forwarded`, `dropped_engine_error`, `prompt_tokens`, `completion_tokens`,
`llm_calls`, `cache_hits` and `backend_calls`; `synth.pipeline.run` merges them into `stats.json`.
Not covered: judging, filtering, writing (`judge`, `filter_step`, `writers`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.tools.retrieval.corpora import CORPORA, retriever_factory
from synth.pipeline.records import doc_example, trajectory_doc

log = logging.getLogger(__name__)


class RolloutStep(PipelineStep):
    """Any engine x any backend on each input item: k samples as one group, one trajectory Document each.

    The engine comes from the engine registry (`agentic_infer.engines.registry`: `direct`, `cot`, `search-o1`,
    `tir`, `deepconf`, `lats`, `rap`), its config from `settings` (`--set`-style overrides on the registry's run
    defaults), with `samples` seeded samples as one `Group` rollout; the backend from
    `load_llm(backend)`, wrapped in `CachedLLM(cache_path)` so a rerun replays every finished request. Up to
    `concurrency` items run at once on an event loop in a worker thread, whose workers take the next input
    item themselves (so the upstream steps run on that thread, one call at a time), while the main thread
    passes the records of finished items on to the next steps (at most 2 x concurrency finished items wait
    for it). `index`: a built index directory or a corpus (`per-question`: each example's own paragraphs via
    the task's `question_corpus`; `pooled` (of `data`); `wiki-vital`), made by
    `agentic_infer.tools.retrieval.corpora.retriever_factory`. An engine error drops the item with reason `engine_error` (counted; retried
    on the next run, as `run_many` does); any other error stops the step. `make_llm` replaces
    `load_llm(backend)` (tests, benchmarks). `progress` advances once per item."""

    name = "rollout"
    type = "🤖 - ROLLOUT"

    def __init__(self, *, engine: str, backend: str, task: str, samples: int = 1,
                 settings: Mapping[str, Any] | None = None, concurrency: int = 8, index: str | None = None,
                 data: str | None = None, cache_path: str | None = None, make_llm: Callable[[], Any] | None = None,
                 progress: Any = None):
        self.name = f"rollout:{engine}"
        super().__init__()
        from agentic_infer.engines.registry import engine_config, get_engine
        from agentic_infer.tasks import get_task

        spec = get_engine(engine)  # not kept: datatrove writes the step's attributes as JSON
        self.task = get_task(task)
        self.samples = samples
        self.config = engine_config(spec, settings or {}, samples=samples, source="rollout.settings")
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"rollout.concurrency={concurrency!r}: must be an integer >= 1")
        if spec.needs_retriever and not index:
            raise ConfigError(f"rollout.engine={engine!r} searches: set rollout.index to a built index directory "
                              f"(`agentic index build ...`) or a corpus: {', '.join(CORPORA)}")
        if index and index not in CORPORA and not Path(index).expanduser().is_dir():
            raise ConfigError(f"rollout.index={index!r}: no such index directory; build one with `agentic index`, "
                              f"or name a corpus: {', '.join(CORPORA)}")
        if index == "pooled" and not data:
            raise ConfigError("rollout.index=pooled pools the input file's paragraphs: read it with reader.path")
        if index == "per-question":
            self._retrievers_for(index, data)  # cheap here; raises when the task has no per-question paragraphs
        if "://" not in backend:
            raise ConfigError(f"rollout.backend={backend!r}: not a backend URI; e.g. llamacpp://default, "
                              "openai://HOST:PORT/v1?model=NAME, fake://?reply=...")
        self.engine_name, self.backend, self.index, self.data = engine, backend, index, data
        self.concurrency, self.cache_path, self.make_llm = concurrency, cache_path, make_llm
        self.progress = progress  # a shared synth.pipeline.progress.ItemProgress, or None

    def _retrievers_for(self, index: str | None, data: str | None) -> Callable[[Mapping[str, Any]], Any] | None:
        """`example -> retriever` for `index` (a directory or a corpus name), from the one corpus factory."""
        corpus = index if index in CORPORA else None
        return retriever_factory(index=None if corpus else index, corpus=corpus, task=self.task, data=data)

    def _build(self) -> tuple[Any, Any]:
        from agentic_infer.backends import load_llm
        from agentic_infer.backends.cache import CachedLLM
        from agentic_infer.engines.registry import EngineParts, build_engine

        llm = self.make_llm() if self.make_llm is not None else load_llm(self.backend)
        if self.cache_path:
            llm = CachedLLM(llm, self.cache_path)
        parts = EngineParts(llm=llm, task=self.task, retriever_for=self._retrievers_for(self.index, self.data))
        return build_engine(self.engine_name, parts, self.config, samples=self.samples), llm

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


__all__ = ["RolloutStep"]
