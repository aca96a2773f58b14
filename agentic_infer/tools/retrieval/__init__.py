"""Corpora, local search indexes (BM25, dense, hybrid), the retrieval server and its client."""

from agentic_infer.tools.retrieval.base import Document, DocumentStore, Hit, Retriever

__all__ = ["Document", "DocumentStore", "Hit", "Retriever"]
