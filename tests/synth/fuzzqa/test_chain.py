"""One seed's chain with a scripted LLM and a real BM25 index: each gate drops in the chain with its reason, the
gates run in order and stop at the first drop, and the record keeps the provenance (versions, triples, scores)."""

from __future__ import annotations

import pytest
from conftest import BASE_Q, DOCS, FUZZ_Q, INJECT_Q

from agentic_infer.verify import MetricJudge
from synth.fuzzqa import GATES, FuzzQA, FuzzQAConfig
from synth.fuzzqa.run import make_judge

CURIE = DOCS[0]


def fuzzqa(llm, index, judge_impl=None, **cfg):
    cfg = FuzzQAConfig(**{"k_closed_book": 3, "cache": False, "judge": "em", "max_tokens": 512, **cfg})
    return FuzzQA(llm, judge_impl or MetricJudge("em"), index, cfg)


async def test_base_too_easy_then_inject_passes_every_gate(world, llm, index):
    rec = await fuzzqa(llm, index).run_seed(CURIE)
    base, inj = rec.versions
    assert (base.status, base.dropped_by) == ("easy", ("too_hard_closed_book", "too_easy"))
    assert base.closed_book["correct"] == 3 and base.with_tools is None
    assert rec.final == 1 and inj.status == "final" and inj.question == INJECT_Q
    assert [g.gate for g in inj.gates] == list(GATES) and all(g.keep for g in inj.gates)
    assert inj.closed_book["score"] == 0.0 and inj.with_tools["score"] == 1.0
    assert [e.doc_id for e in inj.evidence] == ["curie", "nobel1903"] and inj.parent == 0
    # provenance triples: Marie Curie became a variable described by the injected document
    assert [t.text for t in base.triples] == ["? in which city was born C@Marie Curie"]
    assert [t.text for t in inj.triples] == ["? in which city was born V@1",
                                             "V@1 shared the prize C@1903 Nobel Prize in Physics"]
    assert rec.writes == [{"action": "base", "ok": True, "reason": None},
                          {"action": "inject", "ok": True, "reason": None}]


def test_fuzz_records_the_detail_and_a_vaguer_variable(world, llm, index):
    import asyncio

    world.closed_book[INJECT_Q] = "\\boxed{Warsaw}"   # the injected version is still too easy: fuzz it
    rec = asyncio.run(fuzzqa(llm, index, max_actions=2).run_seed(CURIE))
    assert [v.action for v in rec.versions] == ["base", "inject", "fuzz"] and rec.final == 2
    fz = rec.versions[2]
    assert (fz.question, fz.new_fact, fz.description, fz.parent) == (FUZZ_Q, "1903", "the early 1900s", 1)
    assert fz.triples[-1].text == "V@2 described as C@the early 1900s"


@pytest.mark.parametrize("gate, breaks, reason", [
    ("not_covered", lambda w: setattr(w, "inject", f"Question: {BASE_Q}\nFact: x"), "no_change"),
    ("too_hard_closed_book", lambda w: w.closed_book.__setitem__(INJECT_Q, "\\boxed{Warsaw}"), "too_easy"),
    ("solvable_with_tools", lambda w: setattr(w, "tools", "\\boxed{Krakow}"), "not_solvable_with_tools"),
    ("no_alternative", lambda w: setattr(w, "alternative", "\\boxed{Krakow}"), "alternative_answer"),
])
async def test_each_gate_drops_the_edit_with_its_reason_and_stops_there(world, llm, index, gate, breaks, reason):
    breaks(world)
    rec = await fuzzqa(llm, index, max_actions=1).run_seed(CURIE)
    inj = rec.versions[1]
    assert inj.dropped_by == (gate, reason) and rec.final is None
    assert [g.gate for g in inj.gates] == list(GATES[:GATES.index(gate) + 1])  # in order, none after the drop
    after_base = world.calls[world.calls.index("inject") + 1:]
    later = {"not_covered": {"read", "closed_book", "tools", "alternative"},
             "too_hard_closed_book": {"tools", "alternative"}, "solvable_with_tools": {"alternative"},
             "no_alternative": set()}[gate]
    assert not later & set(after_base), after_base


async def test_answerable_drop_stops_before_the_closed_book_samples(world, llm, index):
    world.read = "\\boxed{Krakow}"
    rec = await fuzzqa(llm, index).run_seed(CURIE)
    [base] = rec.versions
    assert base.dropped_by == ("answerable", "not_answerable_from_evidence") and base.status == "dropped"
    assert world.calls == ["base", "read"]  # the seed ends: no valid version to edit


async def test_unparsable_action_is_counted_and_the_chain_goes_on(world, llm, index):
    world.inject = "I cannot do that."
    rec = await fuzzqa(llm, index, max_actions=2).run_seed(CURIE)
    assert rec.writes[1] == {"action": "inject", "ok": False, "reason": "unparsable"}
    assert rec.writes[2]["action"] == "fuzz" and rec.versions[-1].action == "fuzz"


async def test_llm_json_judge_is_asked_for_every_verdict(world, llm, index):
    judge = make_judge("json", llm, None)
    rec = await fuzzqa(llm, index, judge_impl=judge, judge="json").run_seed(CURIE)
    assert rec.final == 1
    assert world.calls.count("judge") == judge.calls > 0
