"""A per-request LLM cache: any backend behind a SQLite file, so a rerun never pays for a finished call twice.

    llm = CachedLLM(load_llm("openai://..."), "out/cache/llm.sqlite3")
    [c] = await llm.generate(prompt, SamplingParams(max_tokens=64, seed=0))   # a rerun replays it from disk
    llm.hits, llm.misses                                                        # this process's counts

The key is the rendered request, as datatrove's `InferenceRunner` keys its replay cache: the prompt (text, or
token ids; a message list is rendered with the backend's chat template first), every sampling parameter
(seed included) and the model's identity (`model_id`, default the backend's URI-less name and class), plus
an occurrence number: the k-th identical request of a run replays the k-th stored answer, so an engine that
asks the same thing twice on purpose (k unseeded samples) still gets k different answers, and a rerun
gets them back in the same order. A result is written the moment the backend returns, in ONE transaction
with its line in the `calls` table (one commit per call, in a worker thread so the event loop goes on), and
`generate` returns only once that commit is done: a process killed mid-run loses only the requests in
flight (never finished, so never stored, and paid again on the rerun: their answers were never seen). The
file is safe to share between processes (datatrove workers): SQLite's WAL mode, one connection per
process, `INSERT OR IGNORE`.

Every finished backend call is logged in the `calls` table (key, pid, when it started), so tests and
benchmarks can count what a run really paid for (`backend_calls(path)`); a call killed in flight is not
logged (it is not stored either). Streaming (`stream`) replays a cached answer token by token and caches
a stream that ran to its end; an abandoned stream is not cached.
Not covered: expiry, size limits, sharing one cache between different models under one `model_id`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.backends.base import Prompt, StreamDelta
from agentic_infer.errors import ConfigError
from agentic_infer.types import Completion, Message, SamplingParams

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, result TEXT NOT NULL,
                                      created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS calls (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, pid INTEGER NOT NULL,
                                  started REAL NOT NULL);
"""


def model_identity(llm: Any) -> str:
    """What distinguishes one model from another for the cache: the backend class, its name and, where the
    backend knows them, its model name / path and base URL."""
    parts = [type(llm).__module__ + "." + type(llm).__name__, str(getattr(llm, "name", ""))]
    for attr in ("model", "model_path", "path", "base_url"):
        v = getattr(llm, attr, None)
        if isinstance(v, (str, os.PathLike)):
            parts.append(f"{attr}={v}")
    return "|".join(parts)


