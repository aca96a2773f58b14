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
from train.stages import prepare_stage

S = DistillSettings(limit=2, reject_questions=0)  # the quick recipe test samples the base
if not Path(S.data_dir).is_dir():
    pytest.skip("shared multihop data not present", allow_module_level=True)


@pytest.fixture(scope="module")
def vocab():
    return recipe.model_vocab(S.model)


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
    assert [a[k] == b[k] for k in recipe.STAGES] == [True, True, False, False, False, False, False]
    c = stage_hashes(replace(S, precision="fp32"))  # precision trains SFT (and GRPO after it) differently
    assert [a[k] == c[k] for k in recipe.STAGES] == [True, True, False, False, False, False, False]
    e = stage_hashes(replace(S, expert_samples=4))  # only the expert-iteration branch reruns
    assert [a[k] == e[k] for k in recipe.STAGES] == [True, True, True, True, True, False, False]
    assert stage_hashes(replace(S, threads=1)) == a
    with pytest.raises(ConfigError, match="precision='float32'"):
        DistillSettings(precision="float32")


def test_passages_per_search_is_k():
    from agentic_infer.config import build_config

    assert S.engine_options["k"] == S.k == 2 and "top_k" not in S.engine_options
    for make in (lambda: DistillSettings(top_k=3), lambda: build_config(DistillSettings, overrides=["top_k=3"])):
        with pytest.raises(ConfigError, match="'top_k' is renamed 'k'"):
            make()


def test_a_stopped_stage_keeps_its_folder_only_under_the_same_settings(tmp_path):
    d = tmp_path / "sft"
    assert prepare_stage(d, "h1") is False
    (d / "checkpoint-10").mkdir()
    assert prepare_stage(d, "h1") is True and (d / "checkpoint-10").is_dir()  # resumed
    assert prepare_stage(d, "h2") is False and not (d / "checkpoint-10").exists()  # settings changed


def test_grpo_rewards_score_the_boxed_answer_the_policy_writes():
    """The policy answers in \\boxed{}: a right boxed answer earns the answer reward, a wrong one does not."""
    fmt, answer = recipe.grpo_rewards("f1")
    done = "I searched.\n<|begin_search_query|>Paris<|end_search_query|>\n\nSo the answer is \\boxed{Paris}."
    rows = {"answer": ["Paris", "Paris"], "question": ["Capital of France?"] * 2}
    assert answer([done, done.replace("{Paris}", "{Lyon}")], **rows) == [1.0, 0.0]
    assert fmt([done], **{k: v[:1] for k, v in rows.items()}) == [1.0]
    assert len(recipe.grpo_rewards("f1", 0.0)) == 2  # the shaping term only when asked for


def test_the_tool_call_bonus_pays_episodes_that_searched():
    """`grpo_tool_bonus`: + the bonus for an episode with a search step (its trajectory's steps), 0 without."""
    from agentic_infer.types import Step, Trajectory

    *_, bonus = recipe.grpo_rewards("f1", 0.1)
    searched = Trajectory(steps=[Step(action="search", arguments={"query": "Paris"})])
    rows = {"answer": ["Paris"] * 2, "question": ["Capital of France?"] * 2, "trajectory": [searched, Trajectory()]}
    assert bonus(["x", "y"], **rows) == [0.1, 0.0]


def test_compare_spec_gives_the_base_its_help_and_the_policies_the_plain_prompt(tmp_path):
    """The spec `make distill-eval` hands to `agentic eval compare`: the settings each policy was trained for."""
    from train.distill import evaluate

    spec = evaluate.compare_spec(replace(S, out=str(tmp_path)))
    assert list(spec["policies"]) == ["base"]  # no GGUF written yet: only the base
    (tmp_path / "policy.gguf").write_bytes(b"x")
    spec = evaluate.compare_spec(replace(S, out=str(tmp_path)))
    base, dist = spec["policies"]["base"], spec["policies"]["distilled"]
    assert spec["corpus"] == "per-question" and spec["engine"] == "search-o1" and len(spec["tasks"]) == 3
    assert base["settings"]["worked_example"] is True and base["settings"]["rid_sampling"]["max_tokens"] == 128
    assert dist["settings"]["rid"] is False and "worked_example" not in dist["settings"]
    assert dist["settings"]["passage_chars"] == S.passage_chars and dist["settings"]["sampling"]["max_tokens"] == 256
    assert all(p["backend"].endswith(f"?n_threads={evaluate.THREADS}") for p in (base, dist))
    from eval.runner import RunConfig  # the test may look across packages; the library may not

    for name in spec["policies"]:  # each policy's settings are valid Search-o1 settings
        RunConfig(task="hotpotqa", data="x", engine="search-o1", corpus="per-question",
                  settings=spec["policies"][name]["settings"]).engine_config()
    path = evaluate.write_compare_spec(replace(S, out=str(tmp_path)))
    assert path == tmp_path / "compare.yaml" and "policies:" in path.read_text()


