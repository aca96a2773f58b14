"""Atom-Searcher's atomic thoughts, the reasoning reward model (RRM) that scores each one, and the Atomic Thought
Reward (ATR).

    atoms = atomic_thoughts(text)                       # [Atom(tag="PLAN", text=..., start=...), ...]
    atoms = OfflineRRM(plan).score(text)                # per-atom scores against the gold decomposition
    atoms = await LLMRRM(RubricJudge(llm)).score(text, question=q, gold=g)   # or any LLM judge with a rubric
    atr = atomic_thought_reward(atoms)                  # mean of the scored atoms; None when none was scored
    reward = atom_searcher_reward(f1, atr, step=t, total_steps=T)   # λ(t)·ATR + (1 − λ(t))·F1 (schedules.py)
    score_trajectory(traj, rrm)                         # atoms kept on their model segments, rewards["atr"]
    trl_reward(atr_outcome_reward, plans=plans, total_steps=T)  # GRPO: the schedule, step from TRL's trainer state

**Atoms.** The model chooses its own upper-case tags inside `<think>` (`<PLAN>`, `<OBSERVATION>`,
`<HYPOTHESIS_TESTING>`, `<REFLECTION>`, `<VERIFICATION>`, `<RISK_ANALYSIS>`, ...): every `<NAME>…</NAME>` span of
the model's text is an atom, matched case-insensitively (the released model writes upper case; `<plan>` counts
too), names returned upper-case. The dialect's own tags (`think`, `tool_call`, `tool_response`, `answer`) are not
atoms, and nothing inside a tool response is. Each `<tool_call>` adds an `ACTION` atom (its query), so the RRM can
judge whether the action targets the right hop. `whole_think=True` is the paper's ablation: each `<think>` block
is ONE atom (`THINK`) and no tag inside it is looked at.

**Offline RRM** (no LLM; a `GoldPlan` from `synth.demos.gold_plan`): a hop is resolved once a tool response so
far contains its answer. Rules, each 1 or 0:
- `PLAN` (and `HYPOTHESIS…`): targets a hop not yet resolved: names its entity (its paragraph title, or the
  answer of the hop before it, which its search needs) or holds at least half of its sub-question's content words;
- `ACTION`: the query targets the next unresolved hop in that sense (any unresolved hop of an order-free plan);
- `VERIFICATION` and `OBSERVATION`: states a hop's answer that a tool response before it contains (it cites a
  passage that holds the hop's answer);
- `REFLECTION`: follows a search that resolved no new hop (a reflection where a search missed);
- `THINK` (the ablation): the mean of the plan rule and the verification rule over the whole block.
Other tags are left unscored (None) for an LLM RRM to judge.

**As a training reward** (`atr_outcome_reward`): the outcome (F1 by default, `train.rewards.outcome`) and the
offline RRM's ATR of the completion (the trajectory's text, tool responses included, so a hop counts as
resolved once a result showed it), mixed by `atom_searcher_reward` at the optimizer step the rollout was
generated at (`RewardInput.extra["step"]`, which `trl_reward` takes from TRL's trainer state) over
`total_steps`; a completion with no scored atom, or a question without a gold plan in `plans` (normalised
question -> GoldPlan), gets process reward 0. `atomic_thought_score` is the ATR alone (logged at weight 0). **LLM RRM**: any judge with `score(question,
prediction, reference) -> Verdict` (e.g. `RubricJudge`, 1–10 mapped to [0, 1]) rates each atom with the question,
the atom's tag and the trajectory so far.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agentic_infer.types import Trajectory
from agentic_infer.verify import normalize_answer
from synth.demos.plans import GoldPlan

_RESPONSE = re.compile(r"<tool_response>(.*?)(?:</tool_response>|\Z)", re.DOTALL | re.IGNORECASE)
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)
_SPAN = re.compile(r"<([A-Za-z][A-Za-z0-9_]*)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_THINK = re.compile(r"(?:<think>|\A)((?:(?!<think>).)*?)</think>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9_]*>")
_ANSWER = re.compile(r"<answer>.*?</answer>", re.DOTALL | re.IGNORECASE)
_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)
_QUERY = re.compile(r'"query"\s*:\s*"((?:[^"\\]|\\.)*)"')
_STOP = frozenset("a an the of in on at to for by with from and or is was were are be been who what which when where "
                  "whose whom how why did does do that this as it its his her their than".split())


@dataclass
class Atom:
    """One atomic thought: its tag (upper case), text, where it starts in the parsed text, and its RRM score."""

    tag: str
    text: str
    start: int
    score: float | None = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _blank(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _masked(text: str) -> str:
    """`text` with every tool response blanked out (same length, so offsets hold)."""
    return _blank(_RESPONSE, text)


def _actions(text: str) -> list[Atom]:
    out = []
    for m in _CALL.finditer(_masked(text)):
        q = _QUERY.search(m.group(1))
        out.append(Atom("ACTION", (q.group(1) if q else m.group(1)).strip(), m.start()))
    return out


def atomic_thoughts(text: str, *, whole_think: bool = False) -> list[Atom]:
    """The atoms of a completion, in order (module docstring); `whole_think`: one `THINK` atom per think block."""
    masked = _masked(text)
    if whole_think:
        atoms = [Atom("THINK", m.group(1).strip(), m.start(1)) for m in _THINK.finditer(masked)]
    else:
        for pattern in (_CALL, _ANSWER, _THINK_TAG):  # no atom inside an action or the answer; think tags are no atom
            masked = _blank(pattern, masked)
        atoms = [Atom(m.group(1).upper(), m.group(2).strip(), m.start()) for m in _SPAN.finditer(masked)]
    return sorted(atoms + _actions(text), key=lambda a: a.start)


def _plain(text: str) -> str:
    """Normalised words of `text`, tags read as spaces (so "County.</VERIFICATION>" ends in "county")."""
    return normalize_answer(_TAG.sub(" ", text))


def _has(haystack: str, needle: str | None) -> bool:
    n = _plain(needle or "")
    return bool(n) and f" {n} " in f" {_plain(haystack)} "


def _words(text: str) -> set[str]:
    return {w for w in _plain(text).split() if w not in _STOP}


class OfflineRRM:
    """Scores atoms against a gold decomposition (module docstring); `score(text)` returns the scored atoms."""

    def __init__(self, plan: GoldPlan, *, whole_think: bool = False):
        self.plan, self.whole_think = plan, whole_think

    def _entities(self, k: int) -> list[str]:
        """Hop k's paragraph title, its head ("Van Hook Township" of "Van Hook Township, Mountrail County, North
        Dakota"; "Dune" of "Dune (novel)"), and the answer of the hop before it."""
        hops = self.plan.hops
        head = re.split(r",| \(", hops[k].title)[0]
        return [hops[k].title, head] + ([hops[k - 1].answer] if k and hops[k - 1].answer else [])

    def _resolved(self, seen: str) -> set[int]:
        return {k for k, h in enumerate(self.plan.hops) if h.answer and _has(seen, h.answer)}

    def score(self, text: str) -> list[Atom]:
        responses = [(m.start(), m.group(1)) for m in _RESPONSE.finditer(text)]
        atoms = atomic_thoughts(text, whole_think=self.whole_think)
        for atom in atoms:
            before = [body for at, body in responses if at < atom.start]
            atom.score, atom.why = self._rule(atom, " ".join(before), " ".join(before[:-1]), bool(before))
        return atoms

    def _aims_at(self, text: str, k: int) -> str | None:
        """Why `text` targets hop k (it names the hop's entity, or holds half its sub-question's words), or None."""
        named = next((e for e in self._entities(k) if _has(text, e)), None)
        if named:
            return f"hop {k + 1}: names {named!r}"
        want = _words(self.plan.hops[k].query("subq"))
        share = len(want & _words(text)) / len(want) if want else 0.0
        return f"hop {k + 1}: {share:.0%} of its sub-question" if share >= 0.5 else None

    def _rule(self, atom: Atom, seen: str, before_last: str, searched: bool) -> tuple[float | None, str]:
        hops, tag = self.plan.hops, atom.tag
        resolved = self._resolved(seen)
        open_hops = [k for k in range(len(hops)) if k not in resolved]
        cited = next((hops[k].answer for k in sorted(resolved) if _has(atom.text, hops[k].answer)), None)
        if tag == "ACTION":
            if not open_hops:
                return 0.0, "every hop is resolved: no search needed"
            nxt = open_hops if self.plan.order_free else open_hops[:1]
            why = next((w for k in nxt if (w := self._aims_at(atom.text, k))), None)
            return float(why is not None), why or f"misses the next open hop ({open_hops[0] + 1})"
        plan = next((w for k in open_hops if (w := self._aims_at(atom.text, k))), None)
        if tag == "PLAN" or tag.startswith("HYPOTHESIS"):
            return float(plan is not None), plan or "targets no open hop"
        if tag in ("VERIFICATION", "OBSERVATION"):
            return float(cited is not None), f"cites {cited!r}" if cited else "states no retrieved hop answer"
        if tag == "REFLECTION":
            missed = searched and resolved == self._resolved(before_last)
            return float(missed), "the last search resolved no new hop" if missed else "no search had missed"
        if tag == "THINK":
            return ((plan is not None) + (cited is not None)) / 2, f"plan: {plan}; verification: {cited!r}"
        return None, "no offline rule for this tag"


