"""Demonstrations from gold decompositions on real shared-data records (synth/demos)."""

from __future__ import annotations

import asyncio

import pytest

from agentic_infer.backends.base import encode_continuation, encode_prompt
from agentic_infer.engines.rid import NOTHING_FOUND
from agentic_infer.errors import ConfigError
from agentic_infer.tasks import get_task
from agentic_infer.testing import FakeLLM
from agentic_infer.types import IGNORE_INDEX
from synth.demos import DemoOptions, Vocab, build_demo, build_demos, gold_plan, variants
from tests.conftest import shared_data


def _load(task: str, name: str, limit: int):
    return get_task(task).load(shared_data(f"multihop/{name}"), limit=limit)


@pytest.fixture(scope="module")
def vocab():
    return Vocab(FakeLLM())


def _build(examples, vocab, **options):
    return asyncio.run(build_demos(examples, vocab, DemoOptions(**options), task="t"))


def test_musique_demos_pass_verification_and_carry_the_evidence(vocab):
    examples = _load("musique", "musique_train_100.json", 6)
    result = _build(examples, vocab)
    assert result.stats["kept"] >= 12 and result.stats["questions_with_demo"] >= 5
    for t in result.trajectories:
        assert t.rewards["em"] == 1.0 and t.rewards["evidence_recall"] == 1.0
        assert t.finish_reason == "answer" and t.metadata["demonstration"] and t.token_exact
        hops = t.metadata["demo"]["hops"]
        executed = [s for s in t.steps if s.metadata.get("status") == "executed"]
        assert [s.arguments["query"] for s in executed] == [h["query"] for h in hops]
        for step, hop in zip(executed, hops):  # Reason-in-Documents = the supporting sentences, retrieved for real
            assert step.observation != NOTHING_FOUND
            assert all(sentence in step.observation for sentence in hop["evidence"])
            assert step.metadata["doc_ids"]  # the real BM25 hits
        assert f"\\boxed{{{t.example['gold'][0]}}}" in t.text
    # MuSiQue `#1` references are resolved with the previous step's answer
    plan, _ = gold_plan(examples[0])
    assert "#1" not in plan.hops[1].queries["subq"] and plan.hops[0].answer in plan.hops[1].queries["subq"]


def test_sft_row_trains_exactly_the_scripted_turns(vocab):
    [t] = _build(_load("hotpotqa", "hotpotqa_train_100.json", 1), vocab, max_variants=1, ks=(3,)).trajectories
    row = t.sft_row()
    assert row["input_ids"] == t.token_ids()
    start = 0
    for seg in t.segments:
        n = len(seg.token_ids)
        labels = row["labels"][start:start + n]
        if seg.kind == "model":
            assert labels == seg.token_ids and seg.metadata["scripted"] and seg.logprobs is None
            assert seg.token_ids == encode_continuation(vocab, seg.text)  # the one encode semantics
        else:
            assert labels == [IGNORE_INDEX] * n  # prompt and observations are masked
        start += n
    assert t.segments[0].token_ids == encode_prompt(vocab, t.segments[0].text)
    assert t.segments[-1].text.endswith("<|im_end|>")  # the model learns to stop
    assert sum(s.kind == "observation" for s in t.segments) == len(t.metadata["demo"]["hops"])


def test_hotpotqa_and_2wiki_plans_follow_the_supporting_facts(vocab):
    [hp] = _load("hotpotqa", "hotpotqa_train_100.json", 1)
    plan, _ = gold_plan(hp)
    titles = list(dict.fromkeys(str(f[0]) for f in hp["raw"]["supporting_facts"]))
    assert sorted(h.title for h in plan.hops) == sorted(titles)
    [tw] = _load("2wiki", "2wiki_dev_150.jsonl", 1)
    plan, _ = gold_plan(tw)
    assert plan.order_free and plan.hops[0].queries["subq"] == "Forbidden Ground director"
    assert plan.hops[0].answer == "Pál Gábor"
    kinds = {(v["wording"], v["order"]) for v in variants(plan, DemoOptions(max_variants=8))}
    assert ("subq", "reversed") in kinds and ("title", "given") in kinds
    result = _build([tw], vocab, max_variants=8)
    assert result.stats["kept"] == result.stats["variants_tried"] == 8


