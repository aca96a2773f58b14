"""`agentic synth fuzzqa --executor local|ray|slurm --tasks N`: the seeds in blocks over an executor, merged.

    stats = run_fuzzqa_on(ExecutorConfig(kind="slurm", tasks=8), "fuzz/", llm="openai://HOST:8000/v1?model=M",
                          corpus="wiki-vital", n=1000)

The seeds not yet in `out/provenance.jsonl` are split in contiguous blocks (`agentic_infer.shards`); each rank
loads the backends from their URIs and runs `run_fuzzqa` on its block into `out/shards/<plan>/<rank>/` (its own
provenance, request caches and stats; resumable like any run). The driver then rewrites `out/provenance.jsonl`
(the records of every finished seed, in seed order) and rebuilds `qa.jsonl` and `stats.json` from it: the funnel
is that of the records, the requests paid are summed over the shards. A killed run resumes: finished ranks are
skipped (their completion markers), the others resume from their own provenance.
"""

from __future__ import annotations

import asyncio
import json
import time
from functools import partial
from pathlib import Path
from typing import Any

from agentic_infer.executors import ExecutorConfig
from agentic_infer.runner import atomic_open, write_jsonl
from agentic_infer.shards import block, plan_key, run_shards, sum_stats
from synth.fuzzqa.config import FuzzQAConfig
from synth.fuzzqa.run import _config_dict, plan_seeds, read_records, run_fuzzqa, run_stats, seed_id

PAID = ("llm_requests", "judge_calls", "backend_calls")


def fuzzqa_shard(llm: str, judge: str | None, corpus: str | None, grounded: str | None, n: int, cfg: FuzzQAConfig,
                 pending: list[str], rank: int, world: int, out: Path) -> int:
    """Rank `rank`'s block of the pending seed ids, run into its shard folder `out`."""
    from agentic_infer.backends import load_llm

    mine = [pending[i] for i in block(len(pending), rank, world)]
    if mine:
        policy = load_llm(llm)
        judge_llm = policy if judge in (None, llm) else load_llm(judge)
        asyncio.run(run_fuzzqa(out, llm=policy, judge_llm=judge_llm, corpus=corpus, grounded=grounded, n=n,
                               config=cfg, only=set(mine)))
    return len(mine)


def run_fuzzqa_on(executor: ExecutorConfig, out: str | Path, *, llm: str, judge: str | None = None,
                  corpus: str | None = None, grounded: str | None = None, n: int = 50,
                  config: FuzzQAConfig | None = None) -> dict[str, Any]:
    """`run_fuzzqa` with the seeds on `executor` (backends by URI: each rank loads its own); returns the stats."""
    cfg = config or FuzzQAConfig()
    out = Path(out)
    t0 = time.perf_counter()
    seeds, skipped, source, _ = plan_seeds(corpus, grounded, n, cfg)
    out.mkdir(parents=True, exist_ok=True)
    prov_path = out / "provenance.jsonl"
    records = {r["seed_id"]: r for r in read_records(prov_path)}
    resumed = len(records)
    pending = [seed_id(s) for s in seeds if seed_id(s) not in records]
    paid: dict[str, Any] = dict.fromkeys(PAID, 0)
    if pending:
        folder = out / "shards" / plan_key(pending, executor.tasks, _config_dict(cfg), llm, judge, corpus, grounded, n)
        work = partial(fuzzqa_shard, llm, judge, corpus, grounded, n, cfg, pending)
        shards = run_shards(work, executor, folder, job_name="synth-fuzzqa")
        for d in shards:
            for rec in read_records(d / "provenance.jsonl"):
                records.setdefault(rec["seed_id"], rec)
        paid = {k: v for k, v in sum_stats([_stats(d) for d in shards]).items() if k in PAID}
    order = {seed_id(s): i for i, s in enumerate(seeds)}
    merged = sorted(records.values(), key=lambda r: order.get(r["seed_id"], len(order)))
    write_jsonl(prov_path, merged)
    write_jsonl(out / "qa.jsonl", (r["qa"] for r in merged if r.get("qa")))
    stats = run_stats(merged, source=source, grounded=grounded, n=n, seeds=len(seeds), skipped=skipped,
                      requests={**dict.fromkeys(PAID, 0), **paid}, resumed=resumed, wall=time.perf_counter() - t0,
                      cfg=cfg)
    stats["executor"] = {"kind": executor.kind, "tasks": executor.tasks, "workers": executor.workers}
    with atomic_open(out / "stats.json") as f:
        f.write(json.dumps(stats, indent=2, ensure_ascii=False))
    return stats


def _stats(shard: Path) -> dict[str, Any]:
    path = shard / "stats.json"
    return json.loads(path.read_text()) if path.exists() else {}


__all__ = ["fuzzqa_shard", "run_fuzzqa_on"]
