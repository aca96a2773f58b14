"""InMemoryRetriever: a real BM25 over a handful of passages; Retriever + DocumentStore contract."""

from __future__ import annotations

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval import Document, DocumentStore, Hit, Retriever
from agentic_infer.tools.retrieval.memory import InMemoryRetriever, tokenize
from tests.sample_docs import SAMPLE_DOCS

DOCS = SAMPLE_DOCS


def test_is_a_retriever_and_a_document_store() -> None:
    r = InMemoryRetriever(DOCS)
    assert isinstance(r, Retriever) and isinstance(r, DocumentStore)
    assert len(r) == len(DOCS)


def test_ranks_the_relevant_passage_first_and_is_batched() -> None:
    r = InMemoryRetriever(DOCS)
    out = r.search(["capital of Australia", "who wrote the novel Dune", "zzzz unknown"], k=2)
    assert [h.id for h in out[0]][0] == "canberra"
    assert out[1][0].id in ("dune", "herbert")
    assert out[2] == []
    assert all(isinstance(h, Hit) for hits in out for h in hits)
    assert out[0][0].score >= out[0][1].score > 0


def test_k_limits_and_ties_are_deterministic() -> None:
    r = InMemoryRetriever(DOCS)
    assert len(r.search(["Australia"], k=1)[0]) == 1
    # four passages that score exactly the same for "harbour": ties come back in corpus order
    names = ["Alpha", "Beta", "Gamma", "Delta"]
    tied = [Document(f"d{i}", f"Port {name}", "A harbour town.") for i, name in enumerate(names)]
    forward = InMemoryRetriever(tied).search(["harbour"], k=4)[0]
    assert len({h.score for h in forward}) == 1 and forward[0].score > 0  # a real tie
    assert [h.id for h in forward] == ["d0", "d1", "d2", "d3"]
    backward = InMemoryRetriever(tied[::-1]).search(["harbour"], k=4)[0]
    assert [h.id for h in backward] == ["d3", "d2", "d1", "d0"]  # the order is the corpus's, not the ids'
    assert [h.id for h in InMemoryRetriever(tied).search(["harbour"], k=1)[0]] == ["d0"]
    assert [h.id for h in InMemoryRetriever(tied[::-1]).search(["harbour"], k=1)[0]] == ["d3"]


def test_get_and_get_by_title() -> None:
    r = InMemoryRetriever(DOCS)
    assert r.get("ottawa") == DOCS[2]
    assert r.get("nope") is None
    assert r.get_by_title("dune (NOVEL)") == DOCS[3]
    assert r.get_by_title("Nope") is None


def test_bad_input_is_a_config_error_naming_the_value() -> None:
    with pytest.raises(ConfigError, match="duplicate document id 'a'"):
        InMemoryRetriever([Document("a", "", "x"), Document("a", "", "y")])
    r = InMemoryRetriever(DOCS)
    with pytest.raises(ConfigError, match="k must be a positive integer, got 0"):
        r.search(["x"], k=0)
    with pytest.raises(ConfigError, match="list of strings"):
        r.search("capital", k=1)  # type: ignore[arg-type]


def test_tokenize_drops_stopwords_and_case() -> None:
    assert tokenize("The Capital of FRANCE, is Paris!") == ["capital", "france", "paris"]
