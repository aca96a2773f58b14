"""Gold plans: the hops of a multi-hop question, read from its published structured evidence.

    plan, reason = gold_plan(example)  # example from get_task("musique").load(path); (None, reason) if no plan
    plan.hops[0].title, plan.hops[0].evidence, plan.hops[0].queries["subq"]

One `Hop` per piece of evidence, in reasoning order:
- MuSiQue (`question_decomposition`): one hop per sub-question; `#k` references are resolved with
  step k's answer; the supporting paragraph is `paragraph_support_idx`; evidence sentences are the
  paragraph's sentences that state the step's answer (else the whole paragraph). Wordings: `subq`
  (the resolved sub-question; KB-style `X >> relation` becomes `X relation`) and `title`.
- HotpotQA (`supporting_facts` + `context`): one hop per supporting title; evidence = the supporting
  sentences. Bridge questions are ordered so that a hop whose evidence names the next hop's title
  comes first; comparison questions are order-free. Wordings: `title` and `subq` ("title" plus the
  question's words that the evidence shares, a keyword query).
- 2Wiki (`supporting_facts` + `context` + `evidences` triples): like HotpotQA, and `subq` is
  "subject relation" of the hop's triple (`Forbidden Ground director`), its answer the triple's object.
  Comparison types are order-free. Records with only `evidences` (no context) have no plan.

`gold_plan` returns `(plan, None)` or `(None, reason)`; reasons are counted in the demos' stats.
Not covered: StrategyQA (yes/no with evidence ids), records without paragraphs
(`hotpotqa_train_evidence_500`: no titles to search for), MuSiQue records with `answerable == False`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.tools.retrieval.corpus import parse_literal
from agentic_infer.verify import normalize_answer

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_STOP = frozenset("a an the of in on at to for by with from and or is was were are be been who what which when "
                  "where whose whom how why did does do that this as it its his her their than".split())


@dataclass(frozen=True)
class Hop:
    """One piece of evidence: the paragraph's title, its supporting sentences, query wordings, its answer."""

    title: str
    evidence: tuple[str, ...]
    queries: Mapping[str, str]  # wording name -> query text
    answer: str | None = None  # the intermediate answer, when the data names one
    description: str = ""  # what this hop finds, for the demonstration's reasoning text

    def query(self, wording: str) -> str:
        return self.queries.get(wording) or self.queries["title"]


@dataclass(frozen=True)
class GoldPlan:
    example_id: str
    question: str
    gold: tuple[str, ...]
    hops: tuple[Hop, ...]
    source: str  # musique | hotpotqa | 2wiki
    order_free: bool = False  # the hops may be searched in any order (comparison questions)
    metadata: dict[str, Any] = field(default_factory=dict)


def sentences(text: str) -> list[str]:
    """A paragraph split into sentences (a light rule: end punctuation followed by a capital)."""
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


def _contains(haystack: str, needle: str) -> bool:
    n = normalize_answer(needle)
    return bool(n) and f" {n} " in f" {normalize_answer(haystack)} "


def _keywords(question: str, evidence: str, limit: int = 6) -> list[str]:
    ev = set(normalize_answer(evidence).split())
    out: list[str] = []
    for w in re.findall(r"[\w'-]+", question):
        lw = normalize_answer(w)
        if lw and lw not in _STOP and lw in ev and w not in out:
            out.append(w)
    return out[:limit]


def gold_plan(example: Mapping[str, Any]) -> tuple[GoldPlan | None, str | None]:
    """The plan of a loaded example (`{"id", "question", "gold", "raw"}`) or of a raw record."""
    raw = example.get("raw", example)
    ex_id = str(example.get("id") or raw.get("id") or raw.get("_id") or "")
    question = str(example.get("question") or raw.get("question") or "").strip()
    gold = tuple(example.get("gold") or [str(raw.get("answer", ""))])
    if not question or not gold or not gold[0]:
        return None, "no_question_or_answer"
    if raw.get("question_decomposition") is not None and raw.get("paragraphs") is not None:
        return _musique(ex_id, question, gold, raw)
    if raw.get("context") and raw.get("supporting_facts"):
        return _titled(ex_id, question, gold, raw)
    return None, "no_structured_evidence"


