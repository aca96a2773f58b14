"""`agentic index build` and `agentic search` end to end, in a subprocess like a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("bm25s")

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


def agentic(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentic_infer", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("corpus") / "capitals.jsonl"
    rows = [
        {"id": "canberra", "title": "Canberra", "text": "Canberra is the capital city of Australia."},
        {"id": "wellington", "title": "Wellington", "text": "Wellington is the capital of New Zealand."},
        {"id": "sydney", "title": "Sydney", "text": "Sydney is the most populous city in Australia."},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_build_then_search_json_and_table(tmp_path, corpus_file):
    out = tmp_path / "idx"
    r = agentic("index", "build", "--corpus", str(corpus_file), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "bm25 index built" in r.stdout and "passages" in r.stdout and "3" in r.stdout
    assert (out / "meta.json").is_file()

    r = agentic("search", "capital of New Zealand", "--index", str(out), "--topk", "2", "--json")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert [h["id"] for h in hits][0] == "wellington"
    assert set(hits[0]) == {"id", "title", "text", "score"} and hits[0]["score"] > 0

    r = agentic("search", "Australia", "--index", str(out))
    assert r.returncode == 0 and "Canberra" in r.stdout and "Sydney" in r.stdout
    r = agentic("search", "the of", "--index", str(out))
    assert r.returncode == 0 and "no results" in r.stdout


def test_build_from_shared_hotpot_corpus_with_chunking(tmp_path):
    corpus = DATA / "multihop" / "hotpotqa_train_100_corpus.json"
    if not corpus.exists():
        pytest.skip(f"{corpus} is absent: the shared benchmark data is only present in CI and dev sessions")
    out = tmp_path / "hp"
    r = agentic("index", "build", "--corpus", str(corpus), "--out", str(out), "--chunk-words", "40")
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["corpus"]["n_docs"] > 994 and meta["corpus"]["chunk_words"] == 40
    r = agentic("search", "If Gallu is a demon Lilu is what?", "--index", str(out), "--topk", "3", "--json")
    titles = [h["title"] for h in json.loads(r.stdout)]
    assert "Alû" in titles


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "x", "--index", "/nonexistent/idx"), "does not exist"),
        (("search", "x", "--index", "/nonexistent/idx", "--topk", "0"), "--topk must be a positive integer"),
        (("index", "build", "--corpus", "/nonexistent.jsonl", "--out", "/tmp/never"), "neither a recipe"),
        (("index", "build", "--corpus", "wiki-vital", "--out", "/tmp/never", "--kind", "splade"), "--kind must be one of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    r = agentic(*args)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_bad_corpus_format_names_expected_fields(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "q?", "answer": "Paris"}) + "\n")
    r = agentic("index", "build", "--corpus", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "no text field" in r.stderr and "--text-field" in r.stderr
    assert not (tmp_path / "o").exists()
    r = agentic("index", "build", "--corpus", str(bad), "--out", str(tmp_path / "o"), "--text-field", "answer")
    assert r.returncode == 0, r.stderr
