"""CachedLLM: a finished request is never paid twice (across instances), keys cover prompt/params/seed/model."""

import asyncio

import pytest

from agentic_infer.backends.cache import CachedLLM, backend_calls, request_key
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Message, SamplingParams

P = SamplingParams(max_tokens=8, temperature=0.7, seed=1, logprobs=2)


def test_rerun_replays_without_backend_calls(tmp_path):
    db = tmp_path / "c.sqlite3"
    first = CachedLLM(FakeLLM(["one", "two"]), db)
    a = asyncio.run(first.generate("q", P))
    b = asyncio.run(first.generate("q", P))  # the same request again: the 2nd occurrence, a new answer
    assert [a[0].text, b[0].text] == ["one", "two"] and first.misses == 2
    again = CachedLLM(FakeLLM([]), db)  # an empty script: any backend call would raise
    assert asyncio.run(again.generate("q", P))[0].text == "one"
    assert asyncio.run(again.generate("q", P))[0].to_dict() == b[0].to_dict()
    assert again.hits == 2 and again.misses == 0
    assert len(backend_calls(db)) == 2


def test_key_covers_params_seed_prompt_and_model(tmp_path):
    base = request_key("m", "q", P)
    assert base != request_key("m", "q", P.replace(seed=2))
    assert base != request_key("m", "q", P.replace(max_tokens=9))
    assert base != request_key("m", "q2", P)
    assert base != request_key("m2", "q", P)
    assert base != request_key("m", [1, 2], P)
    llm = CachedLLM(FakeLLM(["x", "y"]), tmp_path / "c.sqlite3")
    asyncio.run(llm.generate("q", P))
    asyncio.run(llm.generate("q", P.replace(seed=2)))
    assert llm.misses == 2


def test_messages_are_rendered_and_stream_is_cached(tmp_path):
    db = tmp_path / "c.sqlite3"
    llm = CachedLLM(FakeLLM(["hello world"]), db)
    msgs = [Message("user", "hi")]

    async def stream(m):
        return "".join([d.text async for d in m.stream(msgs, P.replace(max_tokens=32))])

    assert asyncio.run(stream(llm)) == "hello world"
    replay = CachedLLM(FakeLLM([]), db)
    assert asyncio.run(stream(replay)) == "hello world" and replay.hits == 1


class _Dies(FakeLLM):
    """A backend that is killed in flight: the call starts and never returns an answer."""

    async def generate(self, prompt, params):
        raise RuntimeError("killed in flight")


def test_a_call_and_its_answer_are_one_commit_and_stored_before_it_returns(tmp_path):
    import sqlite3

    from agentic_infer.backends.cache import cached_keys

    db = tmp_path / "c.sqlite3"
    llm = CachedLLM(FakeLLM(["one", "two", "three"]), db)
    statements: list[str] = []
    llm._db().set_trace_callback(statements.append)

    async def go():
        await llm.generate("q", P)
        seen = cached_keys(db), len(backend_calls(db))  # another connection, the moment generate returned
        await llm.generate("q2", P)
        return seen

    (keys, calls) = asyncio.run(go())
    assert len(keys) == 1 and calls == 1  # committed before generate returned, the call with its answer
    assert sum(s.strip().upper() == "COMMIT" for s in statements) == 2  # one commit per backend call
    assert sum(s.lstrip().upper().startswith("INSERT") for s in statements) == 4  # a call line + an answer each
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 2
    conn.close()


def test_a_call_killed_in_flight_leaves_no_trace_and_is_paid_again(tmp_path):
    db = tmp_path / "c.sqlite3"
    dying = CachedLLM(_Dies(["x"]), db)
    try:
        asyncio.run(dying.generate("q", P))
    except RuntimeError:
        pass
    assert backend_calls(db) == []  # nothing logged nor stored for a call that never finished
    rerun = CachedLLM(FakeLLM(["answer"]), db)
    assert asyncio.run(rerun.generate("q", P))[0].text == "answer" and rerun.misses == 1
    assert len(backend_calls(db)) == 1


def test_opening_a_new_cache_retries_a_locked_journal_switch():
    """Workers opening one new file at once: switching to WAL can fail with "database is locked" (SQLite's busy
    timeout does not cover it; seen in CI with two datatrove workers); the setup retries."""
    import sqlite3

    from agentic_infer.backends.cache import _setup

    class Locked:
        def __init__(self, failures: int):
            self.failures, self.statements = failures, []

        def execute(self, sql):
            if sql.startswith("PRAGMA journal_mode") and self.failures:
                self.failures -= 1
                raise sqlite3.OperationalError("database is locked")
            self.statements.append(sql)

        def executescript(self, sql):
            self.statements.append("SCHEMA")

    conn = Locked(failures=3)
    _setup(conn)
    assert conn.statements == ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "SCHEMA"]
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _setup(Locked(failures=5), attempts=5)