class LLMRRM:
    """Any judge with `score(question, prediction, reference)` (e.g. `RubricJudge`: 1–10) rates each atom."""

    PROMPT = ("Question: {question}\n\nThe agent's reasoning so far:\n{context}\n\nRate this one {tag} step of the "
              "agent's reasoning: is it correct, useful for answering the question, and grounded in what the agent "
              "has seen?")

    def __init__(self, judge: Any, *, whole_think: bool = False, low: float = 1.0, high: float = 10.0,
                 context_chars: int = 2000):
        self.judge, self.whole_think, self.low, self.high = judge, whole_think, low, high
        self.context_chars = context_chars

    async def score(self, text: str, *, question: str, gold: Sequence[str] | None = None) -> list[Atom]:
        atoms = atomic_thoughts(text, whole_think=self.whole_think)
        for atom in atoms:
            context = text[max(0, atom.start - self.context_chars):atom.start]
            verdict = await self.judge.score(self.PROMPT.format(question=question, context=context, tag=atom.tag),
                                             atom.text, list(gold) if gold else None)
            if verdict.label == "invalid":
                atom.score, atom.why = None, verdict.reason
            else:
                atom.score = min(1.0, max(0.0, (verdict.score - self.low) / (self.high - self.low)))
                atom.why = verdict.reason[-300:]
        return atoms


