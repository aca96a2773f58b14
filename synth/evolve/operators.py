"""SE-Agent's three operators over attempt summaries (`summary.py`); each writes the guidance that conditions the
next, really executed attempt (the engine appends it to the prompt: `engines.prompts.with_guidance`).

- `revision(failed)`: from a failed attempt, guidance that avoids its failure mode (a fundamentally different
  approach after a wrong answer);
- `recombination(a, b)`: the working parts of two attempts (the calls that returned something, the answers
  already known to be wrong) merged into one plan;
- `refinement(pool, k)`: keep the best attempts with diversity (best verdict first, one per distinct answer),
  and guidance to check and improve the best one.
Templates: every guidance is a function of the summaries, so a run is reproducible; an LLM's analysis of an
attempt (`analyst.py`), when the summary has one, is quoted after the template's sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

from synth.evolve.summary import AttemptSummary

OPERATORS = ("revision", "recombination", "refinement")


def _quoted(items: Sequence[str], most: int = 4) -> str:
    return ", ".join(f"'{x}'" for x in list(items)[:most])


def _analysis(s: AttemptSummary) -> str:
    return f" Analysis of that attempt: {s.analysis}" if s.analysis else ""


def revision(failed: AttemptSummary) -> str:
    """Guidance that avoids `failed`'s failure mode."""
    tried = f" It tried {_quoted(failed.queries)}." if failed.queries else ""
    return {
        "unfinished": "An earlier attempt ran out of room before it answered. Be brief and give the final answer "
                      "early, in the required format.",
        "no_answer": "An earlier attempt ended without a final answer in the required format. End with the answer "
                     "in exactly the required format.",
        "tool_error": f"An earlier attempt made a tool call that failed.{tried} Check each call's format before "
                      "making it.",
        "repeated_action": f"An earlier attempt repeated the same call.{tried} Never repeat a call: change the query "
                           "or the approach.",
        "no_tool_call": f"An earlier attempt answered '{failed.answer}' without using a tool, and it was wrong. Look "
                        "the facts up first.",
    }.get(failed.failure, f"An earlier attempt answered '{failed.answer}', which is wrong.{tried} Do not give that "
                          "answer again; take a fundamentally different approach.") + _analysis(failed)


def recombination(a: AttemptSummary, b: AttemptSummary) -> str:
    """The working parts of two attempts: calls that returned documents, answers known to be wrong."""
    useful = [q for s in (a, b) for q in s.queries if s.documents] or [q for s in (a, b) for q in s.queries]
    wrong = sorted({s.answer for s in (a, b) if s.answer and s.verdict < 1.0})
    parts = []
    if useful:
        parts.append(f"Earlier attempts made these calls, which returned results: {_quoted(useful)}; build on them.")
    if wrong:
        parts.append(f"These answers were wrong: {_quoted(wrong)}; do not repeat them.")
    parts += [f"Analysis of an attempt that answered '{s.answer}': {s.analysis}" for s in (a, b) if s.analysis]
    return " ".join(parts) or "Two earlier attempts gave no answer; combine a careful plan with a final answer."


def refinement(pool: Sequence[AttemptSummary], k: int) -> tuple[list[AttemptSummary], str]:
    """The `k` best attempts with diversity (one per distinct answer, best verdict first) and guidance to improve
    the best one."""
    kept, seen = [], set()
    for s in sorted(pool, key=lambda s: -s.verdict):
        key = (s.answer or "").strip().lower() or f"<{s.failure}:{s.id}>"
        if key not in seen:
            kept.append(s)
            seen.add(key)
        if len(kept) == k:
            break
    best = kept[0]
    guidance = (f"The most promising earlier attempt answered '{best.answer}' ({best.failure.replace('_', ' ')}). "
                "Check it step by step, fix what is wrong, and give the corrected final answer." + _analysis(best))
    return kept, guidance