def test_coa_demos_are_trained_and_served_in_the_afm_dialect(tmp_path, vocab):
    """`demos=coa`: the data stage writes Chain-of-Agents runs in AFM's dialect with the plain setting's passages,
    the filter keeps them only under the afm eval prompt, and the eval spec serves the policy in that dialect."""
    from agentic_infer.types import Trajectory
    from train.distill import evaluate

    s = replace(S, demos="coa", limit=4, sources=(("musique", "musique_train_100.json"),
                                                   ("hotpotqa-evidence", "hotpotqa_train_evidence_500.jsonl")))
    data, filt = tmp_path / "data", tmp_path / "filter"
    data.mkdir()
    filt.mkdir()
    summary = recipe.stage_data(s, data)
    trajs = [Trajectory.from_json(line) for line in (data / "demos.jsonl").open()]
    assert trajs and summary["verified"] == len(trajs) == sum(v["verified"] for v in summary["sources"].values())
    t = trajs[0]
    assert "<wiki_search>" in t.completion_text and "\\boxed" not in t.completion_text
    assert prompt_is_plain(t, t.metadata["question"], vocab, s.engine_options)
    assert not prompt_is_plain(t, t.metadata["question"], vocab, S.engine_options)  # not Search-o1's prompt
    passages = [p for o in (x.text for x in t.segments if x.kind == "observation") for p in o.split("**Document ")[1:]]
    assert passages and all(len(p.split("\n", 1)[1].split("</observation>")[0].strip()) <= s.passage_chars + 4
                            for p in passages)
    out = recipe.stage_filter(s, filt, data)
    rows = [json.loads(line) for line in (filt / "sft.jsonl").open()]
    assert out["rows"] == len(rows) >= 1 and out["dropped"]["not_plain_prompt"] == 0  # a question with a trailing space too
    assert "<plan>" in vocab.tokenizer.decode(rows[0]["input_ids"])
    assert rows[0]["metadata"]["lineage"]["operator"] == "coa_linearise"
    (tmp_path / "sft" / "model").mkdir(parents=True)
    (tmp_path / "sft" / "model" / "policy.gguf").write_bytes(b"x")
    spec = evaluate.compare_spec(replace(s, out=str(tmp_path)))
    assert spec["policies"]["sft"]["settings"]["dialect"] == "afm"
    assert evaluate.compare_spec(replace(S, out=str(tmp_path)))["policies"]["sft"]["settings"]["dialect"] == "search_o1"
    assert stage_hashes(s)["data"] != stage_hashes(replace(s, demos="plain"))["data"]
    with pytest.raises(ConfigError, match="demos='afm'"):
        DistillSettings(demos="afm")


def test_grpo_rewards_read_the_answer_in_the_policys_dialect():
    """A CoA policy answers in <answer>: its rewards read that tag; the Search-o1 rewards (\\boxed) do not."""
    done = "<think>Look it up.</think>\n<wiki_search>capital of France</wiki_search>\n<answer>Paris</answer>"
    rows = {"answer": ["Paris", "Paris"], "question": ["Capital of France?"] * 2}
    _, afm = recipe.grpo_rewards("f1", dialect="afm")
    _, plain = recipe.grpo_rewards("f1")
    assert afm([done, done.replace(">Paris<", ">Lyon<")], **rows) == [1.0, 0.0]
    assert plain([done], **{k: v[:1] for k, v in rows.items()}) == [0.0]
    [em] = recipe.grpo_monitors("f1", "afm")
    assert em([done], **{k: v[:1] for k, v in rows.items()}) == [1.0]


