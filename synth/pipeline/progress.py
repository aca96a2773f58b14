"""The pipeline's progress bar: items through the pipeline, drawn with rich (`agentic_infer.runner.Progress`).

One `ItemProgress` is shared by the reader, which knows how many items its task (rank) reads (the loaded
list after `limit`; the lines of a trajectories file; a corpus's `limit`, else no total: a count), and by
the step that counts them: the rollout (an item is done when its k samples are) or, without a rollout,
the reader itself (an item counts as it passes). The bar is drawn only on a terminal (stderr is a TTY),
with `executor.progress` on (`--no-progress` turns it off) and one worker (several worker processes
would draw over each other; datatrove logs their task counts). It is made in the process that runs the
task (a datatrove worker gets the object pickled, without a bar).
"""

from __future__ import annotations

import sys
from typing import Any

from agentic_infer.runner import Progress


def on_terminal() -> bool:
    """Whether a bar can be drawn: stderr is a TTY."""
    return sys.stderr.isatty()


class ItemProgress:
    """`start(total, rank, world_size)` by the reader, `advance()` by the counting step (`counter`), `close()`."""

    def __init__(self, *, label: str, counter: str, enabled: bool = True):
        self.label, self.counter, self.enabled = label, counter, enabled
        self.done = 0
        self.total: int | None = None
        self._bar: Any = None

    def start(self, total: int | None, rank: int = 0, world_size: int = 1) -> None:
        self.total, self.done = total, 0
        if not self.enabled or self._bar is not None or not on_terminal():
            return
        label = self.label + (f" (task {rank + 1}/{world_size})" if world_size > 1 else "")
        if total is not None:
            self._bar = Progress(total, label=label) if total > 0 else None
            return
        from rich.progress import Progress as RichProgress  # no total known: a count and the time
        from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = RichProgress(SpinnerColumn(), "[progress.description]{task.description}",
                                 TextColumn("{task.completed} items"), TimeElapsedColumn())
        self._task = self._bar.add_task(label, total=None)
        self._bar.start()

    def advance(self, n: int = 1) -> None:
        self.done += n
        if isinstance(self._bar, Progress):
            self._bar.advance(n)
        elif self._bar is not None:
            self._bar.update(self._task, advance=n)

    def close(self) -> None:
        if isinstance(self._bar, Progress):
            self._bar.close()
        elif self._bar is not None:
            self._bar.stop()
        self._bar = None

    def __getstate__(self) -> dict[str, Any]:  # deep-copied / pickled per datatrove task: no live bar
        return {**self.__dict__, "_bar": None}


__all__ = ["ItemProgress", "on_terminal"]
