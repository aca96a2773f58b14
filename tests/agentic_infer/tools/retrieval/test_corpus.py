"""Corpus readers on hand-written files and on the published files under ../shared/data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_infer.errors import ConfigError, ParseError
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.corpus import (
    FieldMap,
    chunk_documents,
    join_sentences,
    parse_literal,
    question_paragraphs,
    read_corpus,
    split_contents,
)
from tests.conftest import shared_data  # noqa: E402

data_file = shared_data


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------ hand-written files


def test_jsonl_passages_with_default_fields(tmp_path):
    p = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "a", "title": "Alpha", "text": "First passage.", "url": "u1"},
        {"id": "b", "title": "Beta", "text": "Second passage."},
    ])
    docs = list(read_corpus(p))
    assert [d.id for d in docs] == ["a", "b"]
    assert docs[0].title == "Alpha" and docs[0].text == "First passage."
    assert docs[0].metadata == {"url": "u1"}
    assert docs[0].contents == '"Alpha"\nFirst passage.'


def test_jsonl_custom_field_names_and_row_ids(tmp_path):
    p = write_jsonl(tmp_path / "c.jsonl", [{"name": "X", "body_text": "hello world"}, {"name": "Y", "body_text": "bye"}])
    docs = list(read_corpus(p, fields=FieldMap(title="name", text="body_text")))
    assert [(d.id, d.title, d.text) for d in docs] == [("0", "X", "hello world"), ("1", "Y", "bye")]


def test_search_r1_contents_field_is_split_into_title_and_text(tmp_path):
    p = write_jsonl(tmp_path / "wiki.jsonl", [{"id": "7", "contents": '"Paris"\nParis is the capital of France.'}])
    (d,) = read_corpus(p)
    assert (d.id, d.title, d.text) == ("7", "Paris", "Paris is the capital of France.")
    assert split_contents("no title here") == ("", "no title here")


def test_missing_text_field_names_the_expected_fields(tmp_path):
    p = write_jsonl(tmp_path / "bad.jsonl", [{"id": 1, "foo": "bar"}])
    with pytest.raises(ConfigError, match=r"no text field.*fields present: \['foo', 'id'\]"):
        list(read_corpus(p))
    with pytest.raises(ConfigError, match="no text field"):
        list(read_corpus(write_jsonl(tmp_path / "b2.jsonl", [{"text": "x"}]), fields=FieldMap(text="body")))


def test_bad_inputs_raise_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        read_corpus(tmp_path / "missing.jsonl")
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(ConfigError, match="unknown file type '.csv'"):
        read_corpus(tmp_path / "x.csv")
    (tmp_path / "broken.jsonl").write_text('{"text": "ok"}\n{not json\n')
    with pytest.raises(ConfigError, match=r"broken.jsonl:2: not valid JSON"):
        list(read_corpus(tmp_path / "broken.jsonl"))
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="is a int, not an object"):
        list(read_corpus(tmp_path / "list.json"))
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(ConfigError, match="holds no"):
        list(read_corpus(tmp_path / "empty_dir"))
    with pytest.raises(ConfigError, match="FieldMap.text"):
        FieldMap(text="")


def test_json_dict_title_to_sentences_and_title_to_record(tmp_path):
    p = tmp_path / "corpus.json"
    p.write_text(json.dumps({"Paris": ["Paris is a city.", " It is in France."], "Rome": "Rome is old."}))
    docs = list(read_corpus(p))
    assert [(d.id, d.title, d.text) for d in docs] == [
        ("Paris", "Paris", "Paris is a city. It is in France."), ("Rome", "Rome", "Rome is old.")]
    p2 = tmp_path / "summaries.json"
    p2.write_text(json.dumps({"Moon": {"title": "Moon", "extract": "The Moon orbits Earth.", "topic": "Space"}}))
    (d,) = read_corpus(p2)
    assert (d.id, d.title, d.text, d.metadata) == ("Moon", "Moon", "The Moon orbits Earth.", {"topic": "Space"})


def test_json_list_of_title_text(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps([{"title": "A", "text": "one"}, {"title": "B", "text": "two"}]))
    assert [(d.id, d.title) for d in read_corpus(p)] == [("0", "A"), ("1", "B")]


def test_gzipped_jsonl(tmp_path):
    import gzip

    p = tmp_path / "c.jsonl.gz"
    with gzip.open(p, "wt") as f:
        f.write(json.dumps({"id": "z", "text": "zipped"}) + "\n")
    assert [d.text for d in read_corpus(p)] == ["zipped"]


def test_parquet_passages(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"doc_id": ["p1", "p2"], "title": ["T1", "T2"], "body": ["text one", "text two"]})
    pq.write_table(table, tmp_path / "c.parquet")
    docs = list(read_corpus(tmp_path / "c.parquet", fields=FieldMap(text="body")))
    assert [(d.id, d.title, d.text) for d in docs] == [("p1", "T1", "text one"), ("p2", "T2", "text two")]


def test_plain_text_directory(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "alpha.txt").write_text("Alpha text.\n")
    (tmp_path / "sub" / "beta.md").write_text("Beta text.")
    (tmp_path / "ignored.bin").write_bytes(b"\x00")
    docs = list(read_corpus(tmp_path))
    assert [(d.id, d.title, d.text) for d in docs] == [("alpha", "alpha", "Alpha text."), ("sub/beta", "beta", "Beta text.")]


def test_hotpot_question_with_python_literal_context(tmp_path):
    ctx = [["Alpha", ["Alpha is one.", " It is first."]], ["Beta", ["Beta is two."]]]
    rows = [
        {"_id": "q1", "question": "?", "context": repr(ctx), "supporting_facts": repr([["Beta", 0]])},
        {"_id": "q2", "question": "?", "context": [["Beta", ["Beta is two."]], ["Gamma", ["G."]]]},
    ]
    p = write_jsonl(tmp_path / "hotpot.jsonl", rows)
    docs = list(read_corpus(p))
    # distinct (title, text) paragraphs only, first occurrence keeps its id
    assert [(d.id, d.title, d.text) for d in docs] == [
        ("q1-0", "Alpha", "Alpha is one. It is first."), ("q1-1", "Beta", "Beta is two."), ("q2-1", "Gamma", "G.")]
    paras = question_paragraphs(rows[0])
    assert [d.metadata["is_supporting"] for d in paras] == [False, True]


def test_musique_question_paragraphs(tmp_path):
    row = {"id": "2hop_1", "question": "?", "paragraphs": json.dumps([
        {"idx": 0, "title": "A", "paragraph_text": "a text", "is_supporting": False},
        {"idx": 1, "title": "B", "paragraph_text": "b text", "is_supporting": True}])}
    docs = question_paragraphs(row)
    assert [(d.id, d.title, d.metadata["is_supporting"]) for d in docs] == [("2hop_1-0", "A", False), ("2hop_1-1", "B", True)]
    assert [d.id for d in read_corpus(write_jsonl(tmp_path / "m.jsonl", [row]))] == ["2hop_1-0", "2hop_1-1"]


def test_strategyqa_evidence_records(tmp_path):
    p = write_jsonl(tmp_path / "ev.jsonl", [
        {"title": "Albany, Georgia", "section": "", "headers": [""], "para_index": 1, "contents": "Albany is a city."}])
    (d,) = read_corpus(p)
    assert (d.id, d.title, d.text) == ("Albany, Georgia-1", "Albany, Georgia", "Albany is a city.")
    assert d.metadata["para_index"] == 1


def test_parse_literal_and_join_sentences():
    assert parse_literal("[['a', 1]]") == [["a", 1]]
    assert parse_literal('[["a", 1]]') == [["a", 1]]
    assert parse_literal("plain text") == "plain text"
    assert parse_literal([1]) == [1]
    with pytest.raises(ParseError, match="neither JSON nor a Python literal"):
        parse_literal("[unclosed", what="context")
    assert join_sentences(["One.", " Two."]) == "One. Two."  # HotpotQA keeps leading spaces
    assert join_sentences(["One.", "Two."]) == "One. Two."  # 2Wiki does not


# ------------------------------------------------------------------ chunking


def test_chunking_keeps_titles_and_numbers_chunks():
    doc = Document("d1", "Title", " ".join(f"w{i}" for i in range(10)), {"k": 1})
    short = Document("d2", "Short", "just three words")
    chunks = list(chunk_documents([doc, short], max_words=4))
    assert [c.id for c in chunks] == ["d1#0", "d1#1", "d1#2", "d2"]
    assert all(c.title == "Title" for c in chunks[:3])
    assert [c.text for c in chunks[:3]] == ["w0 w1 w2 w3", "w4 w5 w6 w7", "w8 w9"]
    assert chunks[1].metadata == {"k": 1, "parent": "d1", "chunk": 1}
    overl = list(chunk_documents([doc], max_words=4, overlap=1))
    assert [c.text for c in overl] == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"]
    with pytest.raises(ConfigError, match="positive number of words"):
        list(chunk_documents([doc], max_words=0))
    with pytest.raises(ConfigError, match="overlap"):
        list(chunk_documents([doc], max_words=4, overlap=4))


def test_read_corpus_chunk_words(tmp_path):
    p = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "title": "A", "text": "one two three four five"}])
    assert [d.id for d in read_corpus(p, chunk_words=2)] == ["a#0", "a#1", "a#2"]


# ------------------------------------------------------------------ the published files


@pytest.mark.parametrize(
    ("rel", "count", "first_title"),
    [
        ("multihop/hotpotqa_train_100_corpus.json", 994, "Demon Dice"),
        ("multihop/musique_train_100_corpus.json", 1890, "Journal of Mathematical Physics"),
        ("multihop/2wiki_corpus_6k.json", 6119, "Teutberga"),
        ("multihop/strategyqa_evidence_paragraphs.jsonl", 998, "Albany, Georgia"),
    ],
)
def test_published_corpus_files(rel, count, first_title):
    docs = list(read_corpus(data_file(rel)))
    assert len(docs) == count
    assert docs[0].title == first_title and docs[0].text
    assert len({d.id for d in docs}) == count


def test_published_question_files_yield_distinct_paragraphs():
    hp = list(read_corpus(data_file("multihop/hotpotqa_dev_distractor_150.jsonl")))
    mu = list(read_corpus(data_file("multihop/musique_ans_dev_150.jsonl")))
    tw = list(read_corpus(data_file("multihop/2wiki_dev_150.jsonl")))  # 19 rows have only `evidences`
    for docs, at_most in ((hp, 1500), (mu, 3000), (tw, 1310)):
        assert 0.5 * at_most < len(docs) <= at_most
        assert len({(d.title, d.text) for d in docs}) == len(docs)
        assert len({d.id for d in docs}) == len(docs)
    assert hp[0].id == "5a7f6fd75542992e7d278cfa-0" and hp[0].title == "Jeff Porcaro"
    assert hp[0].text.startswith("Jeffrey Thomas Porcaro (April 1, 1954")


def test_strategyqa_ids_are_title_dash_para_index():
    docs = list(read_corpus(data_file("multihop/strategyqa_evidence_paragraphs.jsonl")))
    assert all(d.id == f"{d.title}-{d.metadata['para_index']}" for d in docs)