def _musique(ex_id: str, question: str, gold: tuple[str, ...], raw: Mapping[str, Any]):
    if str(raw.get("answerable", True)).lower() == "false":
        return None, "unanswerable"
    steps = parse_literal(raw["question_decomposition"], what=f"{ex_id} question_decomposition")
    paragraphs = parse_literal(raw["paragraphs"], what=f"{ex_id} paragraphs")
    by_idx = {int(p.get("idx", i)): p for i, p in enumerate(paragraphs)}
    hops: list[Hop] = []
    answers: list[str] = []
    for step in steps:
        support = step.get("paragraph_support_idx")
        para = by_idx.get(int(support)) if support is not None else None
        if para is None:
            return None, "decomposition_without_paragraph"
        sub = str(step["question"])
        for j, a in enumerate(answers, 1):
            sub = sub.replace(f"#{j}", a)
        if re.search(r"#\d", sub):
            return None, "unresolved_reference"
        if ">>" in sub:
            subject, _, relation = sub.partition(">>")
            sub = f"{subject.strip()} {relation.strip()}"
        answer = str(step.get("answer", "")).strip()
        text = str(para["paragraph_text"]).strip()
        sents = [s for s in sentences(text) if answer and _contains(s, answer)] or [text]
        title = str(para.get("title", ""))
        hops.append(Hop(title=title, evidence=tuple(sents), queries={"subq": " ".join(sub.split()), "title": title},
                        answer=answer or None, description=sub.rstrip("?")))
        answers.append(answer)
    if not hops:
        return None, "empty_decomposition"
    return GoldPlan(ex_id, question, gold, tuple(hops), "musique"), None


def _titled(ex_id: str, question: str, gold: tuple[str, ...], raw: Mapping[str, Any]):
    context = parse_literal(raw["context"], what=f"{ex_id} context")
    facts = parse_literal(raw["supporting_facts"], what=f"{ex_id} supporting_facts")
    if isinstance(context, Mapping):
        context = list(zip(context.get("title", []), context.get("sentences", []), strict=True))
    paras = {str(t): (s if isinstance(s, list) else sentences(str(s))) for t, s in context}
    order: list[str] = []
    chosen: dict[str, list[str]] = {}
    for title, idx in facts:
        title = str(title)
        sents = paras.get(title)
        if sents is None or not isinstance(idx, int) or not 0 <= idx < len(sents):
            return None, "supporting_fact_not_in_context"
        if title not in chosen:
            order.append(title)
            chosen[title] = []
        chosen[title].append(str(sents[idx]).strip())
    triples = parse_literal(raw.get("evidences") or [], what=f"{ex_id} evidences")
    qtype = str(raw.get("type", ""))
    source = "2wiki" if "evidences" in raw or "entity_ids" in raw else "hotpotqa"
    order_free = "comparison" in qtype
    if not order_free and len(order) == 2 and _contains(" ".join(chosen[order[1]]), order[0]) \
            and not _contains(" ".join(chosen[order[0]]), order[1]):
        order.reverse()  # bridge: the hop that names the other's title comes first
    hops = []
    for title in order:
        ev = tuple(chosen[title])
        triple = next((t for t in triples if isinstance(t, (list, tuple)) and len(t) == 3
                       and normalize_answer(str(t[0])) == normalize_answer(title)), None)
        if triple is not None:
            subq, answer, desc = f"{triple[0]} {triple[1]}", str(triple[2]), f"the {triple[1]} of {triple[0]}"
        else:
            words = [w for w in _keywords(question, " ".join(ev)) if not _contains(title, w)]
            subq, answer, desc = " ".join([title, *words]), None, f"what the documents say about {title}"
        hops.append(Hop(title=title, evidence=ev, queries={"subq": subq, "title": title}, answer=answer,
                        description=desc))
    if not hops:
        return None, "no_supporting_facts"
    return GoldPlan(ex_id, question, gold, tuple(hops), source, order_free=order_free,
                    metadata={"type": qtype}), None
