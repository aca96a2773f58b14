"""Merge concurrent search requests into batched `Retriever.search` calls (used by the server).

`SearchBatcher(retriever)` is awaited by many request handlers at once:

    batcher = SearchBatcher(retriever, window_s=0.002)
    hits = await batcher.search(["who wrote Dune"], k=3)   # -> list[list[Hit]]

A background task takes everything that queued up while the previous batch ran and, when under
concurrent load (the previous batch merged several requests, or several are waiting), also the
requests that arrive within `window_s` of the first waiting one; a lone client pays no window
latency. It groups them by `k` (a hybrid or dense index may rank differently for different
depths, so requests with different `k` are never merged), removes duplicate queries, and makes one
`retriever.search(queries, k)` call per group (chunked to at most `max_batch_queries` queries). The call runs in one dedicated worker thread, so
the event loop stays free and the retriever never sees two calls at once (it need not be
thread-safe). Blank queries get `[]` without reaching the retriever.

If a merged call raises, each request of the group is retried alone, so one poisonous request
fails only itself. Backpressure: when more than `max_pending_queries` queries are waiting, new
requests fail fast with `BatcherOverloaded` (the server answers 503).

What it does not cover: priorities, per-request deadlines (a disconnected client's queries are
still searched if already merged), or running several retriever calls in parallel.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Hit, Retriever

__all__ = ["BatchStats", "BatcherClosed", "BatcherOverloaded", "SearchBatcher"]

logger = logging.getLogger(__name__)


class BatcherOverloaded(RuntimeError):
    """Too many queries are already waiting; the caller should retry later."""


class BatcherClosed(RuntimeError):
    """The batcher was closed (the server is shutting down) while the request waited."""


@dataclass
class BatchStats:
    """Counters since start: requests and queries received, retriever calls made."""

    requests: int = 0
    queries: int = 0
    searched_queries: int = 0  # unique, non-blank queries sent to the retriever
    search_calls: int = 0
    failed_calls: int = 0
    largest_call: int = 0  # most queries in one retriever call

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class _Job:
    queries: list[str]
    k: int
    future: asyncio.Future[list[list[Hit]]]


class SearchBatcher:
    """Batches concurrent `search` awaits into few `retriever.search` calls (see module doc)."""

    def __init__(
        self,
        retriever: Retriever,
        *,
        window_s: float = 0.002,
        max_batch_queries: int = 1024,
        max_pending_queries: int = 65536,
    ) -> None:
        if window_s < 0:
            raise ConfigError(f"window_s must be >= 0, got {window_s!r}")
        if max_batch_queries < 1:
            raise ConfigError(f"max_batch_queries must be >= 1, got {max_batch_queries!r}")
        if max_pending_queries < 1:
            raise ConfigError(f"max_pending_queries must be >= 1, got {max_pending_queries!r}")
        self.retriever = retriever
        self.window_s = window_s
        self.max_batch_queries = max_batch_queries
        self.max_pending_queries = max_pending_queries
        self.stats = BatchStats()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: deque[_Job] = deque()
        self._pending_queries = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._worker: asyncio.Task[None] | None = None
        self._last_batch_jobs = 0

    async def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Hits for each query, as `retriever.search(queries, k)` would return them."""
        self.stats.requests += 1
        self.stats.queries += len(queries)
        if not queries:
            return []
        if self._pending_queries + len(queries) > self.max_pending_queries:
            raise BatcherOverloaded(
                f"{self._pending_queries} queries are already waiting (max_pending_queries="
                f"{self.max_pending_queries}); retry shortly"
            )
        wakeup = self._ensure_worker()
        job = _Job(list(queries), k, asyncio.get_running_loop().create_future())
        self._pending.append(job)
        self._pending_queries += len(queries)
        wakeup.set()
        return await job.future

    def _ensure_worker(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        wakeup = self._wakeup
        if self._loop is not loop or wakeup is None:  # first use, or a new loop (e.g. a fresh test client)
            self._loop = loop
            wakeup = self._wakeup = asyncio.Event()
            self._pending.clear()
            self._pending_queries = 0
            self._worker = None
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="retrieval-search")
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._run(wakeup), name="retrieval-batcher")
        return wakeup

    async def close(self) -> None:
        """Stop the worker and its thread; waiting requests fail with `BatcherClosed`.

        The batcher restarts on the next `search` (a server may be started again)."""
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
        while self._pending:
            job = self._pending.popleft()
            if not job.future.done():
                job.future.set_exception(BatcherClosed("retrieval server is shutting down"))
        self._pending_queries = 0
        self._worker = None
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    async def _run(self, wakeup: asyncio.Event) -> None:
        while True:
            if not self._pending:
                wakeup.clear()
                await wakeup.wait()
            # Under concurrent load (the last batch merged requests, or several wait already) let
            # requests arriving within the window join; otherwise only yield once, so a lone
            # client pays no window latency.
            under_load = self._last_batch_jobs > 1 or len(self._pending) > 1
            if under_load and self.window_s > 0 and self._pending_queries < self.max_batch_queries:
                await asyncio.sleep(self.window_s)
            else:
                await asyncio.sleep(0)
            jobs = self._take_batch()
            self._last_batch_jobs = len(jobs)
            try:
                await self._execute(jobs)
            except asyncio.CancelledError:
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(BatcherClosed("retrieval server is shutting down"))
                raise
            except Exception as e:  # never let the worker die: fail this batch, keep serving
                logger.exception("retrieval batch failed unexpectedly")
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(e)

    def _take_batch(self) -> list[_Job]:
        jobs: list[_Job] = []
        total = 0
        while self._pending:
            nxt = self._pending[0]
            if jobs and total + len(nxt.queries) > self.max_batch_queries:
                break
            self._pending.popleft()
            self._pending_queries -= len(nxt.queries)
            if nxt.future.done():  # the request was cancelled while waiting
                continue
            jobs.append(nxt)
            total += len(nxt.queries)
        return jobs

    async def _execute(self, jobs: list[_Job]) -> None:
        by_k: dict[int, list[_Job]] = {}
        for job in jobs:
            by_k.setdefault(job.k, []).append(job)
        for k, group in by_k.items():
            try:
                results = await self._search_group(group, k)
            except Exception as e:
                if len(group) == 1:
                    self._fail(group[0], e)
                    continue
                logger.warning("merged search of %d requests failed (%s); retrying each alone", len(group), e)
                for job in group:
                    try:
                        self._resolve(job, (await self._search_group([job], k))[0])
                    except Exception as e_one:
                        self._fail(job, e_one)
                continue
            for job, result in zip(group, results, strict=True):
                self._resolve(job, result)

    async def _search_group(self, group: list[_Job], k: int) -> list[list[list[Hit]]]:
        """One retriever call (per chunk) for all queries of `group`; returns per-job results."""
        unique: dict[str, list[Hit]] = {}
        for job in group:
            for q in job.queries:
                if q.strip():
                    unique.setdefault(q, [])
        ordered = list(unique)
        loop = asyncio.get_running_loop()
        executor = self._executor
        if executor is None:
            raise BatcherClosed("retrieval server is shutting down")
        for start in range(0, len(ordered), self.max_batch_queries):
            chunk = ordered[start : start + self.max_batch_queries]
            self.stats.search_calls += 1
            self.stats.searched_queries += len(chunk)
            self.stats.largest_call = max(self.stats.largest_call, len(chunk))
            try:
                hits = await loop.run_in_executor(executor, self.retriever.search, chunk, k)
            except Exception:
                self.stats.failed_calls += 1
                raise
            if not isinstance(hits, list) or len(hits) != len(chunk):
                self.stats.failed_calls += 1
                got = len(hits) if isinstance(hits, list) else type(hits).__name__
                raise RuntimeError(
                    f"{type(self.retriever).__name__}.search returned {got} result lists for "
                    f"{len(chunk)} queries; a Retriever must return one list per query"
                )
            for q, h in zip(chunk, hits, strict=True):
                unique[q] = list(h)[:k]
        return [[list(unique[q]) if q.strip() else [] for q in job.queries] for job in group]

    @staticmethod
    def _resolve(job: _Job, result: list[list[Hit]]) -> None:
        if not job.future.done():
            job.future.set_result(result)

    @staticmethod
    def _fail(job: _Job, error: Exception) -> None:
        if not job.future.done():
            job.future.set_exception(error)

    def snapshot(self) -> dict[str, int]:
        """Counters plus the current queue depth (for /health)."""
        return {**self.stats.to_dict(), "pending_queries": self._pending_queries}