def test_atom_demos_write_atomic_thoughts_the_offline_rrm_scores_1_and_serve_the_atom_dialect(tmp_path, vocab):
    """`demos=atom`: verified demonstrations in Atom-Searcher's format (pre-filled <think>, a PLAN atom naming the
    hop, a JSON web_search call, a VERIFICATION atom stating the hop's retrieved answer, <answer>), every atom
    scored 1 by the offline RRM against the question's gold plan; kept by the filter only under the atom prompt."""
    from agentic_infer.types import Trajectory
    from synth.demos import gold_plan
    from train.rewards import OfflineRRM, atomic_thought_reward

    s = replace(S, demos="atom", limit=8, max_length=1024, sources=(("musique", "musique_train_100.json"),))  # longer prompt
    data, filt = tmp_path / "data", tmp_path / "filter"
    data.mkdir()
    filt.mkdir()
    summary = recipe.stage_data(s, data)
    trajs = [Trajectory.from_json(line) for line in (data / "demos.jsonl").open()]
    assert summary["verified"] == len(trajs) >= 2
    examples = {ex["id"]: ex for _, group in load_train_questions(s.sources, s.data_dir, limit=8) for ex in group}
    for t in trajs:
        text = t.completion_text
        assert text.startswith("<PLAN>") and '<tool_call>{"name": "web_search"' in text and "\\boxed" not in text
        assert text.endswith(f"<answer>{t.metadata['gold'][0]}</answer>{vocab.end_of_turn()}") and t.rewards["em"] == 1.0
        plan, _ = gold_plan(examples[t.group_id])
        atoms = OfflineRRM(plan).score(text)
        assert {a.tag for a in atoms} == {"PLAN", "ACTION", "VERIFICATION"}
        assert atomic_thought_reward(atoms) == 1.0, [(a.tag, a.why) for a in atoms if a.score != 1.0]
        assert "<think>" in "".join(x.text for x in t.segments if x.kind == "prompt")  # the dialect's pre-fill
    t = trajs[0]
    assert prompt_is_plain(t, t.metadata["question"], vocab, s.engine_options)
    assert not prompt_is_plain(t, t.metadata["question"], vocab, S.engine_options)
    out = recipe.stage_filter(s, filt, data)
    assert out["rows"] >= 1 and out["dropped"]["not_plain_prompt"] == 0


