"""SearchBatcher on its own: merging, per-k grouping, close/restart, validation."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval import Document, Hit
from agentic_infer.tools.retrieval.batching import BatcherClosed, SearchBatcher
from agentic_infer.tools.retrieval.memory import InMemoryRetriever

DOCS = [
    Document("canberra", "Canberra", "Canberra is the capital city of Australia."),
    Document("ottawa", "Ottawa", "Ottawa is the capital of Canada."),
    Document("dune", "Dune (novel)", "Dune is a 1965 science fiction novel by Frank Herbert."),
]


class Slow:
    def __init__(self, delay_s: float) -> None:
        self.inner = InMemoryRetriever(DOCS)
        self.delay_s = delay_s
        self.calls: list[list[str]] = []
        self.threads: set[str] = set()

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        self.calls.append(list(queries))
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay_s)
        return self.inner.search(queries, k)


async def test_concurrent_searches_share_calls_and_a_single_worker_thread() -> None:
    slow = Slow(0.02)
    batcher = SearchBatcher(slow, window_s=0.01)
    queries = ["Australia", "Canada", "Herbert"] * 5
    results = await asyncio.gather(*(batcher.search([q], 1) for q in queries))
    assert [r[0][0].id for r in results] == ["canberra", "ottawa", "dune"] * 5
    assert len(slow.calls) <= 2 and batcher.stats.requests == 15
    assert len(slow.threads) == 1 and next(iter(slow.threads)).startswith("retrieval-search")
    await batcher.close()


async def test_the_event_loop_stays_free_during_a_search() -> None:
    batcher = SearchBatcher(Slow(0.2), window_s=0)
    task = asyncio.create_task(batcher.search(["Canada"], 1))
    t = time.perf_counter()
    await asyncio.sleep(0.01)  # would take 0.2 s if search() blocked the loop
    assert time.perf_counter() - t < 0.15
    assert (await task)[0][0].id == "ottawa"
    await batcher.close()


async def test_close_fails_waiting_requests_and_the_batcher_restarts() -> None:
    batcher = SearchBatcher(Slow(0.2), window_s=0)
    first = asyncio.create_task(batcher.search(["Canada"], 1))
    await asyncio.sleep(0.05)
    waiting = asyncio.create_task(batcher.search(["Australia"], 1))
    await asyncio.sleep(0)
    await batcher.close()
    for task in (first, waiting):
        with pytest.raises(BatcherClosed, match="shutting down"):
            await task
    assert (await batcher.search(["Herbert"], 1))[0][0].id == "dune"
    await batcher.close()


def test_bad_settings_are_config_errors() -> None:
    r = InMemoryRetriever(DOCS)
    with pytest.raises(ConfigError, match="window_s"):
        SearchBatcher(r, window_s=-1)
    with pytest.raises(ConfigError, match="max_batch_queries"):
        SearchBatcher(r, max_batch_queries=0)
    with pytest.raises(ConfigError, match="max_pending_queries"):
        SearchBatcher(r, max_pending_queries=0)
