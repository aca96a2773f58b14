"""BM25 index: tokenizer parity with bm25s, build/save/load/query on the real HotpotQA train corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")

from agentic_infer.errors import ConfigError  # noqa: E402
from agentic_infer.tools.retrieval.base import Document, DocumentStore, Hit, Retriever  # noqa: E402
from agentic_infer.tools.retrieval.bm25 import BM25Config, BM25Index, passage_text  # noqa: E402
from agentic_infer.tools.retrieval.index import build_index, load_index  # noqa: E402
from agentic_infer.tools.retrieval.recipes import read_records  # noqa: E402
from agentic_infer.tools.retrieval.tokenizer import Tokenizer  # noqa: E402
from tests.conftest import shared_data  # noqa: E402

data_file = shared_data


@pytest.fixture(scope="module")
def hotpot_index(tmp_path_factory):
    out = tmp_path_factory.mktemp("idx") / "hotpot"
    build_index(data_file("multihop/hotpotqa_train_100_corpus.json"), kind="bm25", out=out)
    return out


def test_tokenizer_matches_bm25s_tokenize():
    import bm25s
    import Stemmer

    texts = ["The Cats were RUNNING to the houses' doors in 1999!", "a an the", "", "Émile Zola's novels, e.g. Nana"]
    theirs = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False,
                            show_progress=False)
    assert Tokenizer().batch(texts) == theirs
    assert Tokenizer()("cats running") == ["cat", "run"]
    assert Tokenizer(stemmer=None, stopwords=None)("The cats") == ["the", "cats"]
    with pytest.raises(ConfigError, match="unknown stopword list"):
        Tokenizer(stopwords="klingon")
    with pytest.raises(ConfigError, match="no stemmer for language"):
        Tokenizer(stemmer="klingon")
    assert Tokenizer.from_dict(Tokenizer().to_dict()) == Tokenizer()


def test_gold_paragraphs_retrieved_for_hotpot_train_questions(hotpot_index):
    idx = load_index(hotpot_index)
    assert isinstance(idx, BM25Index) and isinstance(idx, Retriever) and isinstance(idx, DocumentStore)
    assert len(idx) == 994
    questions = read_records(data_file("multihop/hotpotqa_train_100.json"))[:20]
    results = idx.search([q["question"] for q in questions], 10)
    assert len(results) == 20
    found = 0
    for q, hits in zip(questions, results, strict=True):
        gold = {t for t, _ in q["supporting_facts"]}
        found += len(gold & {h.title for h in hits}) / len(gold)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        assert all(isinstance(h, Hit) and h.text for h in hits)
    assert found / 20 > 0.8  # recall@10 of gold titles
    # the first question: "If Gallu is a demon Lilu is what?" -> both gold paragraphs on top
    top2 = {h.title for h in idx.search([questions[0]["question"]], 2)[0]}
    assert top2 == {"Alû", "Lilu (mythology)"}


def test_loaded_index_is_memory_mapped_and_matches_raw_bm25s(hotpot_index):
    import bm25s
    import Stemmer

    idx = load_index(hotpot_index)
    assert isinstance(idx.model.scores["data"], np.memmap)
    docs = list(idx.store)
    raw = bm25s.BM25()
    stem = Stemmer.Stemmer("english")
    raw.index(bm25s.tokenize([passage_text(d) for d in docs], stopwords="en", stemmer=stem, show_progress=False),
              show_progress=False)
    queries = ["Which Canadian rock band released Counterparts?", "demon mythology Akkadian", "film director born 1968"]
    res = raw.retrieve(bm25s.tokenize(queries, stopwords="en", stemmer=stem, show_progress=False), k=5,
                       show_progress=False)
    ours = idx.search(queries, 5)
    for hits, rows, scores in zip(ours, res.documents, res.scores, strict=True):
        assert [h.id for h in hits] == [docs[int(r)].id for r in rows]
        np.testing.assert_allclose([h.score for h in hits], scores, rtol=1e-5)


def test_edge_cases_k_larger_than_corpus_empty_and_stopword_queries(hotpot_index):
    idx = load_index(hotpot_index)
    everything = idx.search(["the film"], 100_000)[0]
    assert 0 < len(everything) <= 994 and len({h.id for h in everything}) == len(everything)
    assert idx.search(["", "the of and", "zzqxv unknownword"], 5) == [[], [], []]
    assert idx.search([], 5) == []
    with pytest.raises(ConfigError, match="positive integer"):
        idx.search(["x"], 0)
    with pytest.raises(ConfigError, match="single string"):
        idx.search("who", 3)  # type: ignore[arg-type]


def test_get_by_id(hotpot_index):
    idx = load_index(hotpot_index)
    doc = idx.get("Demon Dice")
    assert doc is not None and doc.title == "Demon Dice" and doc.text.startswith("Demon Dice, originally")
    assert idx.get("no such id") is None


def test_meta_json_records_kind_corpus_and_tokenizer(hotpot_index):
    meta = json.loads((hotpot_index / "meta.json").read_text())
    assert meta["kind"] == "bm25" and meta["format_version"] == 1
    assert meta["corpus"]["n_docs"] == 994 and len(meta["corpus"]["sha256"]) == 64
    assert meta["corpus"]["name"].endswith("hotpotqa_train_100_corpus.json")
    assert meta["bm25"]["tokenizer"] == {"lower": True, "pattern": r"(?u)\b\w\w+\b", "stopwords": "en",
                                         "stemmer": "english"}
    assert meta["bm25"]["vocab_size"] > 5000 and meta["build"]["total_s"] > 0


def test_in_memory_index_and_config_validation():
    docs = [Document("1", "Paris", "Paris is the capital of France."),
            Document("2", "Berlin", "Berlin is the capital of Germany."),
            Document("3", "Empty", "   ")]
    idx = BM25Index.from_documents(docs)
    assert len(idx) == 2  # empty passages are skipped
    (hits,) = idx.search(["capital of Germany"], 5)
    assert [h.id for h in hits] == ["2", "1"]
    no_title = BM25Index.from_documents(docs[:2], config=BM25Config(index_title=False))
    assert no_title.search(["Paris"], 5)[0][0].id == "1"
    with pytest.raises(ConfigError, match="b must be in"):
        BM25Config(b=2)
    with pytest.raises(ConfigError, match="method"):
        BM25Config(method="bm42")
    with pytest.raises(ConfigError, match="duplicate document id"):
        BM25Index.from_documents([Document("1", "", "a b"), Document("1", "", "c d")])
