"""The runner's shared toolbox: one JSONL reader, appender and atomic writer, and `gather_bounded`."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.runner import (
    append_jsonl,
    atomic_open,
    gather_bounded,
    iter_jsonl,
    read_jsonl,
    repair_jsonl,
    write_jsonl,
)


def test_iter_jsonl_names_file_line_and_what_was_expected(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}\n\n{"a": 2}\n{oops\n')
    rows = iter_jsonl(p, "one example a line")
    assert next(rows) == (1, {"a": 1}) and next(rows) == (3, {"a": 2})  # BOM ignored, blank line skipped
    with pytest.raises(ConfigError, match=r"in\.jsonl:4: not valid JSON \(.*\); expected one example a line"):
        next(rows)
    p.write_bytes(b'{"a": 1}\n"\xff"\n')
    with pytest.raises(ConfigError, match=r"in\.jsonl:2: not UTF-8 text"):
        list(iter_jsonl(p))
    z = tmp_path / "in.jsonl.gz"
    z.write_bytes(gzip.compress(b'{"a": 1}\n{"a": 2}\n'))
    assert [r for _, r in iter_jsonl(z)] == [{"a": 1}, {"a": 2}]


def test_read_jsonl_skips_what_a_kill_tore_and_a_parser_refuses(tmp_path):
    p = tmp_path / "out.jsonl"
    assert read_jsonl(p) == []  # no file yet: nothing finished
    p.write_text('{"id": 1}\n{"x": 2}\n{"id": 3}\n{"id": 4, "tor')
    assert read_jsonl(p) == [{"id": 1}, {"x": 2}, {"id": 3}]
    assert read_jsonl(p, lambda line: __import__("json").loads(line)["id"]) == [1, 3]  # KeyError: skipped


def test_append_write_and_repair(tmp_path):
    p = tmp_path / "out.jsonl"
    append_jsonl(p, {"q": "é"})
    append_jsonl(p, '{"already": "encoded"}', fsync=True)
    assert p.read_text(encoding="utf-8") == '{"q": "é"}\n{"already": "encoded"}\n'
    with p.open("a") as f:
        f.write('{"torn": ')
    repair_jsonl(p)
    assert p.read_text(encoding="utf-8") == '{"q": "é"}\n{"already": "encoded"}\n'
    write_jsonl(p, [{"a": 1}, "[2]"])
    assert p.read_text() == '{"a": 1}\n[2]\n'


def test_atomic_open_leaves_the_old_file_when_the_block_fails(tmp_path):
    p = tmp_path / "stats.json"
    p.write_text("old")
    with pytest.raises(RuntimeError), atomic_open(p) as f:
        f.write("half of the new")
        raise RuntimeError("killed mid-write")
    assert p.read_text() == "old" and sorted(x.name for x in tmp_path.iterdir()) == ["stats.json"]
    with atomic_open(p) as f:
        f.write("new")
    assert p.read_text() == "new"


async def test_gather_bounded_keeps_order_and_the_bound():
    running, peak = 0, 0

    async def work(x: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01 * (5 - x))  # later items finish first
        running -= 1
        return x * x

    assert await gather_bounded(work, range(5), 2) == [0, 1, 4, 9, 16]
    assert peak == 2
    peak = 0
    assert await gather_bounded(work, [3, 1], 1) == [9, 1] and peak == 1
    assert await gather_bounded(work, [], 4) == []
    for bad in (0, 1.5, True):
        with pytest.raises(ConfigError, match=r"concurrency=.*must be an integer >= 1"):
            await gather_bounded(work, [1], bad)


async def test_gather_bounded_cancels_the_rest_on_the_first_error():
    started, cancelled = [], []

    async def work(x: int) -> int:
        started.append(x)
        if x == 1:
            raise ValueError("item 1 failed")
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(x)
            raise
        return x

    with pytest.raises(ValueError, match="item 1 failed"):
        await gather_bounded(work, range(6), 3)
    assert {0, 1, 2} <= set(started) and not {4, 5} & set(started)  # 3 slots: 0 and 2 (and 3) hold theirs
    assert sorted(cancelled) == sorted(set(started) - {1})  # every other started call was stopped, none orphaned
