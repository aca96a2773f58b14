"""Shared pieces of the math tasks (GSM8K, MATH-500, AIME, AMC): loader factory and settings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.tasks.base import MATH_PROMPTS, Task, as_answers, need, read_rows, record_id
from agentic_infer.verify import extract_boxed

MATH_METRICS = ("math_equal", "boxed_found")


def _as_text(a: Any, path: Path, where: Any, fmt: str) -> str:
    """A math gold answer as text, never parsed as a literal (`[0,1)` and `(a+5)(b+2)` are answers)."""
    if isinstance(a, float) and a.is_integer():
        return str(int(a))
    if isinstance(a, (str, int, float)):
        return str(a).strip()
    return as_answers(a, path, where, fmt)[0]


def math_loader(task: str, fmt: str, *, question: Sequence[str] = ("problem", "question"),
                answer: Sequence[str] = ("answer",), gold_fn: Callable[[Any], str] | None = None):
    def load(path: Path) -> list[dict[str, Any]]:
        out = []
        for where, rec in read_rows(path, fmt):
            q = need(rec, question, path, where, fmt)
            a = need(rec, answer, path, where, fmt)
            try:
                gold = [gold_fn(a)] if gold_fn else [_as_text(a, path, where, fmt)]
            except ConfigError as e:
                raise ConfigError(f"{path}:{where}: {e}") from None
            out.append({"id": record_id(rec, where, task), "question": str(q).strip(), "gold": gold, "raw": rec})
        return out

    return load


def math_task(name: str, desc: str, fmt: str, files: tuple[str, ...], loader, *,
              metrics: tuple[str, ...] = MATH_METRICS) -> Task:
    return Task(name=name, family="math", description=desc, data_format=fmt, loader=loader, metrics=metrics,
                primary="math_equal", default_files=files, prompts=dict(MATH_PROMPTS), extract=extract_boxed,
                engines=("direct", "cot", "tir", "deepconf", "lats", "rap"))
