"""Bounded concurrency: `gather_bounded`, the one semaphore+gather loop (runner, engines, judging).

It sits below everything that needs it (`agentic_infer.verify` included): asyncio and the error types only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from agentic_infer.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")


async def gather_bounded(fn: Callable[[T], Awaitable[R]], items: Iterable[T], concurrency: int) -> list[R]:
    """`[await fn(x) for x in items]`, at most `concurrency` calls at once; results in the order of `items`.

    `concurrency=1` runs them one after another, in order. The first error (or a cancellation) cancels the
    calls still running or waiting and is raised once they have all stopped, so none is left orphaned. Handle
    per-item failures inside `fn` (return a marker) when the others should go on."""
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ConfigError(f"concurrency={concurrency!r}: must be an integer >= 1")
    items = list(items)
    if concurrency == 1:
        return [await fn(x) for x in items]
    limit = asyncio.Semaphore(concurrency)

    async def one(x: T) -> R:
        async with limit:
            return await fn(x)

    tasks = [asyncio.ensure_future(one(x)) for x in items]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
