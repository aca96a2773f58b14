"""Grounded mode: the hops of a QA taken from published structured evidence, correct by construction.

    seeds, skipped = grounded_seeds("musique", "../shared/data/multihop/musique_full_train_100.jsonl")
    seeds[0].evidence   # one Evidence per hop: pooled document id, title, paragraph, supporting sentence(s)
    seeds[0].triples    # C@Van Hook Township / located in the administrative territorial entity / V@1, V@1 capital ?

Each record is read by the eval task's own loader (`--grounded TASK:FILE`, TASK one of musique, hotpotqa,
2wiki) and planned by `synth.demos.plans.gold_plan` (MuSiQue `question_decomposition`, HotpotQA supporting
facts, 2Wiki evidence triples). Document ids are `pooled_id(title, paragraph)`, the ids of the
`multihop-pooled` corpus and of eval's pooled corpus of the file, so the with-tools gate searches an
index in which every hop's document exists. The LLM only phrases the question from the hops and fuzzes it.
Triples: MuSiQue's `X >> relation` steps and 2Wiki's evidence triples give subject / relation / object;
an intermediate answer used by a later hop is a variable `V@k`, the final answer `?`; HotpotQA, which
names no relations, gets `supporting fact` relations between the hop titles.
Not covered: StrategyQA (yes/no), MuSiQue records with `answerable == False` (skipped, counted).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.corpus import parse_literal
from agentic_infer.tools.retrieval.recipes import pooled_id
from agentic_infer.verify import normalize_answer
from synth.demos.plans import GoldPlan, gold_plan
from synth.fuzzqa.provenance import TARGET, Evidence, Triple, constant, variable

GROUNDED_TASKS = ("musique", "hotpotqa", "2wiki")


@dataclass(frozen=True)
class GroundedSeed:
    seed_id: str
    question: str       # the dataset's own question
    answer: str
    evidence: tuple[Evidence, ...]
    triples: tuple[Triple, ...]
    source: str


def _paragraphs(raw: dict[str, Any]) -> dict[str, str]:
    """title -> full paragraph text of a record (MuSiQue paragraphs or HotpotQA/2Wiki context)."""
    if raw.get("paragraphs") is not None and "context" not in raw:
        return {str(p.get("title", "")): str(p["paragraph_text"]).strip()
                for p in parse_literal(raw["paragraphs"], what="paragraphs")}
    context = parse_literal(raw.get("context") or [], what="context")
    if isinstance(context, dict):
        context = list(zip(context.get("title", []), context.get("sentences", []), strict=True))
    return {str(t): (s if isinstance(s, str) else " ".join(str(x).strip() for x in s)) for t, s in context}


def _name(value: str, answer: str, bridges: dict[str, str]) -> str:
    n = normalize_answer(value)
    if n == normalize_answer(answer):
        return TARGET
    return bridges.get(n, constant(value))


def plan_triples(plan: GoldPlan, raw: dict[str, Any]) -> list[Triple]:
    """The hops of `plan` as WebShaper triples (see the module docstring)."""
    answer = plan.gold[0]
    if plan.source == "2wiki":
        facts = [t for t in parse_literal(raw.get("evidences") or [], what="evidences")
                 if isinstance(t, (list, tuple)) and len(t) == 3]
        subjects = {normalize_answer(str(t[0])) for t in facts}
        bridges: dict[str, str] = {}
        for t in facts:  # an object that is also a later subject is a bridge entity
            n = normalize_answer(str(t[2]))
            if n in subjects and n not in bridges and n != normalize_answer(answer):
                bridges[n] = variable(len(bridges) + 1)
        triples = [Triple(_name(str(s), answer, bridges), str(r), _name(str(o), answer, bridges)) for s, r, o in facts]
        if triples and not any(TARGET in (t.subject, t.object) for t in triples):  # comparison: ? is one subject
            triples.append(Triple(TARGET, "is selected by comparison among",
                                  "|".join(t.subject for t in triples if t.subject.startswith("C@"))))
        return triples
    if plan.source == "musique":
        triples = []
        for i, hop in enumerate(plan.hops):
            last = i == len(plan.hops) - 1
            obj = TARGET if last else variable(i + 1)
            subject, relation = hop.queries["subq"], "answers"
            raw_steps = parse_literal(raw["question_decomposition"], what="question_decomposition")
            step = str(raw_steps[i]["question"])
            if ">>" in step:
                subj, _, relation = step.partition(">>")
                subj = subj.strip()
                subject = variable(int(subj[1:])) if subj.startswith("#") and subj[1:].isdigit() else constant(subj)
                relation = relation.strip()
            else:
                for j in range(1, i + 1):
                    step = step.replace(f"#{j}", variable(j))
                subject, relation = step.rstrip("?"), "has answer"
            triples.append(Triple(subject, relation, obj))
        return triples
    triples = []  # hotpotqa: titles linked by supporting facts
    n = len(plan.hops)
    for i, hop in enumerate(plan.hops):
        if plan.order_free:
            triples.append(Triple(TARGET, "compares", constant(hop.title)))
        else:
            subject = constant(hop.title) if i == 0 else variable(i)
            triples.append(Triple(subject, "supporting fact", TARGET if i == n - 1 else variable(i + 1)))
    return triples


def grounded_seed(example: dict[str, Any]) -> tuple[GroundedSeed | None, str | None]:
    """One loaded example (`{"id", "question", "gold", "raw"}`) -> its seed, or (None, reason)."""
    plan, reason = gold_plan(example)
    if plan is None:
        return None, reason
    raw = example.get("raw", example)
    paragraphs = _paragraphs(raw)
    evidence = []
    for hop in plan.hops:
        text = paragraphs.get(hop.title)
        if text is None:
            return None, "hop_paragraph_missing"
        evidence.append(Evidence(doc_id=pooled_id(hop.title, text), title=hop.title, text=text,
                                 fact=" ".join(hop.evidence)))
    return GroundedSeed(seed_id=plan.example_id, question=plan.question, answer=plan.gold[0],
                        evidence=tuple(evidence), triples=tuple(plan_triples(plan, raw)), source=plan.source), None


def parse_grounded(spec: str) -> tuple[str, Path]:
    """`TASK:FILE` -> (task, path), with one clear error for anything else."""
    task, sep, file = spec.partition(":")
    task = {"2wikimultihopqa": "2wiki"}.get(task.strip().lower(), task.strip().lower())
    if not sep or task not in GROUNDED_TASKS or not file:
        raise ConfigError(f"--grounded {spec!r}: expected TASK:FILE with TASK one of {', '.join(GROUNDED_TASKS)} "
                          "(e.g. musique:../shared/data/multihop/musique_full_train_100.jsonl)")
    path = Path(file).expanduser()
    if not path.is_file():
        raise ConfigError(f"--grounded {spec!r}: no such file {str(path)!r}")
    return task, path


def grounded_seeds(task: str, path: str | Path) -> tuple[list[GroundedSeed], Counter[str]]:
    """Every plannable record of `path` (read by eval task `task`'s loader) and the skip reasons of the rest."""
    from agentic_infer.tasks import get_task

    seeds: list[GroundedSeed] = []
    skipped: Counter[str] = Counter()
    for ex in get_task(task).load(Path(path)):
        seed, reason = grounded_seed(ex)
        if seed is None:
            skipped[reason or "no_plan"] += 1
        else:
            seeds.append(seed)
    return seeds, skipped
