"""Demonstrations from gold decompositions: Search-o1 trajectories built by running the real engine.

    from synth.demos import DemoOptions, Vocab, build_demos
    result = asyncio.run(build_demos(examples, Vocab(load_tokenizer("default")), DemoOptions()))
    result.trajectories   # verified Trajectory records; result.stats: counts, rejections by reason

For each question with a gold plan (`plans.gold_plan`) and each variant (query wording × documents
per search `k` × order, at most `max_variants`), a `SearchO1` engine runs with scripted models (`scripted.py`): the
policy's turns are scripted text ("I need to find out: ...", the hop's query in the search tags, the
step's answer, finally `\\boxed{gold}` and the chat template's end-of-turn marker), every query runs
against a real BM25 index (the question's own paragraphs, or one pooled index over every loaded
question's paragraphs), and Reason-in-Documents returns the supporting sentences the retrieved
documents actually contain. The agent loop splices the observations exactly as for a sampled rollout.

Token ids: model segments are the canonical ids of the scripted text (`encode_continuation`),
observations are spliced with the same encode semantics, the prompt is `encode_prompt` of the
rendered chat. Those ids are exactly the sequence trained on, so the trajectory keeps
`token_exact=True` and `sft_row()` is that sequence with prompt and observations masked. Nothing was
sampled: model segments carry no logprobs, every model segment is marked `scripted`, and
`metadata["demonstration"]` is True (do not use demonstrations as on-policy RL rollouts).

Verification (the same metrics as eval, `agentic_infer.verify`): every hop's evidence sentences are in
the hits of its search, every hop's search ran, the episode finished by answering, and the boxed
answer is an exact match of the gold. Verdicts land in `rewards` (`em`, `f1`, `cover_em`,
`evidence_recall`); a variant that fails is dropped and counted under its reason in the stats.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.config import renamed
from agentic_infer.engines.dialects import get_dialect
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.errors import ConfigError
from agentic_infer.runner import write_jsonl
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.bm25 import BM25Index
from agentic_infer.tools.retrieval.corpus import question_paragraphs
from agentic_infer.tools.retrieval.recipes import pooled_id
from agentic_infer.types import SamplingParams, Trajectory
from agentic_infer.verify import score, write_verdicts
from synth.demos.plans import GoldPlan, Hop, gold_plan
from synth.demos.scripted import RecordingRetriever, ScriptedPolicy, ScriptedRid, Vocab, evidence_found

WORDINGS = ("subq", "title")
CORPORA = ("question", "pooled")


@renamed(top_ks=("ks", "the documents per search to vary"))
@dataclass(frozen=True)
class DemoOptions:
    """Which variants to build and how. `wordings`: query wordings tried in order; `ks`: documents per
    search to vary; `orders`: also the reversed hop order for order-free (comparison) plans; `max_variants`:
    per question; `corpus`: "question" (its own paragraphs) or "pooled" (every loaded question's
    paragraphs in one index); `end_of_turn`: close the last turn with the template's end-of-turn text."""

    wordings: tuple[str, ...] = WORDINGS
    ks: tuple[int, ...] = (3, 5)
    orders: bool = True
    max_variants: int = 4
    corpus: str = "question"
    end_of_turn: bool = True
    doc_chars: int = 3000
    max_searches: int = 10  # the limit the prompt states (the engine's default, as at inference)

    def __post_init__(self) -> None:
        object.__setattr__(self, "wordings", tuple(self.wordings))
        object.__setattr__(self, "ks", tuple(self.ks))
        if not self.wordings or any(w not in WORDINGS for w in self.wordings):
            raise ConfigError(f"DemoOptions.wordings={self.wordings!r}: choose from {WORDINGS}")
        if not self.ks or any(not isinstance(k, int) or k < 1 for k in self.ks):
            raise ConfigError(f"DemoOptions.ks={self.ks!r}: pass positive integers, e.g. (3, 5)")
        if not isinstance(self.max_variants, int) or self.max_variants < 1:
            raise ConfigError(f"DemoOptions.max_variants={self.max_variants!r}: must be an integer >= 1")
        if self.corpus not in CORPORA:
            raise ConfigError(f"DemoOptions.corpus={self.corpus!r}: choose one of {CORPORA}")


@dataclass
class DemoResult:
    trajectories: list[Trajectory] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


def variants(plan: GoldPlan, options: DemoOptions) -> list[dict[str, Any]]:
    """The distinct variants of a plan: (wording, k, order), duplicates by query sequence removed."""
    orders = ["given", "reversed"] if options.orders and plan.order_free and len(plan.hops) > 1 else ["given"]
    out, seen = [], set()
    for wording, order, k in itertools.product(options.wordings, orders, options.ks):
        hops = _ordered(plan, order)
        key = (tuple(h.query(wording) for h in hops), k)
        if key in seen:
            continue
        seen.add(key)
        out.append({"wording": wording, "k": k, "order": order})
        if len(out) == options.max_variants:
            break
    return out


