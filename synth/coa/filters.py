"""The progressive filter of Chain-of-Agents trajectories: each check runs only on what passed the one before, and a
dropped trajectory keeps the first reason it failed.

1. `malformed`: the completion breaks AFM's grammar (`engines.dialects.check_grammar`);
2. `repeated_query`: a query searched twice (SQuAD-normalised);
3. `missed_without_reflection`: a search that missed (some hop was still open and the observation holds none of
   the open hops' answers or supporting sentences) is not followed by a `<reflection>` before the next search or
   the answer;
4. `hop_unresolved`: a hop's answer or evidence never appeared in any observation;
5. `answer_mismatch`: some `|`-part of the answer is not an exact match of the gold.
"""

from __future__ import annotations

import re

from agentic_infer.engines.dialects import check_grammar
from agentic_infer.types import Trajectory
from agentic_infer.verify import normalize_answer, score
from synth.demos.plans import GoldPlan, Hop

REASONS = ("malformed", "repeated_query", "missed_without_reflection", "hop_unresolved", "answer_mismatch")
_BLOCK = re.compile(r"<(wiki_search|observation|reflection|answer)>(.*?)</\1>", re.DOTALL)


def _holds(text: str, hop: Hop) -> bool:
    flat = " ".join(text.split()).lower()
    if hop.evidence and all(" ".join(s.split()).lower() in flat for s in hop.evidence):
        return True
    return bool(hop.answer) and f" {normalize_answer(hop.answer)} " in f" {normalize_answer(text)} "


def coa_filter(traj: Trajectory, plan: GoldPlan, *, end_of_turn: str = "") -> str | None:
    """The first reason `traj` fails (module docstring), or None when it passes every check. `end_of_turn`: the
    chat template's end-of-turn text closing the answer (not part of AFM's grammar)."""
    text = traj.completion_text
    if end_of_turn and text.rstrip().endswith(end_of_turn):
        text = text.rstrip()[:-len(end_of_turn)]
    if check_grammar("afm", text) is not None:
        return "malformed"
    blocks = [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]
    queries = [normalize_answer(body) for tag, body in blocks if tag == "wiki_search"]
    if len(queries) != len(set(queries)):
        return "repeated_query"
    resolved: set[int] = set()
    missed = False
    for tag, body in blocks:
        if tag == "observation":
            open_hops = [k for k in range(len(plan.hops)) if k not in resolved]
            new = {k for k in open_hops if _holds(body, plan.hops[k])}
            missed, resolved = bool(open_hops) and not new, resolved | new
        elif tag == "reflection":
            missed = False
        elif missed:  # a search or the answer right after a miss, with no reflection between
            return "missed_without_reflection"
    if len(resolved) < len(plan.hops):
        return "hop_unresolved"
    parts = (traj.answer or "").split("|")
    if not all(score("em", p.strip(), list(plan.gold)) == 1.0 for p in parts):
        return "answer_mismatch"
    return None
