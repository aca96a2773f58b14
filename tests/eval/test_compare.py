"""`agentic eval compare`: policies against a base with paired differences, run end to end on fake backends."""

from __future__ import annotations

import json

import pytest

from agentic_infer.errors import ConfigError
from eval.compare import compare, counted_as_wrong, coverage, table
from eval.compare import markdown as compare_markdown
from tests.eval.test_eval_runner import HOTPOT


def _write(p, ems):
    p.mkdir(parents=True)
    p.joinpath("results.jsonl").write_text("".join(json.dumps(
        {"id": f"q{i}", "index": i, "metrics": {"em": e, "f1": e, "cover_em": e}, "search_calls": i % 2,
         "prompt_tokens": 10, "completion_tokens": 5, "wall_s": 1.0, "output": "\\boxed{x}" if e else "no"}) + "\n"
        for i, e in enumerate(ems)))
    return p


def test_table_pairs_with_the_base(tmp_path):
    runs = {"base": {"musique": _write(tmp_path / "b", [0, 0, 1, 0])},
            "distilled": {"musique": _write(tmp_path / "d", [1, 0, 1, 1])}}
    recs = {(r["policy"], r["task"]): r for r in table(runs)}
    d = recs[("distilled", "all")]
    assert d["em"]["mean"] == 0.75 and d["em_diff"]["mean"] == 0.5 and d["em_diff"]["n"] == 4
    assert d["boxed"] == 0.75 and d["searched"] == 0.5 and d["tokens_per_q"] == 15
    assert "em_diff" not in recs[("base", "musique")]
    alone = table({"distilled": runs["distilled"]})  # no base results: no paired column, not NaN
    assert all("em_diff" not in r for r in alone) and "nan" not in compare_markdown(alone, None)


def test_notes_questions_that_were_not_scored(tmp_path):  # "a" failed twice (retried by a rerun): counted once
    run = tmp_path / "r"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"n": 3, "n_expected": 5}))
    (run / "rollouts.jsonl.errors.jsonl").write_text("".join(
        json.dumps({"id": q, "error": f"ConfigError: 2wiki question '{q}' has no paragraphs"}) + "\n" for q in "aba"))
    assert coverage({"base": {"2wiki": run}}) == [
        "- base / 2wiki: 3 of 5 scored; failed: 2 x ConfigError: 2wiki question '...' has no paragraphs"]
    (run / "results.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "index": i, "metrics": {"em": e, "f1": e}})
                                               + "\n" for i, e in enumerate([1.0, 0.0, 1.0])))
    assert counted_as_wrong({"p": {"2wiki": run}}) == [
        "- p, all 5 questions with the 2 unscored counted as wrong: EM 0.400 (2/5), F1 0.400"]
    (run / "summary.json").write_text(json.dumps({"n": 5, "n_expected": 5}))
    assert coverage({"base": {"2wiki": run}}) == []


def test_compare_runs_each_policy_with_its_own_settings_and_pairs_them(tmp_path):
    data = tmp_path / "hq.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in HOTPOT), encoding="utf-8")  # gold: Rush for odd, Yes for even
    spec = {"out": str(tmp_path / "cmp"), "engine": "direct", "base": "base", "tasks": {"hotpotqa": str(data)},
            "policies": {"base": {"backend": "fake://?reply=%5Cboxed%7BYes%7D"},
                         "tuned": {"backend": "fake://?reply=%5Cboxed%7BRush%7D", "engine": "cot",
                                   "settings": {"sampling": {"max_tokens": 64}}}}}
    out = compare(spec, limit=4, echo=lambda m: None, progress=False)
    recs = {(r["policy"], r["task"]): r for r in out["table"]}
    assert recs[("base", "all")]["em"]["mean"] == 0.5 and recs[("tuned", "all")]["em"]["mean"] == 0.5
    assert recs[("tuned", "all")]["em_diff"]["n"] == 4  # paired per question
    run = json.loads((tmp_path / "cmp" / "limit4" / "tuned" / "hotpotqa" / "run.json").read_text())
    assert run["config"]["engine"] == "cot" and run["engine_config"]["sampling"]["max_tokens"] == 64
    assert (tmp_path / "cmp" / "limit4" / "eval.md").read_text().startswith("# Policy comparison")
    # only one policy now: the other's earlier results stay in the table, nothing of it reruns
    spec["policies"]["base"]["backend"] = "fake://?reply=%5Cboxed%7BNo%7D"
    again = compare(spec, limit=4, only=("tuned",), echo=lambda m: None, progress=False)
    assert {(r["policy"], r["task"]) for r in again["table"]} == set(recs)
    assert [r for r in again["table"] if r["policy"] == "base"][0]["em"]["mean"] == 0.5
    # against another policy: nothing reruns, base is paired with tuned, in a table of its own
    vs = compare(spec, limit=4, only=("tuned",), base="tuned", echo=lambda m: None, progress=False)
    flipped = {(r["policy"], r["task"]): r for r in vs["table"]}
    assert flipped[("base", "all")]["em_diff"]["n"] == 4
    assert "em_diff" not in flipped[("tuned", "all")] and vs["path"].endswith("limit4/eval-vs-tuned.md")
    assert "em_diff" in [r for r in json.loads((tmp_path / "cmp" / "limit4" / "eval.json").read_text())
                         if r["policy"] == "tuned"][0]  # the spec's own table stays as it was
    with pytest.raises(ConfigError, match="base 'x' is not one of the policies"):
        compare(spec, base="x", echo=lambda m: None)
    with pytest.raises(ConfigError, match="unknown policy"):
        compare(spec, only=("bse",), echo=lambda m: None)
    with pytest.raises(ConfigError, match="base='x' is not one of the policies"):
        compare({**spec, "base": "x"}, echo=lambda m: None)


def test_compare_on_an_executor_gives_the_one_process_table(tmp_path):
    data = tmp_path / "hq.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in HOTPOT), encoding="utf-8")
    spec = {"out": str(tmp_path / "one"), "engine": "direct", "tasks": {"hotpotqa": str(data)},
            "policies": {"base": {"backend": "fake://?reply=%5Cboxed%7BYes%7D"},
                         "tuned": {"backend": "fake://?reply=%5Cboxed%7BRush%7D"}}}
    one = compare(spec, echo=lambda m: None, progress=False)
    two = compare({**spec, "out": str(tmp_path / "two"), "executor": {"kind": "local", "tasks": 2, "workers": 2}},
                  echo=lambda m: None, progress=False)
    def untimed(table):
        return [{k: v for k, v in r.items() if k != "seconds_per_q"} for r in table]

    assert untimed(one["table"]) == untimed(two["table"]) and len(one["table"]) >= 2
    assert len(list((tmp_path / "two" / "full" / "tuned" / "hotpotqa").glob("shards/*/logs/completions/*"))) == 2
