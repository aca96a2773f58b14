"""Build an index directory from a corpus, and load any index directory back.

    from agentic_infer.tools.retrieval.index import build_index, load_index
    build_index("wiki-vital", kind="bm25", out="indexes/wiki")      # recipe name, path, or Documents
    idx = load_index("indexes/wiki")                                 # BM25Index | DenseIndex | HybridIndex
    idx.search(["capital of Australia"], k=3); idx.get("Canberra")

Directory layout: `meta.json` (kind, format version, corpus name/SHA-256/size, index settings,
build time), the passages (`corpus.jsonl` + offsets + ids, see `docstore.py`) and the index arrays.
A hybrid index keeps one corpus at the top and its parts in `bm25/` and `dense/`; each part has
its own `meta.json` (with `corpus.dir = ".."`), so a part loads on its own too. Building writes
into a temporary sibling directory and renames it into place, so a failed build leaves nothing
half-written; an existing non-empty `out` is replaced only with `overwrite=True`.

Not covered: merging or updating indexes; remote indexes (see `client.py`).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.bm25 import BM25Config, BM25Index
from agentic_infer.tools.retrieval.corpus import FieldMap
from agentic_infer.tools.retrieval.dense import DenseConfig, DenseIndex
from agentic_infer.tools.retrieval.docstore import DocStore, write_docstore
from agentic_infer.tools.retrieval.hybrid import HybridIndex

log = logging.getLogger(__name__)

KINDS = ("bm25", "dense", "hybrid")
META_FILE = "meta.json"
FORMAT = "agentic-infer-index"
FORMAT_VERSION = 1
Index = BM25Index | DenseIndex | HybridIndex
ProgressFn = Callable[[str, int, "int | None"], None]


def _version() -> str:
    from agentic_infer import __version__

    return __version__


def read_meta(directory: str | Path) -> dict[str, Any]:
    """The parsed `meta.json` of an index directory; ConfigError when missing or not ours."""
    directory = Path(directory)
    if not directory.exists():
        raise ConfigError(
            f"index directory {str(directory)!r} does not exist; build it with `agentic index build`"
        )
    if not directory.is_dir():
        raise ConfigError(f"index path {str(directory)!r} is a file, not an index directory")
    path = directory / META_FILE
    if not path.is_file():
        raise ConfigError(
            f"{str(directory)!r} has no {META_FILE}: it is not an index directory (build one with `agentic index build`)"
        )
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path} is not valid JSON ({e}); rebuild the index") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ConfigError(f"{path} is not an agentic-infer index meta file (format != {FORMAT!r})")
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise ConfigError(
            f"{path} has format_version {meta.get('format_version')}, newer than this agentic-infer "
            f"understands ({FORMAT_VERSION}); upgrade agentic-infer"
        )
    if meta.get("kind") not in KINDS:
        raise ConfigError(f"{path}: unknown index kind {meta.get('kind')!r}; expected one of {KINDS}")
    return meta


def _write_meta(directory: Path, meta: dict[str, Any]) -> None:
    (directory / META_FILE).write_text(
        json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def build_index(
    corpus: str | Path | Iterable[Document],
    *,
    out: str | Path,
    kind: str = "bm25",
    name: str | None = None,
    chunk_words: int | None = None,
    fields: FieldMap | None = None,
    bm25: BM25Config | None = None,
    dense: DenseConfig | None = None,
    rrf_k: int = 60,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
) -> Index:
    """Build a `kind` index of `corpus` (recipe name, path, or Documents) in `out`; returns it loaded.

    `progress(stage, done, total)` is called with stages "corpus", "tokenize", "index", "embed",
    "save". Raises ConfigError for an unknown kind, an empty or malformed corpus, duplicate ids, or
    an existing non-empty `out` without `overwrite`.
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown index kind {kind!r}; use one of {', '.join(KINDS)}")
    if kind == "hybrid" and (not isinstance(rrf_k, int) or rrf_k < 1):
        raise ConfigError(f"rrf_k must be a positive integer, got {rrf_k!r}")
    out = Path(out).expanduser()
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise ConfigError(
            f"output {str(out)!r} already exists and is not empty; choose another --out or pass --overwrite (overwrite=True)"
        )
    if isinstance(corpus, (str, Path)):
        from agentic_infer.tools.retrieval.recipes import resolve_corpus

        corpus_name, docs = resolve_corpus(corpus, fields=fields, chunk_words=chunk_words)
    else:
        from agentic_infer.tools.retrieval.corpus import chunk_documents

        corpus_name, docs = "documents", iter(corpus)
        if chunk_words:
            docs = chunk_documents(docs, max_words=chunk_words)
    name = name or corpus_name

    t0 = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        info = write_docstore(
            docs,
            tmp,
            on_doc=(lambda n: progress("corpus", n, None) if n % 1000 == 0 else None) if progress else None,
        )
        if progress:
            progress("corpus", info.n_docs, info.n_docs)
        store = DocStore(tmp)
        t_corpus = time.perf_counter() - t0
        base = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kind": kind,
            "corpus": {
                "name": name,
                "sha256": info.sha256,
                "n_docs": info.n_docs,
                "n_bytes": info.n_bytes,
                "n_skipped_empty": info.n_skipped_empty,
                "chunk_words": chunk_words,
                "dir": ".",
            },
            "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "agentic_infer_version": _version(),
        }
        timings = {"corpus_s": round(t_corpus, 3)}
        sections: dict[str, Any] = {}
        for part, cls, config in (("bm25", BM25Index, bm25), ("dense", DenseIndex, dense)):
            if kind not in (part, "hybrid"):
                continue
            t = time.perf_counter()
            built = cls.build(store, config=config, progress=progress)
            part_dir = tmp / part if kind == "hybrid" else tmp  # a hybrid index holds both in subfolders
            part_dir.mkdir(exist_ok=True)
            sections[part] = built.save(part_dir)
            timings[f"{part}_s"] = round(time.perf_counter() - t, 3)
        if progress:
            progress("save", 0, None)
        if kind == "hybrid":
            for part in ("bm25", "dense"):
                _write_meta(
                    tmp / part,
                    {**base, "kind": part, "corpus": {**base["corpus"], "dir": ".."}, part: sections[part]},
                )
            sections["hybrid"] = {"rrf_k": rrf_k, "candidates": 100, "parts": ["bm25", "dense"]}
        timings["total_s"] = round(time.perf_counter() - t0, 3)
        _write_meta(tmp, {**base, **sections, "build": timings})
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("built %s index of %d passages in %s (%.1fs)", kind, info.n_docs, out, timings["total_s"])
    return load_index(out)


