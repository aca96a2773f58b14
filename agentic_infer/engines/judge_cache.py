"""A persistent cache of LLM-judge outputs in SQLite, keyed by judge model + prompt (+ sampling).

    cache = JudgeCache("~/.cache/agentic-infer/judge.sqlite")
    key = cache.key(model="gpt-4o-mini", prompt=text, params={"n": 1, "temperature": 0.0})
    outputs = cache.get(key)            # list[str] or None
    cache.put(key, model, text, outputs)

Thread-safe (one connection guarded by a lock; WAL mode so several processes can share a file).
Not covered: eviction (delete the file, or `clear()`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError


class JudgeCache:
    """Raw judge outputs by key; `hits` / `misses` count lookups."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("CREATE TABLE IF NOT EXISTS judge_cache (key TEXT PRIMARY KEY, model TEXT, "
                               "prompt TEXT, outputs TEXT, created REAL)")
            self._conn.commit()
        except (OSError, sqlite3.Error) as e:
            raise ConfigError(f"JudgeCache: cannot open {str(self.path)!r} ({e}); pass a writable path") from e
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*, model: str, prompt: str, params: dict[str, Any] | None = None) -> str:
        blob = json.dumps({"model": model, "prompt": prompt, "params": params or {}}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> list[str] | None:
        with self._lock:
            row = self._conn.execute("SELECT outputs FROM judge_cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return list(json.loads(row[0]))

    def put(self, key: str, model: str, prompt: str, outputs: list[str]) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO judge_cache VALUES (?, ?, ?, ?, ?)",
                               (key, model, prompt, json.dumps(outputs), time.time()))
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])

    def clear(self) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM judge_cache")
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


__all__ = ["JudgeCache"]
