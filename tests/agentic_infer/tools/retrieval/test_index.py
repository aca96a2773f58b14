"""build_index / load_index: directory handling, errors, chunked builds."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bm25s")

from agentic_infer.errors import ConfigError  # noqa: E402
from agentic_infer.tools.retrieval.base import Document  # noqa: E402
from agentic_infer.tools.retrieval.index import build_index, load_index  # noqa: E402

DOCS = [
    Document("canberra", "Canberra", "Canberra is the capital city of Australia."),
    Document("sydney", "Sydney", "Sydney is the largest city in Australia, on the east coast."),
    Document("wellington", "Wellington", "Wellington is the capital of New Zealand."),
]


def test_load_index_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_index(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        load_index(tmp_path / "file")
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match="no meta.json"):
        load_index(tmp_path / "plain")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "meta.json").write_text(json.dumps({"kind": "bm25"}))
    with pytest.raises(ConfigError, match="not an agentic-infer index"):
        load_index(tmp_path / "other")


def test_build_refuses_existing_output_and_unknown_kind(tmp_path):
    out = tmp_path / "idx"
    build_index(DOCS, kind="bm25", out=out)
    with pytest.raises(ConfigError, match="already exists"):
        build_index(DOCS, kind="bm25", out=out)
    idx = build_index(DOCS[:2], kind="bm25", out=out, overwrite=True)
    assert len(idx) == 2
    with pytest.raises(ConfigError, match="unknown index kind 'splade'"):
        build_index(DOCS, kind="splade", out=tmp_path / "x")


def test_failed_build_leaves_nothing_behind(tmp_path):
    dup = [*DOCS, Document("canberra", "Again", "duplicate id")]
    with pytest.raises(ConfigError, match="duplicate document id 'canberra'"):
        build_index(dup, kind="bm25", out=tmp_path / "idx")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match="corpus is empty"):
        build_index([Document("a", "t", " ")], kind="bm25", out=tmp_path / "idx")
    with pytest.raises(ConfigError, match="has an indexable word"):
        build_index([Document("a", "", "the a of")], kind="bm25", out=tmp_path / "idx")
    assert list(tmp_path.iterdir()) == []


def test_damaged_index_is_reported(tmp_path):
    out = tmp_path / "idx"
    build_index(DOCS, kind="bm25", out=out)
    meta = json.loads((out / "meta.json").read_text())
    meta["corpus"]["n_docs"] = 99
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="says 99 passages"):
        load_index(out)
    meta["corpus"]["n_docs"] = 3
    del meta["bm25"]
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="no 'bm25' section"):
        load_index(out)


def test_chunked_build_keeps_titles_and_parent_ids(tmp_path):
    long = Document("long", "Long Article", " ".join(["alpha"] * 12 + ["omega"] * 12))
    idx = build_index([long, *DOCS], kind="bm25", out=tmp_path / "idx", chunk_words=12)
    assert len(idx) == 5
    (hit,) = idx.search(["omega"], 3)[0]
    assert hit.id == "long#1" and hit.title == "Long Article"
    assert idx.get("long#0").metadata == {"parent": "long", "chunk": 0}
    assert idx.meta["corpus"]["chunk_words"] == 12


def test_build_from_a_corpus_path(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps({"id": d.id, "title": d.title, "text": d.text}) + "\n" for d in DOCS))
    idx = build_index(str(p), kind="bm25", out=tmp_path / "idx")
    assert idx.search(["capital of New Zealand"], 1)[0][0].id == "wellington"
    assert idx.meta["corpus"]["name"] == str(p.resolve())