def _index(ex, keep=lambda d: True):
    from agentic_infer.tools.retrieval.bm25 import BM25Index
    from agentic_infer.tools.retrieval.corpus import question_paragraphs

    return BM25Index.from_documents([d for d in question_paragraphs(ex["raw"]) if keep(d)])


VARIANT = {"wording": "subq", "k": 3, "order": "given"}


def test_documents_per_search_to_vary_is_ks():
    assert {v["k"] for v in variants(gold_plan(_load("hotpotqa", "hotpotqa_train_100.json", 1)[0])[0],
                                     DemoOptions(ks=(2, 4), wordings=("subq",)))} == {2, 4}
    with pytest.raises(ConfigError, match="'top_ks' is renamed 'ks'"):
        DemoOptions(top_ks=(3,))


def test_missing_evidence_is_rejected_with_its_reason(vocab):
    [ex] = _load("musique", "musique_train_100.json", 1)
    plan, _ = gold_plan(ex)
    traj, reason = asyncio.run(build_demo(plan, _index(ex), vocab, VARIANT, DemoOptions()))
    assert reason is None and traj.rewards["evidence_recall"] == 1.0
    # a corpus without the supporting paragraphs: the searches run, the evidence is not there
    distractors = _index(ex, keep=lambda d: not d.metadata["is_supporting"])
    traj, reason = asyncio.run(build_demo(plan, distractors, vocab, VARIANT, DemoOptions()))
    assert reason == "evidence_not_retrieved" and traj.rewards["evidence_recall"] == 0.0
    assert traj.metadata["demo"]["verified"] is False


def test_a_wrong_answer_is_rejected_by_verify(vocab):
    from synth.demos.build import verify_demo
    from synth.demos.scripted import RecordingRetriever

    [ex] = _load("musique", "musique_train_100.json", 1)
    plan, _ = gold_plan(ex)
    traj, reason = asyncio.run(build_demo(plan, _index(ex), vocab, VARIANT, DemoOptions()))
    assert reason is None
    recording = RecordingRetriever(_index(ex))
    recording.search([h.query("subq") for h in plan.hops], 3)
    assert verify_demo(traj, plan, plan.hops, "subq", recording)[1] is None
    traj.answer = "Atlantis"
    verdicts, reason = verify_demo(traj, plan, plan.hops, "subq", recording)
    assert reason == "answer_mismatch" and verdicts["em"] == 0.0


def test_unanswerable_and_plain_records_have_no_plan(vocab):
    examples = _load("musique", "musique_full_train_100.jsonl", 20)
    result = _build(examples, vocab, max_variants=1, ks=(5,))
    assert result.stats["no_plan"].get("unanswerable", 0) >= 5
    assert gold_plan({"id": "x", "question": "q?", "gold": ["a"]}) == (None, "no_structured_evidence")


def test_pooled_corpus_variant(vocab):
    examples = _load("hotpotqa", "hotpotqa_train_100.json", 8)
    result = _build(examples, vocab, corpus="pooled", max_variants=1, ks=(5,))
    assert result.stats["kept"] >= 5  # harder: distractors from every question, still mostly retrieved
    assert all(t.metadata["demo"]["corpus"] == "pooled" for t in result.trajectories)


def test_real_gguf_tokenizer_ids_are_canonical():
    pytest.importorskip("llama_cpp")
    from agentic_infer.backends.tokenizer import load_tokenizer

    tok = load_tokenizer("default")
    vocab = Vocab(tok)
    [t] = asyncio.run(build_demos(_load("musique", "musique_train_100.json", 1), vocab,
                                  DemoOptions(max_variants=1, ks=(3,)))).trajectories
    for seg in t.segments[1:]:
        assert seg.token_ids == tok.encode(seg.text, add_special=False)
    assert t.segments[-1].token_ids[-1] == tok.encode("<|im_end|>", add_special=False)[-1]