def load_index(path: str | Path, *, mmap: bool = True) -> Index:
    """Load the index in directory `path` (kind from its meta.json); arrays are memory-mapped."""
    directory = Path(path).expanduser()
    meta = read_meta(directory)
    kind = meta["kind"]
    corpus_dir = (directory / meta.get("corpus", {}).get("dir", ".")).resolve()
    store = DocStore(corpus_dir)
    n_docs = meta.get("corpus", {}).get("n_docs")
    if n_docs is not None and n_docs != len(store):
        raise ConfigError(
            f"{directory}: meta.json says {n_docs} passages but corpus.jsonl has {len(store)}; rebuild"
        )
    idx: Index
    if kind == "bm25":
        idx = BM25Index.load(directory, _section(meta, "bm25", directory), store, mmap=mmap)
    elif kind == "dense":
        idx = DenseIndex.load(directory, _section(meta, "dense", directory), store, mmap=mmap)
    else:
        h = _section(meta, "hybrid", directory)
        bm = BM25Index.load(directory / "bm25", _section(meta, "bm25", directory), store, mmap=mmap)
        de = DenseIndex.load(directory / "dense", _section(meta, "dense", directory), store, mmap=mmap)
        idx = HybridIndex(
            bm25=bm, dense=de, rrf_k=int(h.get("rrf_k", 60)), candidates=int(h.get("candidates", 100))
        )
    idx.meta = meta
    idx.path = directory
    return idx


def _section(meta: dict[str, Any], name: str, directory: Path) -> dict[str, Any]:
    sec = meta.get(name)
    if not isinstance(sec, dict):
        raise ConfigError(
            f"{directory}/{META_FILE} has no {name!r} section; the index is damaged, rebuild it"
        )
    return sec
