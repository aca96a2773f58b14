"""Chain-of-Agents distillation data: multi-agent runs linearised into single-model AFM trajectories, filtered.

    agentic synth coa --task musique --data ../shared/data/multihop/musique_train_100.json --out coa/ [--limit N]
    result = asyncio.run(build_coa(examples, Vocab(load_tokenizer("default")), CoAOptions()))

For each question with a gold plan (`synth.demos.gold_plan`), the role graph (`synth.coa.graph`, teacher-free)
drives the real agent loop in the `afm` dialect over a real BM25 index (the question's own paragraphs, or one
pooled index with `corpus="pooled"`, where a sub-question misses more often and the reflector works), so each run
is one AFM trajectory: the roles' blocks are model segments (token ids exact for the target tokenizer:
`encode_continuation`), the search results observation segments (masked from the loss by their kind). The
progressive filter (`synth.coa.filters`) keeps it or names why not. Kept trajectories carry
`metadata["lineage"]` (source item, engine, roles per turn, filter verdict) and `metadata["coa"]`; they are
written as `synth demos` writes its own (`trajectories.jsonl` + `stats.json`, plus `dropped.jsonl`), so
`agentic synth export` and `agentic train sft` read them unchanged.
`mode="llm"` asks a model per role instead (`synth.coa.graph.LLMRoles`), on the same questions (the gold plan
then only judges: the filter's hops and answer check).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.errors import ConfigError
from agentic_infer.runner import write_jsonl
from agentic_infer.tools.retrieval.bm25 import BM25Index
from agentic_infer.tools.retrieval.corpus import question_paragraphs
from agentic_infer.types import SamplingParams, Trajectory
from agentic_infer.verify import score, write_verdicts
from synth.coa.filters import coa_filter
from synth.coa.graph import WORDINGS, CoAPolicy, LLMRoles, Roles
from synth.demos.build import DemoResult, pooled_index, write_demos
from synth.demos.plans import GoldPlan, gold_plan
from synth.demos.scripted import RecordingRetriever, Vocab

CORPORA = ("question", "pooled")
MODES = ("teacher-free", "llm")


@dataclass(frozen=True)
class CoAOptions:
    """`k`: documents per search; `passage_chars`: each passage cut to this many characters (0: whole);
    `max_searches`: the limit the prompt states and the loop enforces (None: two wordings per gold hop, so every
    hop can be searched again after a miss); `corpus`: "question" (its own paragraphs) or "pooled" (every loaded
    question's paragraphs in one index); `end_of_turn`: close the answer with the chat template's end-of-turn
    text; `mode`: "teacher-free" (roles from the gold decomposition) or "llm" (a model per role:
    `build_coa(..., llms=...)`). A policy trained on the runs is served with the same `k`, `passage_chars` and
    `max_searches` (`agentic train distill --set demos=coa` fixes them to its eval setting)."""

    k: int = 3
    passage_chars: int = 0
    max_searches: int | None = None
    corpus: str = "question"
    end_of_turn: bool = True
    mode: str = "teacher-free"

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 1:
            raise ConfigError(f"CoAOptions.k={self.k!r}: must be an integer >= 1")
        if self.max_searches is not None and (not isinstance(self.max_searches, int) or self.max_searches < 1):
            raise ConfigError(f"CoAOptions.max_searches={self.max_searches!r}: an integer >= 1, or None")
        if self.corpus not in CORPORA:
            raise ConfigError(f"CoAOptions.corpus={self.corpus!r}: choose one of {CORPORA}")
        if self.mode not in MODES:
            raise ConfigError(f"CoAOptions.mode={self.mode!r}: choose one of {MODES}")


@dataclass
class CoAResult:
    trajectories: list[Trajectory] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


async def build_one(plan: GoldPlan, retriever: Any, vocab: Vocab, options: CoAOptions, *,
                    task: str | None = None, llms: Any = None) -> tuple[Trajectory, str | None]:
    """One linearised multi-agent run and the filter's verdict (None: kept). `llms`: the role models of the LLM
    mode (one backend, or a mapping role -> backend); the gold plan then only judges the result."""
    recording = RecordingRetriever(retriever)
    eot = vocab.end_of_turn() if options.end_of_turn else ""
    if options.mode == "llm":
        if llms is None:
            raise ConfigError("CoA mode 'llm' needs the role models: pass llms= (one backend or role -> backend)")
        roles: Any = LLMRoles(plan.question, recording, llms, end_of_turn=eot)
    else:
        roles = Roles(plan, recording, end_of_turn=eot)
    policy = CoAPolicy(vocab, roles)
    most = options.max_searches or max(len(plan.hops), roles.max_hops if options.mode == "llm" else 0) * len(WORDINGS)
    engine = SearchO1(policy, recording, dialect="afm", k=options.k, passage_chars=options.passage_chars,
                      max_searches=most, max_turns=most + 1,
                      max_total_tokens=1 << 24, sampling=SamplingParams(max_tokens=1 << 16, temperature=0.0))
    example = {"id": plan.example_id, "question": plan.question, "gold": list(plan.gold), "task": task}
    traj = (await engine.run(example)).trajectories[0]
    for seg in traj.segments:
        if seg.kind == "model":
            seg.metadata["scripted"] = True
    reason = coa_filter(traj, plan, end_of_turn=eot)
    write_verdicts(traj, {m: score(m, traj.answer, list(plan.gold)) for m in ("em", "f1")})
    traj.id, traj.group_id = f"{plan.example_id}/coa", plan.example_id
    if options.mode == "teacher-free":
        traj.usage.llm_calls = 0  # nothing was sampled: the roles are filled from the gold plan
    turns = [list(turn) for turn in policy.log]
    traj.metadata.update({
        "demonstration": True, "question": plan.question, "gold": list(plan.gold),
        "coa": {"mode": options.mode, "roles": turns, "reflections": sum("reflector" in t for t in turns),
                "unresolved": policy.state.get("unresolved", []), "k": options.k, "corpus": options.corpus},
        "lineage": {"source": plan.example_id, "task": task, "engine": f"chain-of-agents/{options.mode}",
                    "operator": "coa_linearise", "parents": [], "filter": reason or "kept", "vocab": vocab.source}})
    return traj, reason


async def build_coa(examples: Sequence[Mapping[str, Any]], vocab: Vocab, options: CoAOptions = CoAOptions(),
                    *, task: str | None = None, only: Sequence[int] | None = None, llms: Any = None) -> CoAResult:
    """Filtered CoA trajectories for `examples` (loaded with `get_task(...).load`) and the run's stats. `only`: the
    indices of the examples to build (a shard's block; the pooled corpus still spans every example)."""
    t0 = time.perf_counter()
    result = CoAResult()
    no_plan: Counter[str] = Counter()
    pooled = pooled_index(examples) if options.corpus == "pooled" else None
    built = 0
    todo = examples if only is None else [examples[i] for i in only]
    for ex in todo:
        plan, why = gold_plan(ex)
        docs = question_paragraphs(ex.get("raw", ex)) if plan is not None and pooled is None else None
        if plan is None or (pooled is None and not docs):
            no_plan[why or "no_paragraphs"] += 1
            continue
        traj, reason = await build_one(plan, pooled or BM25Index.from_documents(docs), vocab, options, task=task,
                                       llms=llms)
        built += 1
        if reason is None:
            result.trajectories.append(traj)
        else:
            result.dropped.append({"id": traj.id, "source": plan.example_id, "reason": reason,
                                   "roles": traj.metadata["coa"]["roles"]})
    wall = time.perf_counter() - t0
    kept = result.trajectories
    result.stats = {
        "step": "coa", "mode": options.mode, "task": task, "questions": len(todo), "no_plan": dict(no_plan),
        "built": built, "kept": len(kept), "dropped": dict(Counter(d["reason"] for d in result.dropped)),
        "kept_with_reflection": sum(t.metadata["coa"]["reflections"] > 0 for t in kept),
        "tokens": sum(len(t.token_ids()) for t in kept), "wall_s": round(wall, 3),
        "ms_per_row": round(1000 * wall / max(built, 1), 1), "options": asdict(options), "vocab": vocab.source}
    return result


def write_coa(out: str | Path, result: CoAResult, *, overwrite: bool = False) -> Path:
    """`out/trajectories.jsonl` and `out/stats.json` (as `synth demos` writes them), plus `out/dropped.jsonl`;
    refuses to replace a file."""
    path = write_demos(out, DemoResult(trajectories=result.trajectories, stats=result.stats), overwrite=overwrite)
    write_jsonl(Path(out) / "dropped.jsonl", result.dropped)
    return path