def test_grpo_atr_mixes_the_rrm_score_into_the_answer_reward_under_the_decaying_schedule():
    """`grpo_atr=atoms`: the answer term is λ(t)·ATR + (1 − λ(t))·F1 with λ = 0.5·(1 − t/T), t the trainer's step;
    `whole_think` scores each <think> as one atom; the F1 and ATR are logged alone beside it (weight 0)."""
    from types import SimpleNamespace

    from synth.demos import gold_plan
    from train.rewards import gold_plans

    (_, examples), = load_train_questions([("musique", "musique_train_100.json")], S.data_dir, limit=1)
    plan, _ = gold_plan(examples[0])
    hop = plan.hops[0]
    # a good plan (names hop 1's entity), an off-target search, then a wrong answer: F1 0
    good_plan = (f"<PLAN>Find out about {hop.title}.</PLAN><REFLECTION>Nothing yet.</REFLECTION></think>\n"
                 '<tool_call>{"name": "web_search", "arguments": {"query": "weather today"}}</tool_call>'
                 "\n<tool_response>\nnothing\n</tool_response>\n<think></think>\n<answer>zzz</answer>")
    plans = gold_plans(examples)
    rows = {"answer": [list(plan.gold)], "question": [examples[0]["question"]]}
    fmt, mixed = recipe.grpo_rewards("f1", dialect="atom_searcher", atr="atoms", plans=plans, total_steps=4)
    # atoms: PLAN 1 (names the hop), REFLECTION 0 (no search before it), ACTION 0 (off target): ATR = 1/3
    at = {t: mixed([good_plan], trainer_state=SimpleNamespace(global_step=t), **rows)[0] for t in (0, 2, 4)}
    assert at == pytest.approx({0: 0.5 * (1 / 3), 2: 0.25 * (1 / 3), 4: 0.0})
    _, whole = recipe.grpo_rewards("f1", dialect="atom_searcher", atr="whole_think", plans=plans, total_steps=4)
    # one THINK atom per <think> block: the first (plan rule 1, no cited answer 0) 0.5, the empty one 0; and the
    # ACTION 0: ATR 1/6
    assert whole([good_plan], trainer_state=SimpleNamespace(global_step=0), **rows) == pytest.approx([0.5 / 6])
    right = good_plan.replace("zzz", plan.gold[0])
    assert mixed([right], trainer_state=SimpleNamespace(global_step=4), **rows) == [1.0]  # λ = 0: F1 alone
    em, f1, atr = recipe.grpo_monitors("f1", "atom_searcher", atr="atoms", plans=plans)
    assert [m.__name__ for m in (em, f1, atr)] == ["em", "f1", "atr"]
    assert atr([good_plan], **rows) == pytest.approx([1 / 3]) and f1([right], **rows) == [1.0]
    assert [m.__name__ for m in recipe.grpo_monitors("f1", "atom_searcher", plans=plans)] == ["em", "atr"]
    assert mixed([good_plan], answer=rows["answer"], question=["a question without a plan"]) == [0.0]
    with pytest.raises(ConfigError, match="grpo_atr='yes'"):
        DistillSettings(grpo_atr="yes")
    assert stage_hashes(S)["grpo"] != stage_hashes(replace(S, grpo_atr="atoms"))["grpo"]
    assert stage_hashes(S)["sft"] == stage_hashes(replace(S, grpo_atr="atoms"))["sft"]


@pytest.mark.filterwarnings("ignore")
def test_expert_iteration_samples_the_sft_policy_and_trains_on_its_correct_rollouts(tmp_path, vocab, hf_smollm2,
                                                                                   monkeypatch):
    """The stage samples `sft/model/policy.gguf` (not the base), writes the correct rollouts as rows and trains
    from the SFT weights on them; with no correct sample nothing is trained."""
    from agentic_infer.assets import cache_dir
    from agentic_infer.backends.llamacpp import default_model_path

    sft_dir = tmp_path / "sft"
    sft_dir.mkdir()
    (sft_dir / "model").symlink_to(cache_dir() / "test-models" / f"{default_model_path().stem}-hf-f32")
    [(_, examples)] = load_train_questions((S.sources[1],), S.data_dir, limit=6)
    correct = asyncio.run(build_plain_demos(examples, vocab, S.engine_options))[0][:1]  # verified, as a sampled row
    asked = []

    def sampler(s, model, picked, *, samples):
        asked.append((model, len(picked), samples))
        return (list(correct), {"questions": len(picked), "samples": samples * len(picked), "kept": len(correct)})

    monkeypatch.setattr(recipe, "sample_rollouts", sampler)
    s = replace(S, expert_questions=2, expert_samples=3, expert_epochs=1.0, gguf="none", sft_grad_accum=1,
                sft_save_steps=100)
    d = tmp_path / "expert"
    d.mkdir()
    out = recipe.stage_expert(s, d, sft_dir, compute=recipe.resolve_compute("fp32", 2))
    assert asked == [(str(sft_dir / "model" / "policy.gguf"), 2, 3)]
    assert out["trained"] and out["rows"] == len(correct) >= 1 and out["steps"] == len(correct), (out, len(correct))
    rows = [json.loads(line) for line in (d / "sft.jsonl").open()]
    assert [r["input_ids"][:len(t.segments[0].token_ids)] for r, t in zip(rows, correct)] == [
        t.segments[0].token_ids for t in correct]
    from test_distill_quick import changed_tensors

    assert changed_tensors(sft_dir / "model", d / "model")  # trained from the SFT weights on those rows
    correct.clear()
    empty = tmp_path / "expert2"
    empty.mkdir()
    out = recipe.stage_expert(s, empty, sft_dir, compute=recipe.resolve_compute("fp32", 2))
    assert out["trained"] is False and not (empty / "model").exists()
