"""`agentic synth fuzzqa --executor`: the seeds in blocks on local processes, Ray or Slurm, each rank rebuilding the
scripted model from its URI (`fake://?script=`), merged into the one-process provenance, QAs and funnel; a rerun
with more seeds runs only the new ones."""

from __future__ import annotations

import json

import pytest

from agentic_infer.cli import main

LLM = "fake://?script=tests.synth.fuzzqa.conftest:World"  # the scripted World of conftest.py, built in every process
SETS = ["k_closed_book=2", "judge=em", "max_tokens=512", "min_seed_words=0", "cache=false", "max_actions=1"]


def _fuzzqa(out, corpus, n, *extra):
    argv = ["synth", "fuzzqa", "--llm", LLM, "--corpus", str(corpus), "--n", str(n), "--out", str(out), *extra]
    for s in SETS:
        argv += ["--set", s]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _by_id(path, key):
    """The records by id: one process writes seeds as they finish (concurrently), a merge in seed order."""
    return sorted(_lines(path), key=lambda r: r[key])


def _funnel(out):
    s = json.loads((out / "stats.json").read_text())
    return {k: s[k] for k in ("seeds", "qas", "versions", "write", "gates", "final_hops", "llm_requests",
                              "judge_calls", "seeds_planned", "source")}


@pytest.mark.parametrize("executor", [["--tasks", "3", "--workers", "2"],
                                      ["--executor", "ray", "--tasks", "2", "--workers", "2"],
                                      ["--executor", "slurm", "--tasks", "2", "--workers", "2"]])
def test_fuzzqa_on_an_executor_gives_the_one_process_output(tmp_path, corpus_file, executor, request):
    if "ray" in executor:
        pytest.importorskip("ray")
    if "slurm" in executor:
        request.getfixturevalue("slurm_cluster")
    _fuzzqa(tmp_path / "one", corpus_file, 5)
    out = tmp_path / "sharded"
    _fuzzqa(out, corpus_file, 5, *executor)
    one = _by_id(tmp_path / "one" / "provenance.jsonl", "seed_id")
    assert _by_id(out / "provenance.jsonl", "seed_id") == one and len(one) == 5  # the same records
    assert _by_id(out / "qa.jsonl", "_id") == _by_id(tmp_path / "one" / "qa.jsonl", "_id") and _lines(out / "qa.jsonl")
    assert _funnel(out) == _funnel(tmp_path / "one")  # the funnel, and the requests paid summed over the ranks
    tasks = int(executor[executor.index("--tasks") + 1])
    shard_seeds = [r["seed_id"] for p in sorted(out.glob("shards/*/0000*/provenance.jsonl")) for r in _lines(p)]
    assert sorted(shard_seeds) == sorted(r["seed_id"] for r in one)  # each seed ran once, in one rank
    assert len(list(out.glob("shards/*/logs/completions/*"))) == tasks


def test_a_rerun_with_more_seeds_runs_only_the_new_ones(tmp_path, corpus_file):
    out = tmp_path / "o"
    _fuzzqa(out, corpus_file, 2, "--tasks", "2")
    first = [r["seed_id"] for r in _lines(out / "provenance.jsonl")]
    _fuzzqa(out, corpus_file, 5, "--tasks", "2")
    stats = json.loads((out / "stats.json").read_text())
    prov = [r["seed_id"] for r in _lines(out / "provenance.jsonl")]
    assert prov[:2] == first and len(set(prov)) == 5 and stats["resumed_seeds"] == 2
    one = tmp_path / "one"
    _fuzzqa(one, corpus_file, 5)
    assert _by_id(out / "provenance.jsonl", "seed_id") == _by_id(one / "provenance.jsonl", "seed_id")
    second = sorted(out.glob("shards/*"), key=lambda p: p.stat().st_mtime)[-1]
    assert sum(len(_lines(p)) for p in second.glob("0000*/provenance.jsonl")) == 3  # only the 3 new seeds ran
