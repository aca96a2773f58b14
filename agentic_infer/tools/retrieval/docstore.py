"""Passage storage for the local indexes: a JSONL file read through mmap, plus an in-memory twin.

Layout of an index directory (shared by BM25, dense and hybrid indexes):

    corpus.jsonl          one {"id", "title", "text"[, "metadata"]} object per line, in row order
    corpus.offsets.npy    int64 byte offset of every line (n_docs + 1 entries), memory-mapped
    corpus.ids.json       the ids in row order (read lazily, on the first `get`)

`write_docstore(docs, dir)` streams documents to disk once (rejecting duplicate ids, skipping empty
passages) and returns a `CorpusInfo` (count, bytes, SHA-256). Opening a `DocStore(dir)` costs two
small reads; a row is decoded only when a search returns it, except that corpora up to 32 MiB are
decoded whole on the first search (about 0.1 s per 10 MB), since decoding JSON per hit would
otherwise cost more than the BM25 scoring itself. `MemoryDocStore(docs)` offers the same
methods for indexes built in memory (per-question corpora in evals).

Not covered: updates or deletes (rebuild the index), compression.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Document, Hit

log = logging.getLogger(__name__)

CORPUS_FILE = "corpus.jsonl"
OFFSETS_FILE = "corpus.offsets.npy"
IDS_FILE = "corpus.ids.json"
PRELOAD_MAX_BYTES = 32 << 20  # corpora up to this size are decoded once, on the first search


@dataclass(frozen=True)
class CorpusInfo:
    """What was written: number of passages, bytes of corpus.jsonl, its SHA-256, skipped empties."""

    n_docs: int
    n_bytes: int
    sha256: str
    n_skipped_empty: int = 0


def _encode(doc: Document) -> bytes:
    rec: dict[str, Any] = {"id": doc.id, "title": doc.title, "text": doc.text}
    if doc.metadata:
        rec["metadata"] = doc.metadata
    return (json.dumps(rec, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _decode(line: bytes) -> Document:
    rec = json.loads(line)
    return Document(rec["id"], rec["title"], rec["text"], rec.get("metadata") or {})


def write_docstore(
    docs: Iterable[Document], directory: str | Path, *, on_doc: Callable[[int], None] | None = None
) -> CorpusInfo:
    """Write `docs` under `directory` (created); duplicate ids raise ConfigError, empty texts are skipped."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    offsets = [0]
    ids: list[str] = []
    seen: set[str] = set()
    skipped = 0
    sha = hashlib.sha256()
    pos = 0
    with open(directory / CORPUS_FILE, "wb") as f:
        for doc in docs:
            if not isinstance(doc, Document):
                raise ConfigError(
                    f"corpus items must be Document objects, got {type(doc).__name__}: {str(doc)[:80]!r}"
                )
            if not doc.text.strip():
                skipped += 1
                continue
            if doc.id in seen:
                raise ConfigError(
                    f"duplicate document id {doc.id!r} in the corpus; ids must be unique "
                    "(fix the source, or drop the id field so rows are numbered)"
                )
            seen.add(doc.id)
            line = _encode(doc)
            f.write(line)
            sha.update(line)
            pos += len(line)
            offsets.append(pos)
            ids.append(doc.id)
            if on_doc is not None:
                on_doc(len(ids))
    if not ids:
        raise ConfigError(
            "the corpus is empty (no passage with non-empty text); check the corpus path and format"
        )
    if skipped:
        log.warning("skipped %d passages with empty text", skipped)
    np.save(directory / OFFSETS_FILE, np.asarray(offsets, dtype=np.int64))
    (directory / IDS_FILE).write_text(json.dumps(ids, ensure_ascii=False), encoding="utf-8")
    return CorpusInfo(n_docs=len(ids), n_bytes=pos, sha256=sha.hexdigest(), n_skipped_empty=skipped)


