"""The five gates of every edit, as plain functions: each returns `True` (keep) or `(False, reason)`.

    not_covered(version, previous, overlap=0.8)     # 1: the edit adds something (a new fact / a vaguer detail)
    answerable(version, reading)                    # 2: the evidence answers it, with the gold and only the gold
    too_hard(closed_book)                           # 3: k closed-book answers, all judged wrong
    solvable(with_tools, min_correct=1)             # 4: a retrieval agent reaches the gold (TaskCraft's check)
    no_alternative(alternative, same_as_gold)       # 5: no other answer fits (from the retrieved documents)

The LLM work (reading, closed-book sampling, the agent, the alternative search, the judge) happens in
`synth.fuzzqa.run.Gatekeeper`, which measures one gate at a time in `GATES` order and stops at the first
drop; the functions here only decide, so each is testable with plain values. `verdicts` are
`agentic_infer.verify.Verdict`s. Reasons (counted in `stats.json`): see each function.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentic_infer.verify import Verdict
from synth.fuzzqa.actions import NONE_WORDS
from synth.fuzzqa.provenance import Version, contains, content_words

KEEP = True
Result = bool | tuple[bool, str]


def not_covered(version: Version, previous: Version | None, *, overlap: float = 0.8) -> Result:
    """Gate 1. Base: keep. INJECT: `document_already_used` (the new hop's document is already evidence),
    `fact_already_covered` (>= `overlap` of the new fact's content words are in the earlier evidence),
    `no_change` (the question is the same). FUZZ: `no_change`, `detail_not_in_question` (the replaced detail
    was not in the question), `detail_still_present` (it is still in the new question)."""
    if previous is None or version.action in ("base", "grounded"):
        return KEEP
    if " ".join(version.question.split()).lower() == " ".join(previous.question.split()).lower():
        return False, "no_change"
    if version.action == "inject":
        new = version.evidence[-1]
        if new.doc_id in {e.doc_id for e in previous.evidence}:
            return False, "document_already_used"
        words = content_words(version.new_fact or new.fact)
        if words and len(words & content_words(previous.evidence_text() + " " + previous.question)) \
                >= overlap * len(words):
            return False, "fact_already_covered"
        return KEEP
    detail = version.new_fact or ""
    if not detail or not contains(previous.question, detail):
        return False, "detail_not_in_question"
    if contains(version.question, detail):
        return False, "detail_still_present"
    return KEEP


def answerable(version: Version, reading: Verdict | None) -> Result:
    """Gate 2. `answer_in_question` (the question gives its answer away), `answer_not_in_evidence` (no
    evidence document states the answer), `not_answerable_from_evidence` (a reader given only the evidence
    does not reach the gold, as judged; `reading` is that verdict, None when it was not run)."""
    if contains(version.question, version.answer):
        return False, "answer_in_question"
    if not contains(version.evidence_text(), version.answer):
        return False, "answer_not_in_evidence"
    if reading is None or not reading.correct:
        return False, "not_answerable_from_evidence"
    return KEEP


def too_hard(closed_book: Sequence[Verdict]) -> Result:
    """Gate 3. `too_easy` when any of the k closed-book answers is judged correct (ASearcher: 0 of k)."""
    if not closed_book:
        return False, "no_closed_book_samples"
    return KEEP if not any(v.correct for v in closed_book) else (False, "too_easy")


def solvable(with_tools: Sequence[Verdict], *, min_correct: int = 1) -> Result:
    """Gate 4. `not_solvable_with_tools` when fewer than `min_correct` retrieval-agent runs reach the gold."""
    return KEEP if sum(v.correct for v in with_tools) >= min_correct else (False, "not_solvable_with_tools")


def no_alternative(alternative: str | None, same_as_gold: Verdict | None) -> Result:
    """Gate 5. `alternative_answer` when the check names an answer (not "none") that the judge does not
    find equivalent to the gold; `same_as_gold` is that verdict (None when no alternative was named)."""
    if alternative is None or alternative.strip().lower().strip(".") in NONE_WORDS:
        return KEEP
    if same_as_gold is not None and same_as_gold.correct:
        return KEEP
    return False, "alternative_answer"
