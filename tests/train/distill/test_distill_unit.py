"""Fast checks of the distill recipe: plain-prompt demos, the dev leak check, the filter, stage hashes, eval table."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from agentic_infer.errors import ConfigError
from train.distill import DistillSettings, recipe, stage_hashes
from train.distill.data import build_plain_demos, load_train_questions, prompt_is_plain

S = DistillSettings(limit=2, reject_questions=0)  # the quick recipe test samples the base
if not Path(S.data_dir).is_dir():
    pytest.skip("shared multihop data not present", allow_module_level=True)


@pytest.fixture(scope="module")
def vocab():
    return recipe._vocab(S.model)


def test_demos_use_the_plain_eval_prompt_and_raw_short_passages(vocab):
    (_, examples), = load_train_questions([("hotpotqa", "hotpotqa_train_100.json")], S.data_dir, limit=2)
    trajs, stats = asyncio.run(build_plain_demos(examples, vocab, S.engine_options))
    assert stats["verified"] == len(trajs) >= 1
    t = trajs[0]
    assert prompt_is_plain(t, t.metadata["question"], vocab, S.engine_options)
    prompt = "".join(s.text for s in t.segments if s.kind == "prompt")
    assert "Question: " + t.metadata["question"] in prompt and "Example" not in prompt
    obs = [s.text for s in t.segments if s.kind == "observation"]
    assert obs and all("Final Information" not in o for o in obs)  # raw passages, no Reason-in-Documents
    assert "\\boxed{" + t.metadata["gold"][0] + "}" in t.segments[-1].text
    other = replace(S, max_searches=3)
    assert not prompt_is_plain(t, t.metadata["question"], vocab, other.engine_options)
    passages = [p for o in obs for p in o.split("**Document ")[1:]]
    assert passages and all(len(p.split("\n", 1)[1].split("<|end_search_result|>")[0].strip()) <= S.passage_chars + 4
                            for p in passages)


def test_demos_whose_facts_were_not_shown_are_rejected(vocab):
    """Passages cut to 10 characters show no answer: every demonstration must be rejected as ungrounded, except
    yes/no answers (which no passage states)."""
    (_, examples), = load_train_questions([("hotpotqa", "hotpotqa_train_100.json")], S.data_dir, limit=6)
    kept, stats = asyncio.run(build_plain_demos(examples, vocab, replace(S, passage_chars=300).engine_options))
    cut, cut_stats = asyncio.run(build_plain_demos(examples, vocab, replace(S, passage_chars=10).engine_options))
    stated = [t for t in kept if t.metadata["gold"][0].lower() not in ("yes", "no")]
    assert stated and all(t.metadata["gold"][0].lower() in ("yes", "no") for t in cut)
    assert cut_stats["rejected"].get("answer_not_shown", 0) >= len(stated)


def test_train_questions_in_a_dev_file_are_dropped(tmp_path, monkeypatch):
    from agentic_infer.verify import normalize_answer

    s = replace(S, sources=(("hotpotqa", "hotpotqa_train_100.json"),))
    (_, examples), = load_train_questions(s.sources, s.data_dir, limit=2)
    monkeypatch.setattr("train.distill.data.dev_questions", lambda d: {normalize_answer(examples[0]["question"])})
    summary = recipe.stage_data(s, tmp_path)
    assert summary["dev_overlap_dropped"] == 1
    questions = [json.loads(line)["metadata"]["question"] for line in (tmp_path / "demos.jsonl").open()]
    assert examples[0]["question"] not in questions and examples[1]["question"] in questions


def test_filter_keeps_verified_rows_within_the_length_bound(tmp_path):
    s = replace(S, sources=(("hotpotqa", "hotpotqa_train_100.json"),), limit=4)
    data = tmp_path / "data"
    data.mkdir()
    recipe.stage_data(s, data)
    lines = (data / "demos.jsonl").read_text().splitlines()
    bad = json.loads(lines[0])
    bad["rewards"]["em"] = 0.0
    (data / "demos.jsonl").write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    out = tmp_path / "filter"
    out.mkdir()
    summary = recipe.stage_filter(replace(s, max_length=700), out, data)
    rows = [json.loads(line) for line in (out / "sft.jsonl").open()]
    assert summary["dropped"]["unverified"] == 1
    assert rows and all(len(r["input_ids"]) <= 700 for r in rows)
    assert summary["dropped"]["too_long"] >= 1
    assert summary["rows"] + sum(summary["dropped"].values()) == len(lines)
    assert any(x != -100 for x in rows[0]["labels"]) and rows[0]["labels"][0] == -100


def test_stage_hashes_chain():
    a = stage_hashes(S)
    b = stage_hashes(replace(S, sft_lr=1e-4))
    assert [a[k] == b[k] for k in recipe.STAGES] == [True, True, False, False, False, False]


def test_eval_table_pairs_with_the_base(tmp_path):
    from train.distill.evaluate import table

    def write(p, ems):
        p.mkdir(parents=True)
        p.joinpath("results.jsonl").write_text("".join(json.dumps(
            {"index": i, "metrics": {"em": e, "f1": e, "cover_em": e}, "search_calls": i % 2, "prompt_tokens": 10,
             "completion_tokens": 5, "wall_s": 1.0, "output": "\\boxed{x}" if e else "no"}) + "\n"
            for i, e in enumerate(ems)))
        return p

    runs = {"base": {"musique": write(tmp_path / "b", [0, 0, 1, 0])},
            "distilled": {"musique": write(tmp_path / "d", [1, 0, 1, 1])}}
    recs = {(r["policy"], r["task"]): r for r in table(runs)}
    d = recs[("distilled", "all")]
    assert d["em"]["mean"] == 0.75 and d["em_diff"]["mean"] == 0.5 and d["em_diff"]["n"] == 4
    assert d["boxed"] == 0.75 and d["searched"] == 0.5 and d["tokens_per_q"] == 15
    assert "em_diff" not in recs[("base", "musique")]


def test_eval_commands_give_the_base_its_help_and_the_policy_the_plain_prompt(tmp_path):
    from train.distill import evaluate
    from train.distill.evaluate import run_distill_eval

    (tmp_path / "policy.gguf").write_bytes(b"x")
    lines = []
    run_distill_eval(replace(S, out=str(tmp_path)), limit=2, echo=lines.append, dry_run=True)
    base = [x for x in lines if x.startswith("[distill-eval] base")]
    dist = [x for x in lines if x.startswith("[distill-eval] distilled")]
    assert len(base) == len(dist) == 3
    assert all("worked_example=true" in x and "--corpus per-question" in x for x in base)
    assert all("rid=false" in x and "worked_example" not in x and "--limit 2" in x for x in dist)
    assert all(f"passage_chars={S.passage_chars}" in x for x in dist)
    assert all('"max_tokens": 128' in x for x in base)  # the demo's Reason-in-Documents cap
    assert all(f"?n_threads={evaluate.THREADS} " in x for x in base + dist)  # generation on every core
    only: list[str] = []
    run_distill_eval(replace(S, out=str(tmp_path)), limit=2, echo=only.append, dry_run=True, only=("distilled",))
    assert [x for x in only if x.startswith("[distill-eval] ")][:3] == dist
    with pytest.raises(ConfigError, match="unknown policy"):
        run_distill_eval(replace(S, out=str(tmp_path)), limit=2, echo=only.append, dry_run=True, only=("bse",))


def test_eval_notes_questions_that_were_not_scored(tmp_path):
    from train.distill.evaluate import counted_as_wrong, coverage

    run = tmp_path / "r"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"n": 3, "n_expected": 5}))
    (run / "rollouts.jsonl.errors.jsonl").write_text("".join(
        json.dumps({"id": q, "error": f"ConfigError: 2wiki question '{q}' has no paragraphs"}) + "\n" for q in "ab"))
    assert coverage({"base": {"2wiki": run}}) == [
        "- base / 2wiki: 3 of 5 scored; failed: 2 x ConfigError: 2wiki question '...' has no paragraphs"]
    (run / "results.jsonl").write_text("".join(json.dumps({"index": i, "metrics": {"em": e, "f1": e}}) + "\n"
                                               for i, e in enumerate([1.0, 0.0, 1.0])))
    assert counted_as_wrong({"p": {"2wiki": run}}) == [
        "- p, all 5 questions with the 2 unscored counted as wrong: EM 0.400 (2/5), F1 0.400"]
    (run / "summary.json").write_text(json.dumps({"n": 5, "n_expected": 5}))
    assert coverage({"base": {"2wiki": run}}) == []


def test_a_stopped_stage_keeps_its_folder_only_under_the_same_settings(tmp_path):
    d = tmp_path / "sft"
    assert recipe.prepare_stage(d, "h1") is False
    (d / "checkpoint-10").mkdir()
    assert recipe.prepare_stage(d, "h1") is True and (d / "checkpoint-10").is_dir()  # resumed
    assert recipe.prepare_stage(d, "h2") is False and not (d / "checkpoint-10").exists()  # settings changed


def test_grpo_rewards_score_the_boxed_answer_the_policy_writes():
    """The policy answers in \\boxed{}: a right boxed answer earns the answer reward, a wrong one does not."""
    fmt, answer = recipe.grpo_rewards("f1")
    done = "I searched.\n<|begin_search_query|>Paris<|end_search_query|>\n\nSo the answer is \\boxed{Paris}."
    rows = {"answer": ["Paris", "Paris"], "question": ["Capital of France?"] * 2}
    assert answer([done, done.replace("{Paris}", "{Lyon}")], **rows) == [1.0, 0.0]
    assert fmt([done], **{k: v[:1] for k, v in rows.items()}) == [1.0]


def test_eval_table_keeps_earlier_results_of_policies_not_run_now(tmp_path, monkeypatch):
    from train.distill import evaluate

    (tmp_path / "policy.gguf").write_bytes(b"x")
    row = {"index": 0, "metrics": {"em": 0.0, "f1": 0.0, "cover_em": 0.0}, "output": "no"}
    base = tmp_path / "eval" / "limit2" / "base" / "musique"
    base.mkdir(parents=True)
    (base / "results.jsonl").write_text(json.dumps(row) + "\n")
    dist = tmp_path / "eval" / "limit2" / "distilled" / "musique"
    dist.mkdir(parents=True)
    (dist / "results.jsonl").write_text(json.dumps({**row, "metrics": {"em": 1.0, "f1": 1.0, "cover_em": 1.0}}) + "\n")
    out = evaluate.run_distill_eval(replace(S, out=str(tmp_path)), limit=2, echo=lambda x: None, dry_run=True,
                                    only=("distilled",))
    recs = {(r["policy"], r["task"]): r for r in out["table"]}
    assert ("base", "musique") in recs and recs[("distilled", "musique")]["em_diff"]["mean"] == 1.0