class DocStore:
    """Read-only passages of an index directory; rows are decoded on demand from an mmap."""

    def __init__(self, directory: str | Path, *, preload_max_bytes: int = PRELOAD_MAX_BYTES):
        self.directory = Path(directory)
        self.preload_max_bytes = preload_max_bytes
        path = self.directory / CORPUS_FILE
        if not path.is_file() or not (self.directory / OFFSETS_FILE).is_file():
            raise ConfigError(
                f"{self.directory} has no {CORPUS_FILE} + {OFFSETS_FILE}; it is not an index directory "
                "(build one with `agentic index build`)"
            )
        # a plain ndarray view of the memory map: scalar indexing of np.memmap is several times slower
        self._offsets = np.asarray(np.load(self.directory / OFFSETS_FILE, mmap_mode="r"))
        with open(path, "rb") as f:
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._row_of: dict[str, int] | None = None
        self._rows: list[tuple[str, str, str]] | None = None  # (id, title, text) once preloaded

    def _preloaded(self) -> list[tuple[str, str, str]] | None:
        """All rows decoded once, for corpora up to `preload_max_bytes` (JSON decoding dominates hits)."""
        if self._rows is None and len(self._mm) <= self.preload_max_bytes:
            loads = json.loads
            self._rows = [(r["id"], r["title"], r["text"]) for r in map(loads, self._mm[:].splitlines())]
        return self._rows

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def doc(self, row: int) -> Document:
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return _decode(self._mm[start:end])

    def ids(self) -> list[str]:
        return json.loads((self.directory / IDS_FILE).read_text(encoding="utf-8"))

    def row_of(self, doc_id: str) -> int | None:
        if self._row_of is None:
            self._row_of = {d: i for i, d in enumerate(self.ids())}
        return self._row_of.get(doc_id)

    def get(self, doc_id: str) -> Document | None:
        row = self.row_of(doc_id)
        return None if row is None else self.doc(row)

    def __iter__(self) -> Iterator[Document]:
        for row in range(len(self)):
            yield self.doc(row)

    def hits(self, rows: Sequence[int], scores: Sequence[float]) -> list[Hit]:
        table = self._preloaded()
        if table is not None:
            return [Hit(*table[r], s) for r, s in zip(np.asarray(rows).tolist(), np.asarray(scores).tolist(),
                                                      strict=True)]
        rows = np.asarray(rows, dtype=np.int64)
        starts, ends = self._offsets[rows].tolist(), self._offsets[rows + 1].tolist()
        mm, loads = self._mm, json.loads
        out = []
        for start, end, score in zip(starts, ends, np.asarray(scores).tolist(), strict=True):
            rec = loads(mm[start:end])
            out.append(Hit(rec["id"], rec["title"], rec["text"], score))
        return out


class MemoryDocStore:
    """The `DocStore` interface over a list of documents held in memory (ids must be unique)."""

    def __init__(self, docs: Iterable[Document]):
        self._docs = [d for d in docs if d.text.strip()]
        self._row_of = {}
        for i, d in enumerate(self._docs):
            if d.id in self._row_of:
                raise ConfigError(f"duplicate document id {d.id!r}; ids must be unique")
            self._row_of[d.id] = i
        if not self._docs:
            raise ConfigError("the corpus is empty (no passage with non-empty text)")

    def __len__(self) -> int:
        return len(self._docs)

    def doc(self, row: int) -> Document:
        return self._docs[row]

    def ids(self) -> list[str]:
        return [d.id for d in self._docs]

    def row_of(self, doc_id: str) -> int | None:
        return self._row_of.get(doc_id)

    def get(self, doc_id: str) -> Document | None:
        row = self._row_of.get(doc_id)
        return None if row is None else self._docs[row]

    def __iter__(self) -> Iterator[Document]:
        return iter(self._docs)

    def hits(self, rows: Sequence[int], scores: Sequence[float]) -> list[Hit]:
        return [
            Hit(d.id, d.title, d.text, float(s))
            for d, s in ((self._docs[int(r)], s) for r, s in zip(rows, scores, strict=True))
        ]


AnyDocStore = DocStore | MemoryDocStore


def topk_rows(scores: np.ndarray, k: int, *, positive_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the `k` best scores, best first (ties: lower row first); optionally only scores > 0."""
    cand = np.flatnonzero(scores > 0) if positive_only else np.arange(scores.shape[0])
    if k <= 0 or cand.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=scores.dtype)
    if k < cand.size:
        cand = cand[np.argpartition(-scores[cand], k - 1)[:k]]
    rows = cand[np.lexsort((cand, -scores[cand]))]
    return rows, scores[rows]
