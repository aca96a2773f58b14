"""Task loaders: the shared benchmark files, small hand-written files per format, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.tasks import get_task, list_tasks

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared benchmark data not found at {DATA}")

EXPECTED_TASKS = {"hotpotqa", "musique", "2wiki", "strategyqa", "nq-open", "triviaqa", "popqa", "bamboogle", "simpleqa",
                  "frames", "gsm8k", "math500", "aime", "amc", "bfcl-simple", "bfcl-multiple", "bfcl-parallel", "game24"}


def test_registry_has_every_benchmark():
    assert EXPECTED_TASKS <= {t.name for t in list_tasks()}
    assert get_task("2WikiMultihopQA").name == "2wiki"
    assert get_task("nq_open").name == "nq-open"
    with pytest.raises(ConfigError, match="unknown task 'nope'.*hotpotqa"):
        get_task("nope")


@needs_data
@pytest.mark.parametrize("task", sorted(EXPECTED_TASKS - {"bamboogle", "simpleqa", "frames"}))
def test_shared_files_load(task):
    t = get_task(task)
    assert t.default_files
    for f in t.default_files:
        examples = t.load(DATA / f)
        assert len(examples) >= 30
        ids = [e["id"] for e in examples]
        assert len(set(ids)) == len(ids)
        for e in examples[:20]:
            assert e["question"].strip() and e["gold"] and all(isinstance(g, str) for g in e["gold"])


@needs_data
def test_shared_file_details():
    hq = get_task("hotpotqa").load(DATA / "multihop/hotpotqa_dev_distractor_150.jsonl")
    assert all(len(get_task("hotpotqa").question_corpus(e)) == 10 for e in hq)  # literal-string contexts parse
    mu = get_task("musique").load(DATA / "multihop/musique_ans_dev_150.jsonl")
    assert any(len(e["gold"]) > 1 for e in mu)  # answer_aliases joined
    assert all(len(get_task("musique").question_corpus(e)) == 20 for e in mu[:30])
    assert get_task("gsm8k").load(DATA / "math/gsm8k_test.jsonl")[0]["gold"] == ["18"]
    assert get_task("amc").load(DATA / "math/amc23_test.jsonl")[0]["gold"] == ["27"]
    m5 = get_task("math500").load(DATA / "math/math500_test.jsonl")
    assert any(e["gold"] == ["(a+5)(b+2)"] for e in m5)  # never parsed as a literal
    sq = get_task("strategyqa").load(DATA / "multihop/strategyqa_dev.json")
    assert {e["gold"][0] for e in sq} == {"yes", "no"}
    assert get_task("strategyqa").question_corpus(sq[0])
    pq = get_task("popqa").load(DATA / "odqa/popqa_1000_with_paragraphs.json")
    assert "political leader" in pq[0]["gold"] and len(get_task("popqa").question_corpus(pq[0])) == 2
    bf = get_task("bfcl-parallel").load(DATA / "tools/bfcl/BFCL_v4_parallel.json")
    assert len(bf[0]["ground_truth"]) == 2 and "spotify.play" in bf[0]["question"]


# ----------------------------------------------------------------------- hand-written files

def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


HOTPOT = [{"_id": "h1", "question": "Q1?", "answer": "Paris", "supporting_facts": [["France", 0]],
           "context": [["France", ["Paris is the capital.", " It is big."]], ["Spain", ["Madrid."]]]},
          {"_id": "h2", "question": "Q2?", "answer": "yes", "supporting_facts": "[['A', 0]]",
           "context": "[['A', ['Alpha is a letter.']], ['B', ['Beta.']]]"}]


def test_handwritten_multihop(tmp_path):
    for suffix, text in ((".json", json.dumps(HOTPOT)), (".jsonl", "\n".join(json.dumps(r) for r in HOTPOT))):
        t = get_task("hotpotqa")
        ex = t.load(_write(tmp_path, f"hq{suffix}", text))
        assert [e["gold"] for e in ex] == [["Paris"], ["yes"]]
        docs = t.question_corpus(ex[1])
        assert [d.title for d in docs] == ["A", "B"] and docs[0].metadata["is_supporting"]
    mu = {"id": "m1", "question": "Who?", "answer": "Bob", "answer_aliases": "['Robert']",
          "paragraphs": "[{'idx': 0, 'title': 'T', 'paragraph_text': 'Bob is here.', 'is_supporting': True}]"}
    ex = get_task("musique").load(_write(tmp_path, "mu.jsonl", json.dumps(mu)))
    assert ex[0]["gold"] == ["Bob", "Robert"] and get_task("musique").question_corpus(ex[0])[0].text == "Bob is here."
    pooled = list(get_task("hotpotqa").pooled_corpus(tmp_path / "hq.jsonl"))
    assert len(pooled) == 4  # the file's own paragraphs when the shared pool files are absent


def test_handwritten_qa_formats(tmp_path):
    nq = get_task("nq-open").load(_write(tmp_path, "nq.jsonl", '{"question": "q", "answer": ["a", "b"]}\n'))
    assert nq[0]["gold"] == ["a", "b"]
    tq = get_task("triviaqa").load(_write(tmp_path, "tq.jsonl", '{"id": "t1", "question": "q", "golden_answers": ["x"]}'))
    assert tq[0]["id"] == "t1"
    bb = get_task("bamboogle").load(_write(tmp_path, "bb.csv", "Question,Answer\nWho won?,Alice\n"))
    assert bb[0]["question"] == "Who won?" and bb[0]["gold"] == ["Alice"]
    sq = get_task("simpleqa").load(_write(tmp_path, "simple_qa.csv",
                                          'metadata,problem,answer\n"{\'topic\': \'x\'}","Which year, exactly?",1999\n'))
    assert sq[0]["question"] == "Which year, exactly?" and sq[0]["gold"] == ["1999"]
    fr = get_task("frames").load(_write(tmp_path, "frames.tsv", "\tPrompt\tAnswer\n0\tHow many?\t12\n"))
    assert fr[0]["gold"] == ["12"]
    st = get_task("strategyqa").load(_write(tmp_path, "st.json", '[{"qid": "s", "question": "Is it?", "answer": false}]'))
    assert st[0]["gold"] == ["no"]


def test_handwritten_math_tools_puzzles(tmp_path):
    g = get_task("gsm8k").load(_write(tmp_path, "g.jsonl", '{"question": "q", "answer": "so\\n#### 1,200"}'))
    assert g[0]["gold"] == ["1200"]
    m = get_task("math500").load(_write(tmp_path, "m.jsonl", '{"problem": "p", "answer": "[0, 1)", "unique_id": "u"}'))
    assert m[0]["gold"] == ["[0, 1)"] and m[0]["id"] == "u"
    a = get_task("amc").load(_write(tmp_path, "a.jsonl", '{"id": 3, "problem": "p", "answer": 4.5}'))
    assert a[0]["gold"] == ["4.5"]
    g24 = get_task("game24").load(_write(tmp_path, "g24.csv", "Rank,Puzzles,AMT (s)\n901,1 2 3 4,5.0\n"))
    assert g24[0]["question"] == "1 2 3 4" and g24[0]["id"] == "game24-901"
    q = {"id": "simple_0", "question": [[{"role": "user", "content": "Area of 10 by 5?"}]],
         "function": [{"name": "area", "parameters": {"type": "dict", "properties": {}}}]}
    _write(tmp_path, "bf/possible_answer/B.json", json.dumps({"id": "simple_0", "ground_truth": [{"area": {"b": [10]}}]}))
    ex = get_task("bfcl-simple").load(_write(tmp_path, "bf/B.json", json.dumps(q)))
    assert ex[0]["ground_truth"] == [{"area": {"b": [10]}}] and "Area of 10 by 5?" in ex[0]["question"]


@pytest.mark.parametrize(("task", "name", "text", "pattern"), [
    ("hotpotqa", "x.jsonl", '{"_id": "1", "question": "q", "context": []}', r"x.jsonl:1: missing field 'answer'.*HotpotQA"),
    ("musique", "x.jsonl", '{"id": "1", "question": "q", "answer": "a"}', r"missing field 'paragraphs'"),
    ("gsm8k", "x.jsonl", '{"question": "q", "answer": "42"}', r"####"),
    ("math500", "x.jsonl", '{"question": "q"}', r"missing field 'answer'"),
    ("nq-open", "x.jsonl", '{"query": "q"}', r"missing field 'question'.*found: query"),
    ("simpleqa", "x.csv", "a,b\n1,2\n", r"x.csv:2: missing field 'problem' or 'question'"),
    ("game24", "x.csv", "Rank,Puzzles\n1,1 2 3\n", r"not four whole numbers"),
    ("hotpotqa", "x.jsonl", "{not json", r"x.jsonl:1: not valid JSON"),
    ("bfcl-simple", "x.json", '{"id": "a"}', r"no gold answers at"),
])
def test_wrong_files_name_the_expected_field(tmp_path, task, name, text, pattern):
    with pytest.raises(AgenticError, match=pattern):
        get_task(task).load(_write(tmp_path, name, text))


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist; expected HotpotQA"):
        get_task("hotpotqa").load(tmp_path / "nope.jsonl")
    with pytest.raises(ConfigError, match="holds no examples"):
        get_task("nq-open").load(_write(tmp_path, "e.jsonl", "\n"))


def test_renamed_columns_load_through_a_field_mapping(tmp_path):
    from agentic_infer.tasks.base import parse_fields

    data = tmp_path / "simpleqa_copy.csv"
    data.write_text("question,true_answer\nWho wrote Hamlet?,William Shakespeare\n")
    task = get_task("simpleqa")
    with pytest.raises(ConfigError, match="missing field 'answer'"):
        task.load(data)
    [ex] = task.load(data, fields=parse_fields("answer=true_answer"))
    assert ex["question"] == "Who wrote Hamlet?" and ex["gold"] == ["William Shakespeare"]
    with pytest.raises(ConfigError, match="no column 'solution'"):
        task.load(data, fields={"answer": "solution"})
    with pytest.raises(ConfigError, match="FIELD=COLUMN"):
        parse_fields("answer")
    [ex] = task.load(data, fields={"answer": "true_answer"})  # the mapping does not leak into later loads
    with pytest.raises(ConfigError, match="missing field 'answer'"):
        task.load(data)