def _ordered(plan: GoldPlan, order: str) -> tuple[Hop, ...]:
    return tuple(reversed(plan.hops)) if order == "reversed" else plan.hops


def script(plan: GoldPlan, hops: Sequence[Hop], wording: str, *, end_of_turn: str = "",
           dialect: str = "search_o1") -> list[str]:
    """The scripted assistant turns: one per search, then the answer turn; `atom_searcher` writes them as
    Atom-Searcher's atomic thoughts (`atom_script`), any other dialect as plain reasoning with its search tag
    and the answer in `\\boxed{}`."""
    if dialect == "atom_searcher":
        return atom_script(plan, hops, wording, end_of_turn=end_of_turn)
    tag = next(a for a in get_dialect(dialect).actions if a.tool == "search")
    turns, previous = [], None
    for hop in hops:
        lead = "To answer the question" if previous is None else _fact(previous) + " Next,"
        turns.append(f"{lead} I need to find out: {hop.description}.\n{tag.begin}{hop.query(wording)}{tag.end}")
        previous = hop
    tail = _fact(previous) + " " if previous is not None else ""
    turns.append(f"{tail}Putting these facts together, the answer is \\boxed{{{plan.gold[0]}}}.{end_of_turn}")
    return turns


def _fact(hop: Hop) -> str:
    return f"From the search result: {hop.answer}." if hop.answer else f"The search result tells me about {hop.title}."


def atom_script(plan: GoldPlan, hops: Sequence[Hop], wording: str, *, end_of_turn: str = "") -> list[str]:
    """The turns in Atom-Searcher's format (the `atom_searcher` dialect pre-fills each turn's `<think>`): a
    `<PLAN>` atom naming the hop to find, then `</think>` and the hop's query as a JSON `web_search` call; after
    each result a `<VERIFICATION>` atom stating the hop's answer the result showed (`<OBSERVATION>` of the page
    when the hop has no answer of its own); last `<answer>gold</answer>`. Each atom is one the offline RRM scores
    1 on a grounded demonstration (`train.rewards.atomic`)."""
    turns, previous = [], None
    for hop in hops:
        call = json.dumps({"name": "web_search", "arguments": {"query": hop.query(wording)}}, ensure_ascii=False)
        lead = "To answer the question" if previous is None else "Next,"
        turns.append(f"{_atom_fact(previous)}<PLAN>{lead} I need to find out: {hop.description}.</PLAN></think>\n"
                     f"<tool_call>{call}</tool_call>")
        previous = hop
    turns.append(f"{_atom_fact(previous)}</think>\n<answer>{plan.gold[0]}</answer>{end_of_turn}")
    return turns


def _atom_fact(hop: Hop | None) -> str:
    if hop is None:
        return ""
    if hop.answer:
        return f"<VERIFICATION>From the search result: {hop.answer}.</VERIFICATION>"
    return f"<OBSERVATION>The search result tells me about {hop.title}.</OBSERVATION>"


def verify_demo(traj: Trajectory, plan: GoldPlan, hops: Sequence[Hop], wording: str,
                retriever: RecordingRetriever) -> tuple[dict[str, float], str | None]:
    """Verdicts (em, f1, cover_em, evidence_recall) and the rejection reason (None: verified)."""
    executed = [s for s in traj.steps if s.metadata.get("status") == "executed"]
    found = 0
    for hop in hops:
        hits = retriever.hits.get(hop.query(wording), [])
        found += bool(hits) and len(evidence_found(hits, hop.evidence)) == len(hop.evidence)
    verdicts = {m: score(m, traj.answer, list(plan.gold)) for m in ("em", "f1", "cover_em")}
    verdicts["evidence_recall"] = found / len(hops)
    if traj.finish_reason != "answer":
        return verdicts, f"unfinished:{traj.finish_reason}"
    if len(executed) != len(hops):
        return verdicts, "search_count"
    if verdicts["evidence_recall"] < 1.0:
        return verdicts, "evidence_not_retrieved"
    if verdicts["em"] < 1.0:
        return verdicts, "answer_mismatch"
    return verdicts, None


