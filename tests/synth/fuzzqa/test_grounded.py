"""Grounded mode on real shared records: hops, evidence ids and triples come from the published structure."""

from __future__ import annotations

from agentic_infer.tasks import get_task
from agentic_infer.tasks._multihop import pooled
from agentic_infer.tools.retrieval.corpus import parse_literal
from agentic_infer.tools.retrieval.recipes import pooled_id
from synth.fuzzqa.grounded import grounded_seed, grounded_seeds
from tests.conftest import shared_data


def test_musique_hops_follow_the_decomposition():
    path = shared_data("multihop/musique_full_train_100.jsonl")
    seeds, skipped = grounded_seeds("musique", path)
    assert len(seeds) == 50 and skipped == {"unanswerable": 50}  # the file holds 50 answerable records
    raw = {r["raw"]["id"]: r["raw"] for r in get_task("musique").load(path)}[seeds[0].seed_id]
    steps = parse_literal(raw["question_decomposition"])
    paras = {p["idx"]: p for p in parse_literal(raw["paragraphs"])}
    support = [paras[s["paragraph_support_idx"]] for s in steps]
    assert [e.title for e in seeds[0].evidence] == [p["title"] for p in support]
    assert [e.doc_id for e in seeds[0].evidence] == [pooled_id(p["title"], p["paragraph_text"]) for p in support]
    assert seeds[0].answer == raw["answer"]
    t = seeds[0].triples
    assert len(t) == len(steps) and t[-1].object == "?" and t[0].object == "V@1"
    assert t[0].text == "C@Nissedal country V@1"  # "Nissedal >> country"
    assert all(step["answer"].lower() in " ".join(e.fact for e in seeds[0].evidence).lower() for step in steps)


def test_hop_documents_exist_in_the_pooled_corpus_the_agent_searches():
    path = shared_data("multihop/hotpotqa_dev_distractor_150.jsonl")
    seeds, _ = grounded_seeds("hotpotqa", path)
    ids = {d.id for d in pooled(path)}
    assert len(seeds) == 150 and all(e.doc_id in ids for s in seeds for e in s.evidence)
    s = seeds[0]
    raw = get_task("hotpotqa").load(path)[0]["raw"]
    titles = {str(f[0]) for f in parse_literal(raw["supporting_facts"])}
    assert {e.title for e in s.evidence} == titles
    assert [x.text for x in s.triples] == ["C@Nobody's Hero supporting fact V@1", "V@1 supporting fact ?"]


def test_2wiki_triples_are_the_evidence_triples():
    path = shared_data("multihop/2wiki_dev_150.jsonl")
    ex = get_task("2wiki").load(path)[0]
    seed, reason = grounded_seed(ex)
    assert reason is None
    evid = parse_literal(ex["raw"]["evidences"])
    assert [t.relation for t in seed.triples] == [r for _, r, _ in evid]
    # Free Guy (the answer) is the target; the directors are bridge variables; the birth dates constants
    assert [t.text for t in seed.triples] == ["C@Forbidden Ground director V@1", "? director V@2",
                                              "V@1 date of birth C@2 November 1932",
                                              "V@2 date of birth C@July 23, 1968"]


def test_records_without_structure_are_skipped_with_a_reason():
    path = shared_data("multihop/2wiki_dev_150.jsonl")
    _, skipped = grounded_seeds("2wiki", path)
    assert skipped == {"no_structured_evidence": 19}
