"""Cold-start data for `agentic train distill`: demonstrations run through the real Search-o1 loop with the
plain prompt (the Search-o1 instruction a user gets at eval time), raw top-k passages each cut to
`passage_chars` (no Reason-in-Documents), and the boxed gold answer; verified, grounded (every intermediate
answer the demonstration states, and the final answer unless it is yes/no, appears in what its searches
showed: a demonstration must not teach answering from memory), length-bounded, checked against the dev files.

    examples = load_train_questions(sources, data_dir)           # loaded examples, each with `raw`
    result = asyncio.run(build_plain_demos(examples, vocab, cfg)) # verified Trajectory records + stats

The scripted turns, the gold plans and the verification are `synth.demos`' (`script`, `gold_plan`,
`verify_demo`); the only difference from `synth.demos.build_demo` is the engine's settings: `rid=False`,
`k`, `passage_chars` and `max_searches` exactly as `plain_options` gives them to eval, so the
trained prompt and observations are what `agentic eval run --engine search-o1` shows the policy.
`hotpotqa_train_evidence_500.jsonl` carries evidence sentences but no titled paragraphs: each record is
turned into a HotpotQA record (a title guessed from each sentence's subject, one supporting fact per
sentence) whose corpus is its own sentences plus a few other records' sentences as distractors.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.engines.search_o1 import SearchO1, plain_options
from agentic_infer.runner import iter_jsonl
from agentic_infer.tools.retrieval.bm25 import BM25Index
from agentic_infer.tools.retrieval.corpus import question_paragraphs
from agentic_infer.types import SamplingParams, Trajectory
from agentic_infer.verify import normalize_answer, score, write_verdicts
from synth.demos import RecordingRetriever, ScriptedPolicy, Vocab, gold_plan, script, verify_demo

EVIDENCE_DISTRACTORS = 6
DEV_FILES = ("hotpotqa_dev_distractor_150.jsonl", "musique_ans_dev_150.jsonl", "2wiki_dev_150.jsonl")
_SUBJECT = re.compile(r"^(.{3,60}?)(?:\s+\(|\s+(?:is|was|are|were|has|had)\s)")


def _subject(sentence: str, i: int) -> str:
    m = _SUBJECT.match(sentence.strip())
    words = (m.group(1) if m else " ".join(sentence.split()[:4])).strip(" ,.;")
    return words or f"evidence {i}"


def evidence_records(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """HotpotQA-style examples from the evidence-sentence file (see the module docstring)."""
    raw = [rec for _, rec in iter_jsonl(path, "HotpotQA records with evidence sentences, one a line")]
    raw = raw[:limit] if limit else raw
    out = []
    for n, rec in enumerate(raw):
        titles, context = [], []
        for i, sent in enumerate(rec.get("evidence") or []):
            title = _subject(sent, i)
            while title in titles:
                title += f" ({i})"
            titles.append(title)
            context.append([title, [sent]])
        others = [raw[(n + j) % len(raw)] for j in range(1, EVIDENCE_DISTRACTORS + 1) if len(raw) > j]
        for j, o in enumerate(others):
            for i, sent in enumerate((o.get("evidence") or [])[:1]):
                context.append([f"{_subject(sent, i)} [{j}]", [sent]])
        qid = f"hotpotqa-evidence-{n}"
        record = {"_id": qid, "question": rec["question"], "answer": rec["answer"], "context": context,
                  "supporting_facts": [[t, 0] for t in titles], "type": rec.get("type", "")}
        out.append({"id": qid, "question": rec["question"], "gold": [rec["answer"]], "raw": record})
    return out


def load_train_questions(sources: Sequence[tuple[str, str]], data_dir: str | Path, *,
                         limit: int | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """[(source file, examples)] for `(task, file)` pairs; `limit` questions per file."""
    from agentic_infer.tasks import get_task

    out = []
    for task, name in sources:
        path = Path(data_dir) / name
        if task == "hotpotqa-evidence":
            out.append((name, evidence_records(path, limit)))
        else:
            out.append((name, get_task(task).load(path, limit=limit)))
    return out


def dev_questions(data_dir: str | Path) -> set[str]:
    """Normalised question texts of the dev files (for the leak check)."""
    from agentic_infer.tasks import get_task

    qs: set[str] = set()
    for name, task in zip(DEV_FILES, ("hotpotqa", "musique", "2wiki")):
        path = Path(data_dir) / name
        if path.is_file():
            qs.update(normalize_answer(ex["question"]) for ex in get_task(task).load(path))
    return qs


def _retriever(ex: Mapping[str, Any]) -> BM25Index | None:
    docs = question_paragraphs(ex.get("raw", ex))
    return BM25Index.from_documents(docs) if docs else None


async def plain_demo(ex: Mapping[str, Any], vocab: Vocab, options: Mapping[str, Any], *,
                     wording: str = "title") -> tuple[Trajectory | None, str | None]:
    """One demonstration of `ex` with the plain prompt and raw passages, and its rejection reason."""
    plan, why = gold_plan(ex)
    if plan is None:
        return None, f"no_plan:{why}"
    retriever = _retriever(ex)
    if retriever is None:
        return None, "no_plan:no_paragraphs"
    recording = RecordingRetriever(retriever)
    policy = ScriptedPolicy(vocab, script(plan, plan.hops, wording, end_of_turn=vocab.end_of_turn(),
                                          dialect=options.get("dialect", "search_o1")))
    engine = SearchO1(policy, recording, **plain_options(**options), max_turns=len(plan.hops) + 1,
                      max_total_tokens=1 << 24, sampling=SamplingParams(max_tokens=1 << 16, temperature=0.0))
    if len(plan.hops) > engine.loop.limits.max_actions:
        return None, "too_many_hops"
    traj = (await engine.run({"id": plan.example_id, "question": plan.question, "gold": list(plan.gold)})).trajectories[0]
    for seg in traj.segments:
        if seg.kind == "model":
            seg.metadata["scripted"] = True
    verdicts, reason = verify_demo(traj, plan, plan.hops, wording, recording)
    if reason is None and not grounded(traj, plan):
        reason = "answer_not_shown"
    write_verdicts(traj, verdicts)
    traj.group_id = plan.example_id
    traj.metadata.update({"demonstration": True, "question": plan.question, "gold": list(plan.gold), "demo": {"source": plan.source, "wording": wording,
                                                          "hops": len(plan.hops), "plain_prompt": True}})
    return traj, reason


def _shown(needle: str, haystack: str) -> bool:
    n = normalize_answer(needle)
    return bool(n) and f" {n} " in f" {normalize_answer(haystack)} "


def grounded(traj: Trajectory, plan: Any) -> bool:
    """Every hop's stated answer is in that hop's observation, and the final answer (unless yes/no) in some
    observation."""
    shown = [s.text for s in traj.segments if s.kind == "observation"]
    for hop, text in zip(plan.hops, shown):
        if hop.answer and not _shown(hop.answer, text):
            return False
    gold = plan.gold[0]
    return normalize_answer(gold) in ("yes", "no") or any(_shown(gold, text) for text in shown)


async def build_plain_demos(examples: Sequence[Mapping[str, Any]], vocab: Vocab, options: Mapping[str, Any]
                            ) -> tuple[list[Trajectory], dict[str, Any]]:
    """Verified demonstrations (one per question: the `title` wording, else `subq`) and the counts."""
    kept: list[Trajectory] = []
    reasons: Counter[str] = Counter()
    for ex in examples:
        traj = None
        for wording in ("subq", "title"):
            traj, reason = await plain_demo(ex, vocab, options, wording=wording)
            if reason is None or reason.startswith("no_plan") or reason == "too_many_hops":
                break
        if reason is None and traj is not None:
            kept.append(traj)
        else:
            reasons[str(reason).split(":")[0] if not str(reason).startswith("no_plan") else str(reason)] += 1
    return kept, {"questions": len(examples), "verified": len(kept), "rejected": dict(reasons)}


async def build_coa_demos(examples: Sequence[Mapping[str, Any]], vocab: Vocab, options: Mapping[str, Any]
                          ) -> tuple[list[Trajectory], dict[str, Any]]:
    """The afm-dialect counterpart of `build_plain_demos` (`demos=coa`): teacher-free Chain-of-Agents runs
    (`synth.coa`) over each question's own paragraphs with the plain setting's `k`, `passage_chars` and
    `max_searches`, kept by CoA's progressive filter, and the counts."""
    from synth.coa import CoAOptions, build_coa

    res = await build_coa(examples, vocab, CoAOptions(k=options["k"], passage_chars=options["passage_chars"],
                                                      max_searches=options["max_searches"]))
    st = res.stats  # each run's metadata holds the question as it asked it (the plan's, stripped) and the gold
    return res.trajectories, {"questions": st["questions"], "verified": st["kept"],
                              "rejected": {**st["no_plan"], **st["dropped"]}}


def prompt_is_plain(traj: Trajectory, question: str, vocab: Vocab, options: Mapping[str, Any]) -> bool:
    """The demonstration's prompt is exactly what the eval engine starts an episode of its question with (no
    extra help; a dialect's pre-filled opening, Atom-Searcher's `<think>`, included), in the dialect `options`
    name."""
    engine = SearchO1(ScriptedPolicy(vocab, []), RecordingRetriever(None), **plain_options(**options))
    def prompt_of(t: Trajectory) -> str:
        return "".join(s.text for s in t.segments if s.kind == "prompt")

    return prompt_of(traj) == prompt_of(engine.start({"question": question}).trajectory)


def score_answer(answer: str | None, gold: Sequence[str]) -> dict[str, float]:
    return {m: score(m, answer, list(gold)) for m in ("em", "f1", "cover_em")}
