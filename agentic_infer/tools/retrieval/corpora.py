"""One corpus -> retriever factory for every entry point (`agentic run`, eval, synth, GRPO, tree search).

    retriever_for = retriever_factory(corpus="per-question", task=get_task("hotpotqa"), data=path)
    retriever = retriever_for(example)          # a Retriever: `search(query, k)`, `get(doc_id)`

Sources (give at most one): `index` (a built index directory, `agentic index build`), `url` (a Search-R1-style
`/retrieve` server), or `corpus`, one of `CORPORA`: `per-question` (each example's own paragraphs through the
task's `question_corpus`, a BM25 index per example), `pooled` (the task's `pooled_corpus` recipe over the data
file, one BM25 index), `wiki-vital` (the embedded Wikipedia index, built once). `default="wiki-vital"` makes a
source-less call return the embedded index (what `agentic run` and GRPO do); without it a source-less call
returns None (an engine that needs no retriever).
Not covered: hybrid or dense indexes built on the fly (build them with `agentic index build`, pass `index`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError

CORPORA = ("per-question", "pooled", "wiki-vital")
RetrieverFor = Callable[[Mapping[str, Any]], Any]


def check_source(*, index: str | Path | None = None, corpus: str | None = None, url: str | None = None) -> None:
    """A ConfigError unless at most one source is given and `corpus` is one of CORPORA."""
    given = [name for name, v in (("--index", index), ("--corpus", corpus), ("--retriever-url", url)) if v]
    if len(given) > 1:
        raise ConfigError(f"give {' or '.join(given)}, not {'both' if len(given) == 2 else 'several'}")
    if corpus is not None and corpus not in CORPORA:
        raise ConfigError(f"--corpus {corpus!r}: choose one of {', '.join(CORPORA)}")


def retriever_factory(*, index: str | Path | None = None, corpus: str | None = None, url: str | None = None,
                      task: Any = None, data: str | Path | None = None, default: str | None = None,
                      on_build: Callable[[str], None] | None = None) -> RetrieverFor | None:
    """`example -> retriever` for the given source (see the module docstring); `on_build` hears when the
    embedded index is built."""
    check_source(index=index, corpus=corpus, url=url)
    if not (index or corpus or url):
        corpus = default
    if index:
        from agentic_infer.tools.retrieval.index import load_index

        loaded = load_index(index)
        return lambda ex: loaded
    if url:
        from agentic_infer.tools.retrieval.client import RemoteRetriever

        remote = RemoteRetriever(url)
        return lambda ex: remote
    if corpus is None:
        return None
    if corpus == "per-question":
        return _per_question(task)
    if corpus == "pooled":
        if task is None or task.pooled_corpus is None:
            raise ConfigError(f"task {getattr(task, 'name', None)!r} has no pooled corpus recipe; use --corpus "
                              "wiki-vital or --index")
        if not data:
            raise ConfigError("--corpus pooled pools the data file's paragraphs: give the data file")
        from agentic_infer.tools.retrieval.bm25 import BM25Index

        pooled = BM25Index.from_documents(list(task.pooled_corpus(Path(data))))
        return lambda ex: pooled
    from agentic_infer.tools.retrieval.default_index import ensure_default_index
    from agentic_infer.tools.retrieval.index import load_index

    vital = load_index(ensure_default_index(on_build))
    return lambda ex: vital


def _per_question(task: Any) -> RetrieverFor:
    if task is None or task.question_corpus is None:
        raise ConfigError(f"task {getattr(task, 'name', None)!r} has no per-question paragraphs; use --corpus "
                          "pooled|wiki-vital or --index")
    from agentic_infer.tools.retrieval.bm25 import BM25Index

    def per_question(ex: Mapping[str, Any]) -> Any:
        docs = task.question_corpus(ex)
        if not docs:
            raise ConfigError(f"{task.name} question {ex.get('id')!r} has no paragraphs for --corpus per-question")
        return BM25Index.from_documents(docs)

    return per_question
