"""Provenance of a fuzzed QA: its hops as triples, every version, every gate's verdict; the eval-loadable row.

    Triple("?", "founded", "V@1").text          # '? founded V@1'   (WebShaper's schema)
    Triple("V@1", "born in", "C@1932").text
    version.to_dict(); qa_row(version, seed_id=...)   # a HotpotQA-format record (`--task hotpotqa` reads it)

Triples follow WebShaper: `C@x` a constant named in the question, `V@k` an entity the question only
describes (a hop's bridge), `?` the target (the answer). A FUZZ turns a constant into a variable described
vaguely (`V@k described as C@the 1930s`). `Evidence` is one document of one hop: its id in the corpus, its
title, its text and the fact (sentence) the hop uses. Not covered: reading triples back into questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agentic_infer.verify import normalize_answer
from synth.demos.plans import sentences

TARGET = "?"


def constant(value: str) -> str:
    return f"C@{' '.join(str(value).split())}"


def variable(k: int) -> str:
    return f"V@{k}"


def content_words(text: str) -> set[str]:
    return {w for w in normalize_answer(text).split() if len(w) > 2}


def contains(haystack: str, needle: str) -> bool:
    """`needle` occurs in `haystack` as whole words after SQuAD normalisation."""
    n = normalize_answer(needle)
    return bool(n) and f" {n} " in f" {normalize_answer(haystack)} "


@dataclass(frozen=True)
class Triple:
    subject: str
    relation: str
    object: str

    @property
    def text(self) -> str:
        return f"{self.subject} {self.relation} {self.object}"

    def to_dict(self) -> dict[str, str]:
        return {"subject": self.subject, "relation": self.relation, "object": self.object, "text": self.text}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Triple:
        return cls(d["subject"], d["relation"], d["object"])


@dataclass(frozen=True)
class Evidence:
    """One hop's document: id (in the corpus the with-tools agent searches), title, text, the fact used."""

    doc_id: str
    title: str
    text: str
    fact: str

    def fact_index(self) -> int:
        """The index of the fact's sentence in `sentences(text)` (best word overlap; 0 when nothing overlaps)."""
        sents = sentences(self.text) or [self.text]
        want = content_words(self.fact)
        scores = [len(want & content_words(s)) for s in sents]
        return max(range(len(sents)), key=lambda i: (scores[i], -i)) if want else 0


@dataclass
class GateRecord:
    gate: str
    keep: bool
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Version:
    """One version of a QA: the base, or the result of one INJECT / FUZZ, with its gate verdicts."""

    index: int
    action: str  # base | inject | fuzz | grounded
    question: str
    answer: str
    evidence: list[Evidence]
    triples: list[Triple]
    parent: int | None = None
    new_fact: str | None = None     # INJECT: the fact added; FUZZ: the detail replaced
    description: str | None = None  # FUZZ: the vaguer description
    gates: list[GateRecord] = field(default_factory=list)
    status: str = "pending"         # final | easy (valid but closed-book solvable: edited further) | dropped
    closed_book: dict[str, Any] | None = None
    with_tools: dict[str, Any] | None = None

    @property
    def hops(self) -> int:
        return len(self.evidence)

    @property
    def dropped_by(self) -> tuple[str, str] | None:
        last = self.gates[-1] if self.gates else None
        return (last.gate, last.reason or "") if last is not None and not last.keep else None

    def evidence_text(self) -> str:
        return "\n".join(f"{e.title}: {e.text}" for e in self.evidence)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["triples"] = [t.to_dict() for t in self.triples]
        d["hops"] = self.hops
        return d


def next_variable(triples: Sequence[Triple]) -> int:
    used = [int(x[2:]) for t in triples for x in (t.subject, t.object) if x.startswith("V@") and x[2:].isdigit()]
    return max(used, default=0) + 1


def inject_triples(triples: Sequence[Triple], entity: str, relation: str, fact_value: str) -> list[Triple]:
    """INJECT: the constant `entity` becomes a new variable V@k, described by `V@k relation C@fact_value`."""
    k = variable(next_variable(triples))
    old = constant(entity)
    out = [Triple(k if t.subject == old else t.subject, t.relation, k if t.object == old else t.object)
           for t in triples]
    if not any(k in (t.subject, t.object) for t in out):  # the entity was not a named constant: link to the target
        out.append(Triple(TARGET, "related to", k))
    return out + [Triple(k, relation, constant(fact_value))]


def fuzz_triples(triples: Sequence[Triple], detail: str, description: str) -> list[Triple]:
    """FUZZ: the constant naming `detail` becomes a variable known only by its vaguer `description`."""
    k = variable(next_variable(triples))
    target = normalize_answer(detail)
    hit = False
    out = []
    for t in triples:
        s, o = t.subject, t.object
        if s.startswith("C@") and normalize_answer(s[2:]) == target:
            s, hit = k, True
        if o.startswith("C@") and normalize_answer(o[2:]) == target:
            o, hit = k, True
        out.append(Triple(s, t.relation, o))
    if not hit:
        out.append(Triple(TARGET, "involves", k))
    return out + [Triple(k, "described as", constant(description))]


def qa_row(version: Version, *, seed_id: str, source: str) -> dict[str, Any]:
    """The final QA as a HotpotQA record {_id, question, answer, context, supporting_facts} plus provenance keys
    and `lineage` (seed, the action that made this version, its parent version, every gate's verdict):
    `agentic eval run --task hotpotqa --data qa.jsonl` reads it (its context is the per-question corpus)."""
    context: list[list[Any]] = []
    facts: list[list[Any]] = []
    for ev in version.evidence:
        context.append([ev.title, sentences(ev.text) or [ev.text]])
        facts.append([ev.title, ev.fact_index()])
    return {"_id": f"fuzzqa-{seed_id}", "question": version.question, "answer": version.answer,
            "type": "fuzzqa", "level": f"{version.hops}-hop", "context": context, "supporting_facts": facts,
            "hops": version.hops, "triples": [t.text for t in version.triples],
            "evidence_ids": [e.doc_id for e in version.evidence], "source": source,
            "lineage": {"source": seed_id, "engine": "fuzzqa", "operator": version.action, "parents":
                        [] if version.parent is None else [f"fuzzqa-{seed_id}/v{version.parent}"],
                        "gates": {g.gate: g.keep for g in version.gates}, "origin": source}}
