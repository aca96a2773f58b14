"""One seed's chain: write a base QA, apply INJECT / FUZZ edits, gate every version, EXIT at the first that passes.

    fz = FuzzQA(llm, judge, retriever, FuzzQAConfig())
    record = await fz.run_seed(doc)                 # a seed document (ungrounded)
    record = await fz.run_grounded(grounded_seed)   # hops from structured evidence (grounded)

Every version goes through the gates in `GATES` order (`Gatekeeper.check`), stopping at the first drop:
a version dropped at `not_covered`, `answerable`, `solvable_with_tools` or `no_alternative` is reverted
(the next edit starts from the last kept version); one dropped only as `too_easy` is valid and becomes the
version the next edit builds on (ASearcher: keep editing until 0 of k closed-book answers are right); the
first version that passes all five is the QA (status `final`). The record (`SeedRecord.to_dict`) keeps every
version, every gate verdict, the closed-book and with-tools scores, and each action attempt (`writes`).
Not covered: several QAs per seed, picking among several linked documents by the LLM (SELECT).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.engines.direct import Direct
from agentic_infer.engines.group import Group
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.tools.retrieval.base import Document, Retriever
from agentic_infer.types import SamplingParams
from agentic_infer.verify import Verdict, boxed_answer, judge_answer
from synth.fuzzqa import actions as act
from synth.fuzzqa import gates
from synth.fuzzqa.config import GATES, FuzzQAConfig
from synth.fuzzqa.grounded import GroundedSeed
from synth.fuzzqa.provenance import (
    TARGET,
    Evidence,
    GateRecord,
    Triple,
    Version,
    constant,
    contains,
    content_words,
    fuzz_triples,
    inject_triples,
    sentences,
)


@dataclass
class SeedRecord:
    seed_id: str
    mode: str  # ungrounded | grounded
    source: str
    versions: list[Version] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)  # every action attempt: action, ok, reason
    final: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"seed_id": self.seed_id, "mode": self.mode, "source": self.source, "final": self.final,
                "writes": self.writes, "versions": [v.to_dict() for v in self.versions]}


def _best_sentence(text: str, probe: str) -> str:
    sents = sentences(text) or [text]
    want = content_words(probe)
    return max(sents, key=lambda s: len(want & content_words(s)))


class Gatekeeper:
    """Measures and applies the five gates to a version, in order, stopping at the first drop."""

    def __init__(self, llm: LLM, judge: Any, retriever: Retriever, cfg: FuzzQAConfig):
        self.llm, self.judge, self.retriever, self.cfg = llm, judge, retriever, cfg
        self.params = SamplingParams(max_tokens=cfg.max_tokens, temperature=0.0, seed=cfg.seed)

    async def _judge(self, question: str, prediction: str | None, gold: str) -> Verdict:
        return await judge_answer(self.judge, question, prediction, gold)  # verify's one rule (empty: no call)

    async def check(self, v: Version, previous: Version | None) -> list[GateRecord]:
        for name in GATES:
            result, details = await getattr(self, name)(v, previous)
            keep = result is True
            v.gates.append(GateRecord(name, keep, None if keep else result[1], details))
            if not keep:
                break
        return v.gates

    async def not_covered(self, v: Version, previous: Version | None):
        return gates.not_covered(v, previous, overlap=self.cfg.covered_overlap), {}

    async def answerable(self, v: Version, previous: Version | None):
        reading, details = None, {}
        if not contains(v.question, v.answer) and contains(v.evidence_text(), v.answer):
            docs = act.documents_block([(e.title, e.text) for e in v.evidence], chars=self.cfg.doc_chars)
            out = await act.complete(self.llm, act.READ_PROMPT.format(documents=docs, question=v.question),
                                     self.params)
            pred = boxed_answer(out)
            reading = await self._judge(v.question, pred, v.answer)
            details = {"reader_answer": pred, "verdict": reading.to_dict()}
        return gates.answerable(v, reading), details

    async def too_hard_closed_book(self, v: Version, previous: Version | None):
        cfg = self.cfg
        group = Group.seeded(lambda s: Direct(self.llm, sampling=SamplingParams(
            max_tokens=cfg.max_tokens, temperature=cfg.closed_book_temperature, seed=s)), cfg.k_closed_book,
            seed=cfg.seed)
        rollout = await group.run({"id": f"cb-{v.index}", "question": v.question})
        answers = [s["answer"] for s in rollout.metadata["samples"]]
        verdicts = [await self._judge(v.question, a, v.answer) for a in answers]
        correct = sum(x.correct for x in verdicts)
        v.closed_book = {"k": len(verdicts), "correct": correct, "score": correct / max(1, len(verdicts)),
                         "answers": answers}
        return gates.too_hard(verdicts), dict(v.closed_book)

    async def solvable_with_tools(self, v: Version, previous: Version | None):
        cfg = self.cfg
        answers, verdicts, searches = [], [], []
        for j in range(cfg.k_tools):
            tools = cfg.tools
            engine = SearchO1(self.llm, self.retriever, tools,
                              sampling=tools.sampling.replace(seed=cfg.seed + j))
            rollout = await engine.run({"id": f"tools-{v.index}-{j}", "question": v.question})
            answers.append(rollout.answer)
            traj = rollout.trajectory
            searches.append(sum(1 for s in (traj.steps if traj else []) if getattr(s, "action", None) == "search"))
            verdicts.append(await self._judge(v.question, rollout.answer, v.answer))
        correct = sum(x.correct for x in verdicts)
        v.with_tools = {"k": len(verdicts), "correct": correct, "score": correct / max(1, len(verdicts)),
                        "answers": answers, "searches": searches}
        return gates.solvable(verdicts, min_correct=cfg.min_tools_correct), dict(v.with_tools)

    async def no_alternative(self, v: Version, previous: Version | None):
        [hits] = self.retriever.search([v.question], self.cfg.alternative_k)
        docs = act.documents_block([(h.title, h.text) for h in hits], chars=self.cfg.doc_chars)
        out = await act.complete(self.llm, act.ALTERNATIVE_PROMPT.format(answer=v.answer, documents=docs,
                                                                         question=v.question), self.params)
        alt = boxed_answer(out)
        same = None
        if alt is not None and alt.strip().lower().strip(".") not in act.NONE_WORDS:
            same = await self._judge(v.question, alt, v.answer)
        return gates.no_alternative(alt, same), {"alternative": alt, "documents": [h.id for h in hits],
                                                 "same_as_gold": same.to_dict() if same else None}


class FuzzQA:
    """Writes, edits and gates the QAs of seeds (see the module docstring)."""

    def __init__(self, llm: LLM, judge: Any, retriever: Retriever, cfg: FuzzQAConfig | None = None):
        self.cfg = cfg or FuzzQAConfig()
        self.llm, self.retriever = llm, retriever
        self.gatekeeper = Gatekeeper(llm, judge, retriever, self.cfg)
        self.write_params = SamplingParams(max_tokens=self.cfg.max_tokens, temperature=self.cfg.temperature,
                                           seed=self.cfg.seed)

    async def _ask(self, prompt: str) -> str:
        return await act.complete(self.llm, prompt, self.write_params)

    # -- actions ------------------------------------------------------------------------------------
    async def base(self, doc: Document) -> Version | str:
        out = await self._ask(act.BASE_PROMPT.format(title=doc.title, text=doc.text[:self.cfg.doc_chars]))
        f = act.parse_fields(out, ("question", "answer"), ("fact",))
        if f is None:
            return "unparsable"
        fact = f.get("fact") or _best_sentence(doc.text, f["answer"] + " " + f["question"])
        relation = re.sub(re.escape(doc.title), " ", f["question"], flags=re.I).strip(" ?").lower() or "about"
        return Version(0, "base", f["question"], f["answer"], [Evidence(doc.id, doc.title, doc.text, fact)],
                       [Triple(TARGET, " ".join(relation.split()), constant(doc.title))])

    def linked(self, v: Version) -> tuple[str, Document] | None:
        """(entity named in the question, an unused document about it or mentioning it), or None."""
        used = {e.doc_id for e in v.evidence}
        [hits] = self.retriever.search([v.question], 10)
        entities = [e.title for e in v.evidence] + [h.title for h in hits]
        entities = list(dict.fromkeys(t for t in entities if t and contains(v.question, t)))
        for ent in entities:
            own = next((h for h in hits if h.title == ent and h.id not in used), None)
            if own is not None:
                return ent, Document(own.id, own.title, own.text)
            [about] = self.retriever.search([ent], 10)
            other = next((h for h in about if h.id not in used and contains(h.text, ent)), None)
            if other is not None:
                return ent, Document(other.id, other.title, other.text)
        return None

    async def inject(self, v: Version, index: int) -> Version | str:
        link = self.linked(v)
        if link is None:
            return "no_linked_document"
        entity, doc = link
        out = await self._ask(act.INJECT_PROMPT.format(entity=entity, question=v.question, answer=v.answer,
                                                       title=doc.title, text=doc.text[:self.cfg.doc_chars]))
        f = act.parse_fields(out, ("question",), ("fact", "relation"))
        if f is None:
            return "unparsable"
        fact = f.get("fact") or _best_sentence(doc.text, f["question"] + " " + entity)
        value = doc.title if doc.title != entity else fact[:80]
        triples = inject_triples(v.triples, entity, f.get("relation") or "described by", value)
        return Version(index, "inject", f["question"], v.answer, [*v.evidence, Evidence(doc.id, doc.title, doc.text,
                                                                                        fact)],
                       triples, parent=v.index, new_fact=fact)

    async def fuzz(self, v: Version, index: int) -> Version | str:
        out = await self._ask(act.FUZZ_PROMPT.format(question=v.question, answer=v.answer))
        f = act.parse_fields(out, ("question", "detail", "description"))
        if f is None:
            return "unparsable"
        return Version(index, "fuzz", f["question"], v.answer, list(v.evidence),
                       fuzz_triples(v.triples, f["detail"], f["description"]), parent=v.index,
                       new_fact=f["detail"], description=f["description"])

    async def phrase(self, seed: GroundedSeed) -> Version | str:
        question = seed.question
        if self.cfg.grounded_phrase:
            facts = "\n".join(f"{i}. {e.fact}" for i, e in enumerate(seed.evidence, 1))
            f = act.parse_fields(await self._ask(act.PHRASE_PROMPT.format(answer=seed.answer, facts=facts)),
                                 ("question",))
            if f is None:
                return "unparsable"
            question = f["question"]
        return Version(0, "grounded", question, seed.answer, list(seed.evidence), list(seed.triples))

    # -- the chain ----------------------------------------------------------------------------------
    async def run_seed(self, doc: Document) -> SeedRecord:
        rec = SeedRecord(seed_id=doc.id, mode="ungrounded", source=doc.title)
        return await self._chain(rec, await self.base(doc), "base")

    async def run_grounded(self, seed: GroundedSeed) -> SeedRecord:
        rec = SeedRecord(seed_id=seed.seed_id, mode="grounded", source=seed.source)
        return await self._chain(rec, await self.phrase(seed), "grounded")

    async def _chain(self, rec: SeedRecord, first: Version | str, first_action: str) -> SeedRecord:
        current: Version | None = None
        candidate, action = first, first_action
        cycle = ("fuzz",) if rec.mode == "grounded" else self.cfg.actions
        for step in range(self.cfg.max_actions + 1):
            rec.writes.append({"action": action, "ok": isinstance(candidate, Version),
                               "reason": None if isinstance(candidate, Version) else candidate})
            if isinstance(candidate, Version):
                candidate.index = len(rec.versions)
                rec.versions.append(candidate)
                await self.gatekeeper.check(candidate, current)
                dropped = candidate.dropped_by
                if dropped is None:
                    candidate.status, rec.final = "final", candidate.index
                    return rec
                if dropped[1] == "too_easy":
                    candidate.status, current = "easy", candidate
                else:
                    candidate.status = "dropped"
            if current is None or step == self.cfg.max_actions:
                return rec
            action = cycle[step % len(cycle)]
            if action == "inject" and current.hops >= self.cfg.max_hops:
                action = "fuzz"
            edit = self.inject if action == "inject" else self.fuzz
            candidate = await edit(current, len(rec.versions))
        return rec
