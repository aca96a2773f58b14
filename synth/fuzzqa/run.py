"""`run_fuzzqa`: fuzzed multi-hop QA from a corpus (or grounded in structured evidence), resumable, with a funnel.

    stats = asyncio.run(run_fuzzqa("out/", llm=load_llm("llamacpp://default"), corpus="wiki-vital", n=50))
    stats = asyncio.run(run_fuzzqa("out/", llm=llm, grounded="musique:../shared/data/multihop/musique_full_train_100.jsonl"))

Writes, under `out`:
- `qa.jsonl`: the QAs that passed every gate, HotpotQA records (`_id, question, answer, context,
  supporting_facts`, plus `hops`, `triples`, `evidence_ids`): `agentic eval run --task hotpotqa --data
  out/qa.jsonl` evaluates them, and train reads them through the same loader;
- `provenance.jsonl`: one record per finished seed (every version, gate verdicts, scores, triples; see
  `synth.fuzzqa.chain`); it is the completion marker: a rerun skips every seed in it, drops a torn last line,
  and rebuilds `qa.jsonl` from it (so the two never disagree);
- `stats.json`: the funnel (`write`: action attempts in -> parsed; `gates`: per gate in -> out and the drop
  reasons), QAs kept, hop histogram, mean closed-book / with-tools scores, LLM requests (and, with the cache,
  backend calls), wall time;
- `cache/llm.sqlite3`, `cache/judge.sqlite3` (with `config.cache`): a rerun pays for no finished request twice.

Corpora: `wiki-vital` (default; seeds from it, the with-tools agent searches the prebuilt default BM25 index),
`multihop` / `multihop-pooled`, or a corpus file/directory (an in-memory BM25 index). Grounded mode
(`grounded="TASK:FILE"`) takes its seeds from FILE and, without `corpus`, searches eval's pooled corpus of FILE.
On an executor (`--executor ray|slurm`, `--tasks N`): `synth.fuzzqa.distributed`.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.errors import ConfigError
from agentic_infer.runner import (
    append_jsonl,
    atomic_open,
    gather_bounded,
    read_jsonl,
    repair_jsonl,
    write_jsonl,
)
from agentic_infer.tools.retrieval.base import Document
from synth.fuzzqa.chain import FuzzQA, SeedRecord
from synth.fuzzqa.config import GATES, METRIC_JUDGES, FuzzQAConfig
from synth.fuzzqa.grounded import grounded_seeds, parse_grounded
from synth.fuzzqa.provenance import Version, qa_row

log = logging.getLogger(__name__)
CORPUS_ALIASES = {"multihop": "multihop-pooled"}


class CountingLLM:
    """Counts `generate` requests of the wrapped backend (everything else is delegated)."""

    def __init__(self, llm: Any):
        self.llm, self.requests = llm, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)

    async def generate(self, prompt: Any, params: Any) -> Any:
        self.requests += 1
        return await self.llm.generate(prompt, params)


def make_judge(kind: str, llm: Any, cache: Path | None) -> Any:
    """The equivalence judge: a metric (`em`, `cover_em`, `f1`: no LLM), else the LLM judge of verdict format `kind`
    (`json`, or `yes-no`: P(Yes), for small models) from `agentic_infer.engines.judge.make_judge`."""
    from agentic_infer.engines.judge import make_judge as make_llm_judge
    from agentic_infer.verify import MetricJudge

    if kind in METRIC_JUDGES:
        return MetricJudge(kind, threshold=0.5 if kind == "f1" else 1.0)
    return make_llm_judge("", llm, verdict=kind, cache=cache, **({"max_tokens": 128} if kind == "json" else {}))


def corpus_documents(corpus: str) -> tuple[str, list[Document]]:
    from agentic_infer.tools.retrieval.recipes import resolve_corpus

    name, docs = resolve_corpus(CORPUS_ALIASES.get(corpus, corpus))
    return name, list(docs)


def make_retriever(corpus: str, docs: list[Document]) -> Any:
    """The embedded index for `wiki-vital` (the one corpus factory), else a BM25 index over the corpus's `docs`."""
    if corpus == "wiki-vital":
        from agentic_infer.tools.retrieval.corpora import retriever_factory

        return retriever_factory(corpus="wiki-vital")({})
    from agentic_infer.tools.retrieval.bm25 import BM25Index

    return BM25Index.from_documents(docs)