def request_key(model_id: str, prompt: str | list[int], params: SamplingParams) -> str:
    """The hash of a rendered request: model identity, prompt text or ids, every sampling parameter."""
    blob = json.dumps({"model": model_id, "prompt": prompt, "params": params.to_dict()}, sort_keys=True,
                      ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class CachedLLM:
    """`llm` behind a SQLite request cache at `path` (see the module docstring). Everything but `generate` and
    `stream` (render, tokenizer, name, max_concurrency, ...) is the wrapped backend's."""

    def __init__(self, llm: Any, path: str | Path, *, model_id: str | None = None):
        if isinstance(llm, CachedLLM):
            raise ConfigError("CachedLLM: the backend is already cached; wrap the raw backend once")
        self.llm = llm
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.model_id = model_id or model_identity(llm)
        self.hits = 0
        self.misses = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None

    # -- delegation ---------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name == "llm":  # not set yet (unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.llm, name)

    @property
    def tokenizer(self) -> Any:
        return self.llm.tokenizer

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self.llm.render(messages, add_generation_prompt=add_generation_prompt)

    # -- storage ------------------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():  # a forked worker opens its own connection
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            _setup(conn)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _next_key(self, prompt: str | list[int], params: SamplingParams) -> tuple[str, str]:
        base = request_key(self.model_id, prompt, params)
        with self._lock:
            n = self._seen[base]
            self._seen[base] += 1
        return f"{base}:{n}", base

    def _lookup(self, key: str) -> list[Completion] | None:
        with self._lock:
            row = self._db().execute("SELECT result FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return [Completion.from_dict(d) for d in json.loads(row[0])]

    def _store(self, key: str, prompt: Any, params: SamplingParams, result: list[Completion], started: float) -> None:
        """The finished call and its answer, in one transaction (one commit)."""
        request = json.dumps({"model": self.model_id, "params": params.to_dict(),
                              "prompt": prompt if isinstance(prompt, str) else list(prompt)}, ensure_ascii=False)
        answer = json.dumps([c.to_dict() for c in result])
        with self._lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT INTO calls (key, pid, started) VALUES (?, ?, ?)", (key, os.getpid(), started))
                db.execute("INSERT OR IGNORE INTO responses (key, request, result, created) VALUES (?, ?, ?, ?)",
                           (key, request, answer, time.time()))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _prompt(self, prompt: Prompt) -> str | list[int]:
        if isinstance(prompt, str):
            return prompt
        items = list(prompt)
        if items and all(isinstance(m, (Message, dict)) for m in items):
            return self.llm.render([m if isinstance(m, Message) else Message.from_dict(m) for m in items])
        return [int(t) for t in items]

    # -- the LLM protocol ---------------------------------------------------------------------------
    async def generate(self, prompt: Prompt, params: SamplingParams) -> list[Completion]:
        p = self._prompt(prompt)
        key, _ = self._next_key(p, params)
        cached = self._lookup(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        started = time.time()
        result = await self.llm.generate(p, params)
        await asyncio.to_thread(self._store, key, p, params, result, started)  # the commit off the event loop
        return result

    async def stream(self, prompt: Prompt, params: SamplingParams) -> AsyncIterator[StreamDelta]:
        p = self._prompt(prompt)
        key, _ = self._next_key(p, params)
        cached = self._lookup(key)
        if cached is not None:
            self.hits += 1
            c = cached[0]
            toks = c.logprobs or []
            pieces = [lp.token for lp in toks]
            if "".join(pieces) != c.text:  # token texts do not spell the text (bytes split): text first, then ""
                pieces = [c.text] + [""] * max(0, len(toks) - 1)
            for i, lp in enumerate(toks or [None]):
                last = i == max(0, len(toks) - 1)
                yield StreamDelta(pieces[i] if toks else c.text, lp, c.finish_reason if last else None,
                                  c.stop_reason if last else None)
            return
        self.misses += 1
        started = time.time()
        from agentic_infer.backends.base import collect

        deltas: list[StreamDelta] = []

        async def tee() -> AsyncIterator[StreamDelta]:
            async for d in self.llm.stream(p, params):
                deltas.append(d)
                yield d

        finished = False
        async for d in tee():
            yield d
            finished = d.finish_reason is not None
        if finished:
            async def again() -> AsyncIterator[StreamDelta]:
                for d in deltas:
                    yield d

            await asyncio.to_thread(self._store, key, p, params, [await collect(again())], started)

    async def aclose(self) -> None:
        close = getattr(self.llm, "aclose", None)
        if close is not None:
            await close()
        self.close()

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def __getstate__(self) -> dict[str, Any]:  # picklable for datatrove's process pools: no live connection
        state = dict(self.__dict__)
        state["_conn"], state["_pid"], state["_lock"] = None, None, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _setup(conn: sqlite3.Connection, attempts: int = 50) -> None:
    """WAL mode and the schema. Switching the journal mode takes an exclusive lock that SQLite's busy timeout
    does not wait for, so workers opening one new file at the same moment retry it ("database is locked")."""
    for attempt in range(attempts):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(SCHEMA)
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or attempt == attempts - 1:
                raise
            time.sleep(0.02 * (attempt + 1))


def backend_calls(path: str | Path) -> list[tuple[str, int]]:
    """Every backend call a cache file logged, as (request key, pid), in order."""
    conn = sqlite3.connect(Path(path))
    try:
        return [(k, pid) for k, pid in conn.execute("SELECT key, pid FROM calls ORDER BY id")]
    except sqlite3.OperationalError:  # a file whose tables are not made yet
        return []
    finally:
        conn.close()


def cached_keys(path: str | Path) -> set[str]:
    """The request keys whose answers a cache file holds."""
    conn = sqlite3.connect(Path(path))
    try:
        return {k for (k,) in conn.execute("SELECT key FROM responses")}
    except sqlite3.OperationalError:
        return set()
    finally:
        conn.close()


__all__ = ["CachedLLM", "backend_calls", "cached_keys", "model_identity", "request_key"]
