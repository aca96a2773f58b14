"""`run_many`: any engine over many examples, with bounded concurrency, progress and resumable output.

    rollouts = await run_many(engine, examples, concurrency=8, out="runs/x/rollouts.jsonl")

With `out=PATH`, each finished Rollout is appended to a JSONL file as one line (flushed) as soon as it
finishes, and a rerun skips the examples already there: a killed run loses at most the items in
flight and never writes one twice. A line torn by a kill is dropped when the file is reopened (the file
is rewritten through a temporary file and `os.replace`), so the next record starts clean.
An engine failure (`AgenticError`) does not stop the run: it is logged, appended to
`PATH.errors.jsonl` (or raised when `out` is None and `raise_errors`), and the example is retried
on the next run; its slot in the returned list is None.

Schedulers: `async` (each example on its own, at most `concurrency` at once, so a continuous-batching
server stays full), `sequential` (one at a time, a baseline) and, for engines on the agent loop
(`EpisodicEngine`), `lockstep` (the Search-o1 reference: a batch of `concurrency` episodes advances one
turn per step, waiting for its slowest member, and tool handlers see the whole batch at once). For a
deterministic backend all three give identical rollouts. `prepare(index, rollout)` runs just before a
rollout is written (eval writes its verdicts into `rollout.rewards` there, so the line holds them) and
`on_rollout(index, rollout)` just after (eval writes its result row there).

The toolkit's one JSONL and bounded-concurrency toolbox, shared by eval, synth and train:
- `iter_jsonl(path, expected)`: (line number, record) of every line; a bad line is a `ConfigError` naming
  file:line and what was expected (`skip_bad=True`: logged and skipped, for our own outputs); `read_jsonl`:
  the readable records of an output file as a list (none when it does not exist);
- `append_jsonl(path, record)`: one record appended as one flushed line (`fsync=True`: on disk);
- `write_jsonl(path, records)` / `atomic_open(path)`: replace a whole file atomically (a kill leaves the old
  file or the new one); `repair_jsonl(path)`: drop the torn last line a kill left;
- `gather_bounded` (from `agentic_infer.concurrency`): `[await fn(x) for x in items]`, at most `concurrency` at once.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from agentic_infer.concurrency import gather_bounded
from agentic_infer.engines.base import Engine, EpisodicEngine, example_id
from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import Rollout

log = logging.getLogger(__name__)
SCHEDULERS = ("async", "lockstep", "sequential")
T = TypeVar("T")
R = TypeVar("R")
_BAD_LINE = (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError)  # what a torn or foreign line raises


def iter_jsonl(path: str | Path, expected: str = "one JSON record a line", *, parse: Callable[[str], Any] = json.loads,
               skip_bad: bool = False) -> Iterator[tuple[int, Any]]:
    """(line number, `parse(line)`) of every non-empty line of a JSONL file (`.gz` too; a UTF-8 BOM is ignored).

    A line that does not parse (not UTF-8, not JSON, or refused by `parse`) is a `ConfigError` naming the
    file, the line and what was `expected`: a user's input is not repaired. `skip_bad=True` logs and skips it
    instead, for our own output files, where a killed writer may have torn a line."""
    path = Path(path)
    with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as f:
        for n, raw in enumerate(f, 1):
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            try:
                rec = parse(raw.decode("utf-8"))
            except _BAD_LINE as e:
                what = (f"not valid JSON ({e.msg})" if isinstance(e, json.JSONDecodeError) else
                        f"not UTF-8 text ({e.reason})" if isinstance(e, UnicodeDecodeError) else
                        f"unreadable ({type(e).__name__}: {e})")
                if not skip_bad:
                    raise ConfigError(f"{path}:{n}: {what}; expected {expected}") from None
                log.warning("%s:%d %s; skipped", path, n, what)
                continue
            yield n, rec


def read_jsonl(path: str | Path, parse: Callable[[str], Any] = json.loads) -> list[Any]:
    """Every readable record of one of our output files (none when it does not exist); a torn or unreadable
    line is logged and skipped (`iter_jsonl(..., skip_bad=True)`)."""
    path = Path(path)
    return [rec for _, rec in iter_jsonl(path, parse=parse, skip_bad=True)] if path.exists() else []


def _line(record: Any) -> str:
    """A record as one JSON line: a string is taken as already encoded (e.g. `Trajectory.to_json()`)."""
    return record if isinstance(record, str) else json.dumps(record, ensure_ascii=False, default=str)


def append_jsonl(path: str | Path, record: Any, *, fsync: bool = False) -> None:
    """Append `record` (a JSON-able value, or an encoded JSON string) as one line, flushed; `fsync=True` also
    forces it to disk (the completion marker of a resumable run)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(_line(record) + "\n")
        f.flush()
        if fsync:
            os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """A file (`mode` "w" text or "wb" bytes) that replaces `path` when the block ends, fsynced first: a kill
    leaves the old file or the new one, never half of one; on an error the temporary file is removed."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_jsonl(path: str | Path, records: Iterable[Any]) -> Path:
    """Replace `path` with `records` (JSON-able values or encoded JSON strings), one a line, atomically."""
    with atomic_open(path) as f:
        for rec in records:
            f.write(_line(rec) + "\n")
    return Path(path)


def repair_jsonl(path: str | Path) -> None:
    """Drop a torn last line (a kill mid-write) by rewriting the file atomically; a no-op for a clean file."""
    path = Path(path)
    if not path.exists() or not path.stat().st_size:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    keep = data[: data.rfind(b"\n") + 1]
    log.warning("%s: dropping a torn last line (%d bytes)", path, len(data) - len(keep))
    with atomic_open(path, "wb") as f:
        f.write(keep)


class Progress:
    """A rich progress bar (no-op when disabled): `advance()`, `close()`."""

    def __init__(self, total: int, *, done: int = 0, label: str = "", enabled: bool = True):
        self.bar = None
        if enabled and total > 0:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TimeRemainingColumn())
            self.task = self.bar.add_task(label, total=total, completed=done)
            self.bar.start()

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def load_rollouts(path: str | Path) -> dict[str, Rollout]:
    """Finished rollouts of a run file by example id (the first record wins)."""
    done: dict[str, Rollout] = {}
    for r in read_jsonl(Path(path), Rollout.from_json):
        done.setdefault(r.example_id, r)
    return done


async def run_many(engine: Engine, examples: Sequence[Mapping[str, Any]], *, concurrency: int = 8,
                   out: str | Path | None = None, progress: bool = True, scheduler: str = "async",
                   on_rollout: Callable[[int, Rollout], None] | None = None,
                   prepare: Callable[[int, Rollout], None] | None = None,
                   raise_errors: bool | None = None) -> list[Rollout | None]:
    """Run `examples` through `engine`; rollouts come back in the order of `examples` (see module docstring)."""
    if scheduler not in SCHEDULERS:
        raise ConfigError(f"scheduler={scheduler!r}: choose one of {SCHEDULERS}")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency={concurrency!r}: must be an integer >= 1")
    if scheduler == "lockstep" and not isinstance(engine, EpisodicEngine):
        raise ConfigError(f"scheduler='lockstep' needs an engine on the agent loop; {engine.name!r} is not; "
                          "use scheduler='async'")
    raise_errors = out is None if raise_errors is None else raise_errors
    ids = [example_id(ex) for ex in examples]
    path = Path(out) if out is not None else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_jsonl(path)
    done = load_rollouts(path) if path else {}
    results: list[Rollout | None] = [done.get(eid) for eid in ids]
    todo = [i for i, r in enumerate(results) if r is None]
    bar = Progress(len(examples), done=len(examples) - len(todo), label=engine.name, enabled=progress)
    errors = path.with_suffix(path.suffix + ".errors.jsonl") if path else None

    def finish(i: int, rollout: Rollout) -> None:
        rollout.example_id = ids[i]
        for t in rollout.trajectories:
            t.group_id = ids[i]
        results[i] = rollout
        if prepare is not None:
            prepare(i, rollout)
        if path is not None:
            append_jsonl(path, rollout.to_json())
        if on_rollout is not None:
            on_rollout(i, rollout)
        bar.advance()

    def failed(i: int, e: AgenticError) -> None:
        if raise_errors:
            raise e
        log.warning("%s %s: %s (retried on the next run)", engine.name, ids[i], e)
        if errors is not None:
            append_jsonl(errors, {"id": ids[i], "error": f"{type(e).__name__}: {e}"})
        bar.advance()

    try:
        if scheduler == "lockstep":
            await _lockstep(engine, examples, todo, concurrency, finish, failed)  # type: ignore[arg-type]
        else:
            async def one(i: int) -> None:
                try:
                    rollout = await engine.run(examples[i])
                except AgenticError as e:
                    failed(i, e)
                    return
                finish(i, rollout)

            # an error or Ctrl-C stops the items in flight too; they are redone on the next run
            await gather_bounded(one, todo, 1 if scheduler == "sequential" else concurrency)
    finally:
        bar.close()
    return results


async def _lockstep(engine: EpisodicEngine, examples: Sequence[Mapping[str, Any]], todo: list[int],
                    concurrency: int, finish: Callable[[int, Rollout], None],
                    failed: Callable[[int, AgenticError], None]) -> None:
    for start in range(0, len(todo), concurrency):  # a batch of `concurrency` episodes
        batch = []
        for i in todo[start:start + concurrency]:
            try:
                batch.append((i, engine.start(examples[i])))
            except AgenticError as e:
                failed(i, e)
        finished: set[int] = set()
        while any(not ep.done for _, ep in batch):
            await engine.loop.step([ep for _, ep in batch])
            for i, ep in batch:
                if ep.done and i not in finished:
                    finished.add(i)
                    finish(i, engine.rollout(ep))
        for i, ep in batch:  # episodes finished at start (none today) still get written
            if i not in finished:
                finish(i, engine.rollout(ep))
