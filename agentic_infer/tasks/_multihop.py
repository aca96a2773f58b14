"""Shared pieces of the multi-hop tasks (HotpotQA, MuSiQue, 2Wiki): loader factory and pooled corpus."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.tasks.base import as_answers, need, read_rows, record_id
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.recipes import (
    MULTIHOP_POOL_FILES,
    multihop_pooled,
    pooled_id,
    question_corpus,
)


def multihop_loader(task: str, fmt: str, *, aliases: Sequence[str] = (), paragraphs: Sequence[str] = ()):
    """Loader for records {id, question, answer[, aliases], paragraphs...}; paragraph fields are checked."""

    def load(path: Path) -> list[dict[str, Any]]:
        out = []
        for where, rec in read_rows(path, fmt):
            q = need(rec, "question", path, where, fmt)
            gold = as_answers(need(rec, "answer", path, where, fmt), path, where, fmt)
            for a in aliases:
                if rec.get(a):
                    gold += [g for g in as_answers(rec[a], path, where, fmt) if g not in gold]
            if paragraphs:
                need(rec, paragraphs, path, where, fmt)
            out.append({"id": record_id(rec, where, task), "question": str(q).strip(), "gold": gold, "raw": rec})
        return out

    return load


def per_question(example: Mapping[str, Any]) -> list[Document]:
    """The question's own paragraphs (the closed distractor setting)."""
    return question_corpus(example.get("raw", example))


def pooled(path: Path) -> Iterator[Document]:
    """The `multihop-pooled` recipe when its files sit next to `path`, else every paragraph of `path`."""
    folder = path.resolve().parent
    if all((folder / f).is_file() for f in MULTIHOP_POOL_FILES):
        yield from multihop_pooled(folder.parent)
        return
    seen: set[str] = set()
    for _, rec in read_rows(path, "question records with paragraphs"):
        for d in question_corpus(rec):
            pid = pooled_id(d.title, d.text)
            if pid not in seen:
                seen.add(pid)
                yield Document(id=pid, title=d.title, text=d.text, metadata={"source": path.name})