def pick_seeds(docs: list[Document], n: int, *, min_words: int, seed: int) -> list[Document]:
    pool = [d for d in docs if len(d.text.split()) >= min_words]
    random.Random(seed).shuffle(pool)
    return pool[:n]


# -- resume -------------------------------------------------------------------------------------------
def read_records(path: Path) -> list[dict[str, Any]]:
    """The finished seed records; the torn last line of a killed run is dropped from the file, any other
    unreadable line is skipped with a warning."""
    repair_jsonl(path)
    return read_jsonl(path)


# -- stats --------------------------------------------------------------------------------------------
def funnel(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-gate funnel of finished seed records (see the module docstring)."""
    write_in, write_drop = Counter(), Counter()
    gates = {g: {"in": 0, "out": 0, "dropped": Counter()} for g in GATES}
    hops, cb, wt = Counter(), [], []
    for rec in records:
        for w in rec["writes"]:
            write_in[w["action"]] += 1
            if not w["ok"]:
                write_drop[f"{w['action']}:{w['reason']}"] += 1
        for v in rec["versions"]:
            for g in v["gates"]:
                gates[g["gate"]]["in"] += 1
                gates[g["gate"]]["out"] += int(g["keep"])
                if not g["keep"]:
                    gates[g["gate"]]["dropped"][g["reason"]] += 1
        if rec.get("final") is not None:
            v = rec["versions"][rec["final"]]
            hops[str(v["hops"])] += 1
            cb.append(v["closed_book"]["score"])
            wt.append(v["with_tools"]["score"])
    n_writes = sum(write_in.values())
    return {
        "seeds": len(records), "qas": sum(rec.get("final") is not None for rec in records),
        "versions": sum(len(r["versions"]) for r in records),
        "write": {"in": n_writes, "out": n_writes - sum(write_drop.values()), "by_action": dict(write_in),
                  "dropped": dict(write_drop)},
        "gates": {g: {"in": s["in"], "out": s["out"], "dropped": dict(s["dropped"])} for g, s in gates.items()},
        "final_hops": dict(hops),
        "final_closed_book_score_mean": sum(cb) / len(cb) if cb else None,
        "final_with_tools_score_mean": sum(wt) / len(wt) if wt else None,
    }


# -- the run ------------------------------------------------------------------------------------------
def seed_id(seed: Any) -> str:
    return seed.id if isinstance(seed, Document) else seed.seed_id


def plan_seeds(corpus: str | None, grounded: str | None, n: int, cfg: FuzzQAConfig
               ) -> tuple[list[Any], Counter, str, Any]:
    """The run's seeds (in order), the grounded seeds skipped by reason, the source's name, and the retriever the
    with-tools agent searches when none is given (None: `corpus`'s own, built by `corpus_retriever`)."""
    if not isinstance(n, int) or n < 1:
        raise ConfigError(f"--n {n!r}: must be an integer >= 1")
    if grounded:
        task, path = parse_grounded(grounded)
        gseeds, skipped = grounded_seeds(task, path)
        seeds: list[Any] = gseeds[:n]
        retriever = None
        if corpus is None:
            from agentic_infer.tasks._multihop import pooled
            from agentic_infer.tools.retrieval.bm25 import BM25Index

            retriever = BM25Index.from_documents(pooled(path))
        source = f"grounded:{task}:{path.name}"
    else:
        skipped, retriever = Counter(), None
        _, docs = corpus_documents(corpus or "wiki-vital")
        seeds = pick_seeds(docs, n, min_words=cfg.min_seed_words, seed=cfg.seed)
        source = corpus or "wiki-vital"
    if not seeds:
        raise ConfigError(f"no seeds: {grounded or corpus!r} gave no usable seed (skipped: {dict(skipped)})")
    return seeds, skipped, source, retriever


def corpus_retriever(corpus: str | None) -> Any:
    """The index the with-tools agent searches for `corpus` (default wiki-vital's prebuilt one)."""
    corpus_name = CORPUS_ALIASES.get(corpus or "wiki-vital", corpus or "wiki-vital")
    docs = [] if corpus_name == "wiki-vital" else corpus_documents(corpus_name)[1]
    return make_retriever(corpus_name, docs)


def run_stats(records: list[dict[str, Any]], *, source: str, grounded: str | None, n: int, seeds: int,
              skipped: Counter, requests: dict[str, Any], resumed: int, wall: float,
              cfg: FuzzQAConfig) -> dict[str, Any]:
    """stats.json of a run: the funnel of `records` and what the run paid (`requests`: llm_requests, judge_calls,
    backend_calls)."""
    return {"source": source, "mode": "grounded" if grounded else "ungrounded", "n": n, "seeds_planned": seeds,
            "seeds_skipped": dict(skipped), **funnel(records), **requests, "resumed_seeds": resumed,
            "wall_s": round(wall, 1), "config": _config_dict(cfg)}


async def run_fuzzqa(out: str | Path, *, llm: LLM, judge_llm: LLM | None = None, corpus: str | None = None,
                     grounded: str | None = None, n: int = 50, config: FuzzQAConfig | None = None,
                     retriever: Any = None, on_seed: Any = None, only: Collection[str] | None = None
                     ) -> dict[str, Any]:
    """Synthesize QAs from `n` seeds into `out` (see the module docstring); returns the stats written. `only`: the
    seed ids to run (a shard's block; `synth.fuzzqa.distributed`), default all."""
    cfg = config or FuzzQAConfig()
    out = Path(out)
    t0 = time.perf_counter()
    seeds, skipped, source, planned_retriever = plan_seeds(corpus, grounded, n, cfg)
    out.mkdir(parents=True, exist_ok=True)
    retriever = retriever or planned_retriever or corpus_retriever(corpus)

    policy: Any = llm
    if cfg.cache:
        from agentic_infer.backends.cache import CachedLLM

        policy = CachedLLM(llm, out / "cache" / "llm.sqlite3")
    policy = CountingLLM(policy)
    judge = make_judge(cfg.judge, judge_llm or llm, out / "cache" / "judge.sqlite3" if cfg.cache else None)
    fz = FuzzQA(policy, judge, retriever, cfg)

    prov_path, qa_path = out / "provenance.jsonl", out / "qa.jsonl"
    records = read_records(prov_path)
    done = {r["seed_id"] for r in records}
    write_jsonl(qa_path, (r["qa"] for r in records if r.get("qa")))
    todo = [s for s in seeds if seed_id(s) not in done and (only is None or seed_id(s) in only)]
    log.info("fuzzqa: %d seeds, %d already done, %d to run", len(seeds), len(done), len(todo))

    def write_stats() -> dict[str, Any]:
        paid = {"llm_requests": policy.requests, "judge_calls": getattr(judge, "calls", 0),
                "backend_calls": getattr(policy.llm, "misses", None)}
        stats = run_stats(records, source=source, grounded=grounded, n=n, seeds=len(seeds), skipped=skipped,
                          requests=paid, resumed=len(done), wall=time.perf_counter() - t0, cfg=cfg)
        with atomic_open(out / "stats.json") as f:
            f.write(json.dumps(stats, indent=2, ensure_ascii=False))
        return stats

    async def one(seed: Any) -> None:
        rec: SeedRecord = await (fz.run_seed(seed) if isinstance(seed, Document) else fz.run_grounded(seed))
        row = rec.to_dict()
        final: Version | None = rec.versions[rec.final] if rec.final is not None else None
        row["qa"] = qa_row(final, seed_id=rec.seed_id, source=source) if final else None
        append_jsonl(prov_path, row, fsync=True)
        if row["qa"]:
            append_jsonl(qa_path, row["qa"], fsync=True)
        records.append(row)
        write_stats()
        if on_seed is not None:
            on_seed(row)

    await gather_bounded(one, todo, cfg.concurrency)
    return write_stats()


def _config_dict(cfg: FuzzQAConfig) -> dict[str, Any]:
    from agentic_infer.config import config_to_dict

    return config_to_dict(cfg)
