"""The retrieval contract every index, client and engine agrees on.

`Retriever` is a structural protocol: any object with
`search(queries: list[str], k: int) -> list[list[Hit]]` works as a retriever everywhere in the
toolkit (engines, the retrieval server, benchmarks). Indexes built by this package also implement
`DocumentStore` (`get(doc_id)`), which the server's `/access` endpoint uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Document:
    """One passage of a corpus: stable id, title (may be empty) and text."""

    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def contents(self) -> str:
        """Search-R1's `contents` field: `"Title"\\ntext`."""
        return f'"{self.title}"\n{self.text}'


@dataclass(frozen=True)
class Hit:
    """One search result: the passage and its retrieval score (higher is better)."""

    id: str
    title: str
    text: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "text": self.text, "score": self.score}


@runtime_checkable
class Retriever(Protocol):
    def search(self, queries: list[str], k: int) -> list[list[Hit]]: ...


@runtime_checkable
class DocumentStore(Protocol):
    def get(self, doc_id: str) -> Document | None: ...
