"""BM25 index over a corpus, built and stored with `bm25s`, queried in batches.

    from agentic_infer.tools.retrieval.bm25 import BM25Index
    idx = BM25Index.from_documents(docs)                 # in memory (per-question corpora)
    idx.search(["who directed Alien"], k=5)              # -> [[Hit, ...]]

Usually built and loaded through `index.build_index(..., kind="bm25")` / `index.load_index(dir)`,
which store the passages next to the arrays (see `docstore.py`) and write `meta.json`.

Text indexed: `title + "\\n" + text` (titles carry much of the signal on Wikipedia-style corpora),
tokenized by `Tokenizer` (bm25s rules: regex words, English stopwords, Snowball stemmer). Scores are
bm25s's eager "lucene" BM25 (k1=1.5, b=0.75). Queries are scored from the memory-mapped sparse
score matrix with one `np.bincount` per query (bm25s's numpy scorer loops `np.add.at` per token,
which is several times slower); the numbers are the same up to float rounding. Hits are sorted by
score, best first; only passages sharing at least one term with the query (score > 0) are returned,
so an empty or all-stopword query returns [] and `k` larger than the corpus returns every match.

Not covered: incremental updates, phrase or field queries, BM25L/BM25+ variants at query time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Document, Hit
from agentic_infer.tools.retrieval.docstore import AnyDocStore, DocStore, MemoryDocStore, topk_rows
from agentic_infer.tools.retrieval.tokenizer import Tokenizer

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int, "int | None"], None]
METHODS = ("lucene", "robertson", "atire")


def _import_bm25s():
    try:
        import bm25s
    except ImportError:
        raise ConfigError("the BM25 index needs bm25s: pip install 'agentic-infer[search]'") from None
    bm25s_log = logging.getLogger("bm25s")
    if bm25s_log.level == logging.DEBUG:  # bm25s forces DEBUG on import, which floods any root handler
        bm25s_log.setLevel(logging.WARNING)
    return bm25s


@dataclass(frozen=True)
class BM25Config:
    """BM25 parameters and the tokenizer settings (`Tokenizer` fields) used for corpus and queries."""

    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"
    index_title: bool = True
    tokenizer: dict[str, Any] = field(default_factory=lambda: Tokenizer().to_dict())

    def __post_init__(self) -> None:
        if not (isinstance(self.k1, (int, float)) and self.k1 >= 0):
            raise ConfigError(f"BM25 k1 must be a number >= 0, got {self.k1!r}")
        if not (isinstance(self.b, (int, float)) and 0 <= self.b <= 1):
            raise ConfigError(f"BM25 b must be in [0, 1], got {self.b!r}")
        if self.method not in METHODS:
            raise ConfigError(f"BM25 method {self.method!r} is not supported; use one of {METHODS}")
        Tokenizer.from_dict(dict(self.tokenizer))  # validates

    def to_dict(self) -> dict[str, Any]:
        return {
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "index_title": self.index_title,
            "tokenizer": dict(self.tokenizer),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Config:
        return cls(**data)


def passage_text(doc: Document, *, index_title: bool = True) -> str:
    return f"{doc.title}\n{doc.text}" if index_title and doc.title else doc.text


class BM25Index:
    """A BM25 `Retriever` + `DocumentStore`; see the module docstring."""

    kind = "bm25"
    meta: dict[str, Any] | None = None  # meta.json, set by index.load_index
    path: Path | None = None

    def __init__(
        self, *, store: AnyDocStore, model: Any, config: BM25Config, stats: dict[str, Any] | None = None
    ):
        self.store = store
        self.model = model
        self.config = config
        self.tokenizer = Tokenizer.from_dict(dict(config.tokenizer))
        self.stats = stats or {}
        self._vocab: dict[str, int] = model.vocab_dict
        scores = model.scores
        # plain ndarray views (still backed by the memory map): slicing np.memmap objects is slow
        self._data, self._indices, self._indptr = (np.asarray(scores[k]) for k in ("data", "indices", "indptr"))
        self._n_docs = int(scores["num_docs"])
        if self._n_docs != len(store):
            raise ConfigError(
                f"BM25 arrays cover {self._n_docs} passages but the corpus has {len(store)}; the index "
                "directory is inconsistent, rebuild it"
            )

    # -------------------------------------------------------------- building

    @classmethod
    def build(
        cls, store: AnyDocStore, *, config: BM25Config | None = None, progress: ProgressFn | None = None
    ) -> BM25Index:
        """Tokenize every passage of `store` and build the bm25s score matrix (in memory)."""
        bm25s = _import_bm25s()
        config = config or BM25Config()
        tok = Tokenizer.from_dict(dict(config.tokenizer))
        vocab: dict[str, int] = {}
        word_id: dict[str, int] = {}  # word -> term id, -1 for stopwords
        corpus_ids: list[list[int]] = []
        n_tokens = 0
        total = len(store)
        for i, doc in enumerate(store):
            words = tok.words(passage_text(doc, index_title=config.index_title))
            try:
                ids = [word_id[w] for w in words]
            except KeyError:
                for w in words:
                    if w not in word_id:
                        t = tok.term(w)
                        word_id[w] = -1 if t is None else vocab.setdefault(t, len(vocab))
                ids = [word_id[w] for w in words]
            ids = [x for x in ids if x >= 0]
            n_tokens += len(ids)
            corpus_ids.append(ids)
            if progress is not None and (i + 1) % 2000 == 0:
                progress("tokenize", i + 1, total)
        if progress is not None:
            progress("tokenize", total, total)
            progress("index", 0, None)
        if not vocab:
            raise ConfigError(
                f"none of the {total} passages has an indexable word (all stopwords or one-letter words "
                f"under tokenizer {tok.to_dict()}); check the text field"
            )
        model = bm25s.BM25(k1=config.k1, b=config.b, method=config.method)
        model.index((corpus_ids, vocab), show_progress=False)
        stats = {"vocab_size": len(vocab), "n_tokens": n_tokens, "avg_doc_tokens": n_tokens / max(total, 1)}
        return cls(store=store, model=model, config=config, stats=stats)

    @classmethod
    def from_documents(cls, docs: Iterable[Document], *, config: BM25Config | None = None) -> BM25Index:
        """An index held in memory only (nothing written); for small per-question corpora."""
        return cls.build(MemoryDocStore(docs), config=config)

    def save(self, directory: str | Path) -> dict[str, Any]:
        """Write the bm25s arrays and vocabulary into `directory`; returns the `bm25` meta section."""
        self.model.save(str(directory), corpus=None, show_progress=False)
        return {**self.config.to_dict(), **self.stats}

    @classmethod
    def load(
        cls,
        directory: str | Path,
        section: dict[str, Any],
        store: AnyDocStore | None = None,
        *,
        mmap: bool = True,
    ) -> BM25Index:
        """Load the arrays saved by `save` (memory-mapped); `section` is meta.json's `bm25` entry."""
        bm25s = _import_bm25s()
        directory = Path(directory)
        known = {"k1", "b", "method", "index_title", "tokenizer"}
        config = BM25Config.from_dict({k: v for k, v in section.items() if k in known})
        stats = {k: v for k, v in section.items() if k not in known}
        if not (directory / "params.index.json").is_file():
            raise ConfigError(f"{directory} has no BM25 arrays (params.index.json); rebuild the index")
        model = bm25s.BM25.load(str(directory), mmap=mmap, load_corpus=False, show_progress=False)
        return cls(
            store=store if store is not None else DocStore(directory), model=model, config=config, stats=stats
        )

    # -------------------------------------------------------------- querying

    def __len__(self) -> int:
        return self._n_docs

    def get(self, doc_id: str) -> Document | None:
        return self.store.get(doc_id)

    def query_ids(self, query: str) -> np.ndarray:
        vocab = self._vocab
        return np.fromiter((vocab[t] for t in self.tokenizer(query) if t in vocab), dtype=np.int64)

    def score(self, query: str) -> np.ndarray:
        """BM25 score of every passage for `query` (float64, length = corpus size)."""
        tids = self.query_ids(query)
        if tids.size == 0:
            return np.zeros(self._n_docs)
        starts, ends = self._indptr[tids], self._indptr[tids + 1]
        if tids.size == 1:
            sl = slice(int(starts[0]), int(ends[0]))
            rows, weights = self._indices[sl], self._data[sl]
        else:
            rows = np.concatenate([self._indices[s:e] for s, e in zip(starts, ends, strict=True)])
            weights = np.concatenate([self._data[s:e] for s, e in zip(starts, ends, strict=True)])
        return np.bincount(rows, weights=weights, minlength=self._n_docs)

    def search_rows(self, queries: list[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(rows, scores) of the top `k` matching passages of each query, best first."""
        _check_k(k)
        return [topk_rows(self.score(q), k, positive_only=True) for q in _check_queries(queries)]

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [self.store.hits(rows, scores) for rows, scores in self.search_rows(queries, k)]


def _check_k(k: int) -> None:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"k (number of results) must be a positive integer, got {k!r}")


def _check_queries(queries: list[str]) -> list[str]:
    if isinstance(queries, str):
        raise ConfigError(
            f"queries must be a list of strings, got a single string {queries[:60]!r}; wrap it in a list"
        )
    bad = [q for q in queries if not isinstance(q, str)]
    if bad:
        raise ConfigError(f"every query must be a string, got {type(bad[0]).__name__}: {str(bad[0])[:60]!r}")
    return list(queries)
