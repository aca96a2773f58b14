"""Shared pieces of the open-domain QA tasks: NQ-open, TriviaQA, PopQA, Bamboogle, SimpleQA (CSV), FRAMES (CSV/TSV).

Formats accepted (each task takes the published layout and the FlashRAG one):
- NQ-open: `{question, answer: [...]}` JSON Lines.
- TriviaQA / PopQA / Bamboogle (FlashRAG): `{id, question, golden_answers: [...]}`; PopQA also the
  original `{question, possible_answers}` (a JSON-literal string) with optional `paragraphs`
  (`[{title, text, is_supporting}]`, may be a literal string) -> a per-question corpus; Bamboogle
  also the original CSV `Question,Answer`.
- SimpleQA: CSV `metadata,problem,answer`.
- FRAMES: CSV/TSV with `Prompt,Answer` (plus wikipedia links and reasoning types).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentic_infer.tasks.base import Task, read_rows, simple_qa_loader
from agentic_infer.tasks.hotpotqa import QA_METRICS
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.corpus import parse_literal
from agentic_infer.tools.retrieval.recipes import pooled_id

ANSWER = ("golden_answers", "answer", "answers", "possible_answers", "Answer")


def popqa_corpus(example: Mapping[str, Any]) -> list[Document]:
    raw = example.get("raw", example)
    paras = parse_literal(raw.get("paragraphs") or [], what=f"PopQA {example.get('id')} paragraphs")
    return [Document(id=f"{example.get('id')}-{i}", title=str(p.get("title", "")), text=str(p.get("text", "")),
                     metadata={"is_supporting": bool(p.get("is_supporting"))}) for i, p in enumerate(paras)]


def popqa_pooled(path: Path) -> Iterator[Document]:
    seen: set[str] = set()
    for where, rec in read_rows(path, "PopQA with paragraphs"):
        for d in popqa_corpus({"id": where, "raw": rec}):
            pid = pooled_id(d.title, d.text)
            if pid not in seen:
                seen.add(pid)
                yield Document(id=pid, title=d.title, text=d.text)


def _qa(name: str, desc: str, fmt: str, files: tuple[str, ...], *, question=("question",), answer=ANSWER,
        aliases=(), **kw: Any) -> Task:
    return Task(name=name, family="qa", description=desc, data_format=fmt,
                loader=simple_qa_loader(name, fmt, question=question, answer=answer, aliases=aliases),
                metrics=QA_METRICS, primary="em", default_files=files, **kw)
