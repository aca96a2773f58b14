"""The five gates as plain functions: each drops with its reason and keeps otherwise."""

from __future__ import annotations

import pytest

from agentic_infer.verify import Verdict
from synth.fuzzqa import gates
from synth.fuzzqa.provenance import Evidence, Triple, Version

RIGHT, WRONG = Verdict("CORRECT", 1.0), Verdict("INCORRECT", 0.0)
CURIE = Evidence("curie", "Marie Curie", "Marie Curie was a physicist. She was born in Warsaw in 1867.",
                 "She was born in Warsaw in 1867.")
NOBEL = Evidence("nobel", "1903 Nobel Prize in Physics", "The 1903 Nobel Prize in Physics was shared by Marie Curie "
                 "and Henri Becquerel.", "The 1903 Nobel Prize in Physics was shared by Marie Curie and Henri Becquerel.")


def version(question, *, action="base", evidence=(CURIE,), answer="Warsaw", new_fact=None):
    return Version(0, action, question, answer, list(evidence), [Triple("?", "born in", "C@Marie Curie")],
                   new_fact=new_fact)


BASE = version("In which city was Marie Curie born in 1867?")


def test_not_covered_keeps_a_base_and_a_real_inject_and_fuzz():
    assert gates.not_covered(BASE, None) is True
    inj = version("Where was the woman who shared the 1903 Nobel Prize in Physics born?", action="inject",
                  evidence=(CURIE, NOBEL), new_fact=NOBEL.fact)
    assert gates.not_covered(inj, BASE) is True
    fz = version("In which city was Marie Curie born in the 1860s?", action="fuzz", new_fact="1867")
    assert gates.not_covered(fz, BASE) is True


@pytest.mark.parametrize("edit, reason", [
    (version("In which city was Marie Curie born in 1867?", action="inject", evidence=(CURIE, NOBEL)), "no_change"),
    (version("Where was the laureate born?", action="inject", evidence=(CURIE, CURIE)), "document_already_used"),
    (version("Where was the laureate born?", action="inject",
             evidence=(CURIE, Evidence("other", "Curie again", CURIE.text, CURIE.fact)), new_fact=CURIE.fact),
     "fact_already_covered"),
    (version("In which city was Marie Curie born in the 1860s?", action="fuzz", new_fact="1900"),
     "detail_not_in_question"),
    (version("In which city was Marie Curie, born 1867, born?", action="fuzz", new_fact="1867"),
     "detail_still_present"),
])
def test_not_covered_drops_with_its_reason(edit, reason):
    assert gates.not_covered(edit, BASE) == (False, reason)


def test_answerable():
    assert gates.answerable(BASE, RIGHT) is True
    assert gates.answerable(BASE, WRONG) == (False, "not_answerable_from_evidence")
    assert gates.answerable(BASE, None) == (False, "not_answerable_from_evidence")
    assert gates.answerable(version("Is Warsaw where Curie was born?"), RIGHT) == (False, "answer_in_question")
    assert gates.answerable(version("Where was Curie born?", answer="Krakow"), RIGHT) == \
        (False, "answer_not_in_evidence")


def test_too_hard():
    assert gates.too_hard([WRONG] * 8) is True
    assert gates.too_hard([WRONG] * 7 + [RIGHT]) == (False, "too_easy")
    assert gates.too_hard([]) == (False, "no_closed_book_samples")


def test_solvable():
    assert gates.solvable([WRONG, RIGHT]) is True
    assert gates.solvable([WRONG, WRONG]) == (False, "not_solvable_with_tools")
    assert gates.solvable([WRONG, RIGHT], min_correct=2) == (False, "not_solvable_with_tools")


def test_no_alternative():
    assert gates.no_alternative(None, None) is True
    assert gates.no_alternative("None.", None) is True
    assert gates.no_alternative("warsaw, poland", RIGHT) is True
    assert gates.no_alternative("Krakow", WRONG) == (False, "alternative_answer")