async def build_demo(plan: GoldPlan, retriever: Any, vocab: Vocab, variant: Mapping[str, Any],
                     options: DemoOptions, *, task: str | None = None) -> tuple[Trajectory, str | None]:
    """One demonstration (see module docstring) and its rejection reason (None: verified)."""
    hops = _ordered(plan, variant["order"])
    recording = RecordingRetriever(retriever)
    eot = vocab.end_of_turn() if options.end_of_turn else ""
    policy = ScriptedPolicy(vocab, script(plan, hops, variant["wording"], end_of_turn=eot))
    rid = ScriptedRid(vocab, recording, {h.query(variant["wording"]): h.evidence for h in hops})
    engine = SearchO1(policy, recording, rid_llm=rid, max_searches=max(options.max_searches, len(hops)), k=variant["k"],
                      max_turns=len(hops) + 1, max_total_tokens=1 << 24, doc_chars=options.doc_chars,
                      sampling=SamplingParams(max_tokens=1 << 16, temperature=0.0))
    example = {"id": plan.example_id, "question": plan.question, "gold": list(plan.gold), "task": task}
    traj = (await engine.run(example)).trajectories[0]
    for seg in traj.segments:
        if seg.kind == "model":
            seg.metadata["scripted"] = True
    verdicts, reason = verify_demo(traj, plan, hops, variant["wording"], recording)
    write_verdicts(traj, verdicts)
    n = variants(plan, options).index(dict(variant)) if dict(variant) in variants(plan, options) else 0
    traj.id = f"{plan.example_id}/demo-{n}"
    traj.group_id = plan.example_id
    traj.metadata.update({
        "demonstration": True, "scripted_turns": traj.usage.llm_calls, "rid_calls": rid.calls,
        "demo": {"source": plan.source, "variant": dict(variant), "corpus": options.corpus,
                 "hops": [{"title": h.title, "query": h.query(variant["wording"]), "answer": h.answer,
                           "evidence": list(h.evidence)} for h in hops],
                 "verified": reason is None, "reason": reason, "vocab": vocab.source},
        "lineage": {"source": plan.example_id, "task": task, "engine": "search-o1/scripted", "operator": "gold_demo",
                    "parents": [], "variant": dict(variant), "filter": reason or "verified", "vocab": vocab.source}})
    traj.usage.llm_calls = 0  # nothing was sampled: the turns are scripted
    return traj, reason


def pooled_index(examples: Sequence[Mapping[str, Any]]) -> BM25Index:
    docs: dict[str, Document] = {}
    for ex in examples:
        for d in question_paragraphs(ex.get("raw", ex)):
            pid = pooled_id(d.title, d.text)
            docs.setdefault(pid, Document(id=pid, title=d.title, text=d.text))
    if not docs:
        raise ConfigError("demos: corpus='pooled' found no paragraphs in the examples; use records with context")
    return BM25Index.from_documents(list(docs.values()))


async def build_demos(examples: Sequence[Mapping[str, Any]], vocab: Vocab, options: DemoOptions = DemoOptions(),
                      *, task: str | None = None, only: Sequence[int] | None = None) -> DemoResult:
    """Verified demonstrations for `examples` (loaded with `get_task(...).load`) and the run's stats. `only`: the
    indices of the examples to build (a shard's block; the pooled corpus still spans every example)."""
    t0 = time.perf_counter()
    result = DemoResult()
    no_plan: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    tried = 0
    questions_kept = 0
    pooled = pooled_index(examples) if options.corpus == "pooled" else None
    todo = examples if only is None else [examples[i] for i in only]
    for ex in todo:
        plan, why = gold_plan(ex)
        if plan is None:
            no_plan[why or "unknown"] += 1
            continue
        retriever = pooled
        if retriever is None:
            docs = question_paragraphs(ex.get("raw", ex))
            if not docs:
                no_plan["no_paragraphs"] += 1
                continue
            retriever = BM25Index.from_documents(docs)
        kept_here = 0
        for variant in variants(plan, options):
            tried += 1
            traj, reason = await build_demo(plan, retriever, vocab, variant, options, task=task)
            if reason is None:
                result.trajectories.append(traj)
                kept_here += 1
            else:
                rejected[reason.split(":")[0]] += 1
        questions_kept += kept_here > 0
    wall = time.perf_counter() - t0
    kept = len(result.trajectories)
    result.stats = {
        "step": "demos", "task": task, "questions": len(todo), "no_plan": dict(no_plan),
        "variants_tried": tried, "kept": kept, "rejected": dict(rejected), "questions_with_demo": questions_kept,
        "tokens": sum(len(t.token_ids()) for t in result.trajectories), "wall_s": round(wall, 3),
        "demos_per_min": round(kept / wall * 60, 1) if wall > 0 else None, "options": asdict(options),
        "vocab": vocab.source,
    }
    return result


def write_demos(out: str | Path, result: DemoResult, *, overwrite: bool = False) -> Path:
    """`out/trajectories.jsonl` (one Trajectory a line) and `out/stats.json`; refuses to replace a file."""
    out = Path(out)
    path = out / "trajectories.jsonl"
    if path.exists() and not overwrite:
        raise ConfigError(f"{path} exists; choose another --out or pass --overwrite (nothing was written)")
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, (t.to_json() for t in result.trajectories))
    (out / "stats.json").write_text(json.dumps(result.stats, indent=2), encoding="utf-8")
    return path
