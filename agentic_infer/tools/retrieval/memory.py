"""A small, dependency-free BM25 retriever over an in-memory list of Documents.

`InMemoryRetriever(documents)` implements both `Retriever` (`search(queries, k)`) and
`DocumentStore` (`get(doc_id)`, plus `get_by_title(title)`), so it can back the retrieval server,
an engine or a test directly:

    from agentic_infer.tools.retrieval import Document
    from agentic_infer.tools.retrieval.memory import InMemoryRetriever

    r = InMemoryRetriever([Document("1", "Paris", "Paris is the capital of France.")])
    r.search(["capital of France"], k=3)   # -> [[Hit(id="1", ...)]]

Scoring is Okapi BM25 (k1=1.5, b=0.75) over lower-cased word tokens of `title + text` with a tiny
English stop-word list; ties are broken by corpus order, so results are deterministic.

What it does not cover: stemming, phrase queries, persistence and large corpora (it scores with
pure-Python inverted lists; use the bm25s-backed index from `agentic_infer.tools.retrieval.index`
for anything beyond a few tens of thousands of passages).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Document, Hit

__all__ = ["InMemoryRetriever", "tokenize"]

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have he her his in is it its of on or she that the their "
    "they this to was were which who will with what when where how did does do".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of `text`, stop words removed."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


class InMemoryRetriever:
    """BM25 over a list of `Document`s held in memory; also a `DocumentStore`.

    Raises `ConfigError` on duplicate document ids or invalid BM25 parameters.
    """

    def __init__(self, documents: Iterable[Document], *, k1: float = 1.5, b: float = 0.75) -> None:
        if k1 < 0:
            raise ConfigError(f"k1 must be >= 0, got {k1!r}; BM25 uses 1.2-2.0")
        if not 0.0 <= b <= 1.0:
            raise ConfigError(f"b must be in [0, 1], got {b!r}; BM25 uses 0.75")
        self.k1 = k1
        self.b = b
        self._docs: list[Document] = []
        self._by_id: dict[str, int] = {}
        self._by_title: dict[str, int] = {}
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths: list[int] = []
        for doc in documents:
            if not isinstance(doc, Document):
                raise ConfigError(
                    f"InMemoryRetriever takes Document objects, got {type(doc).__name__}: {doc!r:.80}"
                )
            if doc.id in self._by_id:
                raise ConfigError(f"duplicate document id {doc.id!r}; ids must be unique in a corpus")
            index = len(self._docs)
            self._docs.append(doc)
            self._by_id[doc.id] = index
            self._by_title.setdefault(doc.title.casefold(), index)
            counts = Counter(tokenize(f"{doc.title} {doc.text}"))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                postings[term].append((index, tf))
        self._postings = dict(postings)
        self._lengths = lengths
        self._avg_length = (sum(lengths) / len(lengths)) if lengths else 0.0
        n = len(self._docs)
        self._idf = {
            term: math.log(1.0 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            for term, plist in self._postings.items()
        }

    def __len__(self) -> int:
        return len(self._docs)

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-`k` hits per query, best first; a query with no known word gets `[]`."""
        if isinstance(queries, str):
            raise ConfigError(
                f"queries must be a list of strings, got one string {queries!r:.80}; wrap it in a list"
            )
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        return [self._search_one(query, k) for query in queries]

    def _search_one(self, query: str, k: int) -> list[Hit]:
        scores: dict[int, float] = defaultdict(float)
        avg = self._avg_length or 1.0
        for term in set(tokenize(query)):
            plist = self._postings.get(term)
            if plist is None:
                continue
            idf = self._idf[term]
            for index, tf in plist:
                norm = tf + self.k1 * (1.0 - self.b + self.b * self._lengths[index] / avg)
                scores[index] += idf * tf * (self.k1 + 1.0) / norm
        best = heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], item[0]))
        return [
            Hit(id=self._docs[i].id, title=self._docs[i].title, text=self._docs[i].text, score=score)
            for i, score in best
        ]

    def get(self, doc_id: str) -> Document | None:
        """The document with this id, or None."""
        index = self._by_id.get(doc_id)
        return None if index is None else self._docs[index]

    def get_by_title(self, title: str) -> Document | None:
        """The first document whose title equals `title` (case-insensitive), or None."""
        index = self._by_title.get(title.casefold())
        return None if index is None else self._docs[index]
