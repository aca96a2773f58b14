"""Hybrid retrieval: reciprocal-rank fusion (RRF) of a BM25 and a dense index over one corpus.

    idx = HybridIndex(bm25=BM25Index.from_documents(docs), dense=DenseIndex.from_documents(docs))
    idx.search(["who directed Alien"], k=5)

For each query both indexes return their top `max(k, candidates)` passages; a passage's fused
score is sum over the lists that contain it of `1 / (rrf_k + rank)` (rank from 1, rrf_k = 60 as in
Cormack et al. 2009). Ties go to the passage with the best rank in any single list (BM25's
list first when equal), then to the lower row. Both parts must index
the same passages in the same row order (the index directory shares one `corpus.jsonl`).

Not covered: weighted or score-based fusion, more than two retrievers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Document, Hit
from agentic_infer.tools.retrieval.bm25 import BM25Index, _check_k, _check_queries
from agentic_infer.tools.retrieval.dense import DenseIndex


def rrf_fuse(ranked_lists: list[np.ndarray], k: int, *, rrf_k: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Fuse lists of rows (each best first) into the top `k` (rows, fused scores), best first."""
    fused: dict[int, float] = {}
    best: dict[int, tuple[int, int]] = {}  # row -> (best rank in any list, index of that list)
    for li, rows in enumerate(ranked_lists):
        for rank, row in enumerate(rows.tolist(), 1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (rrf_k + rank)
            if row not in best or rank < best[row][0]:
                best[row] = (rank, li)
    order = sorted(fused, key=lambda r: (-fused[r], best[r], r))[:k]
    return np.asarray(order, dtype=np.int64), np.asarray([fused[r] for r in order], dtype=np.float64)


class HybridIndex:
    """RRF of `bm25` and `dense`; a `Retriever` + `DocumentStore`."""

    kind = "hybrid"
    meta: dict[str, Any] | None = None  # meta.json, set by index.load_index
    path: Path | None = None

    def __init__(self, *, bm25: BM25Index, dense: DenseIndex, rrf_k: int = 60, candidates: int = 100):
        if len(bm25) != len(dense):
            raise ConfigError(
                f"hybrid parts disagree: BM25 has {len(bm25)} passages, dense has {len(dense)}; rebuild the index"
            )
        if not isinstance(rrf_k, int) or rrf_k < 1:
            raise ConfigError(f"rrf_k must be a positive integer, got {rrf_k!r}")
        if not isinstance(candidates, int) or candidates < 1:
            raise ConfigError(f"hybrid candidates must be a positive integer, got {candidates!r}")
        self.bm25 = bm25
        self.dense = dense
        self.store = bm25.store
        self.rrf_k = rrf_k
        self.candidates = candidates

    def __len__(self) -> int:
        return len(self.bm25)

    def get(self, doc_id: str) -> Document | None:
        return self.store.get(doc_id)

    def search_rows(self, queries: list[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        _check_k(k)
        queries = _check_queries(queries)
        depth = max(k, self.candidates)
        lex = self.bm25.search_rows(queries, depth)
        sem = self.dense.search_rows(queries, depth)
        return [rrf_fuse([b[0], d[0]], k, rrf_k=self.rrf_k) for b, d in zip(lex, sem, strict=True)]

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [self.store.hits(rows, scores) for rows, scores in self.search_rows(queries, k)]