def atomic_thought_reward(atoms: Sequence[Atom]) -> float | None:
    """ATR: the mean score of the scored atoms (None when the RRM scored none)."""
    scores = [a.score for a in atoms if a.score is not None]
    return sum(scores) / len(scores) if scores else None


def score_trajectory(traj: Trajectory, atoms: Sequence[Atom]) -> float | None:
    """Keep each atom (with its score) on the model segment it starts in (`metadata["atoms"]`) and write
    `rewards["atr"]`; `atoms` were parsed from `traj.completion_text`. Returns the ATR."""
    offset, bounds = 0, []
    for i, seg in enumerate(traj.segments[traj.prompt_end():], traj.prompt_end()):
        bounds.append((offset, offset + len(seg.text), i))
        offset += len(seg.text)
    for seg in traj.segments:
        seg.metadata.pop("atoms", None)
    for atom in atoms:
        i = next((i for lo, hi, i in bounds if lo <= atom.start < hi), None)
        if i is not None:
            traj.segments[i].metadata.setdefault("atoms", []).append(atom.to_dict())
    atr = atomic_thought_reward(atoms)
    if atr is not None:
        traj.rewards["atr"] = atr
    return atr


def atomic_thought_score(inp: Any, *, plans: Mapping[str, GoldPlan], whole_think: bool = False) -> float:
    """The offline RRM's ATR of a completion against its question's gold plan (0.0 without a plan or a scored
    atom): see the module docstring."""
    plan = plans.get(normalize_answer(inp.question or ""))
    if plan is None:
        return 0.0
    text = inp.trajectory.completion_text if inp.trajectory is not None else inp.completion
    return atomic_thought_reward(OfflineRRM(plan, whole_think=whole_think).score(text)) or 0.0


def atr_outcome_reward(inp: Any, *, plans: Mapping[str, GoldPlan], total_steps: int, whole_think: bool = False,
                       answer: str = "f1", answer_format: str | None = "answer_tag", start: float = 0.5) -> float:
    """Atom-Searcher's reward: λ(t)·ATR + (1 − λ(t))·outcome, λ decaying linearly from `start` at step 0 to 0 at
    `total_steps` (the step from `inp.extra["step"]`; see the module docstring)."""
    from train.rewards import outcome
    from train.rewards.schedules import atom_searcher_reward

    result = getattr(outcome, f"{answer}_reward")(inp, answer_format=answer_format)
    process = atomic_thought_score(inp, plans=plans, whole_think=whole_think)
    return atom_searcher_reward(result, process, step=int(inp.extra.get("step", 0)), total_steps=total_steps,
                                start=start)


def gold_plans(examples: Sequence[Mapping[str, Any]]) -> dict[str, GoldPlan]:
    """Normalised question -> gold plan, for the examples that have one (`synth.demos.gold_plan`)."""
    from synth.demos.plans import gold_plan

    out = {}
    for ex in examples:
        plan, _ = gold_plan(ex)
        if plan is not None:
            out[normalize_answer(plan.question)] = plan
    return out


__all__ = ["Atom", "LLMRRM", "OfflineRRM", "atomic_thought_reward", "atomic_thought_score", "atomic_thoughts",
           "atr_outcome_reward", "gold_plans", "score_trajectory"]
