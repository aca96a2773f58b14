"""Load benchmark of the retrieval server (`POST /retrieve`) over a real BM25 index.

    .venv/bin/python bench/retrieval_server.py                     # multihop-pooled corpus (shared data)
    .venv/bin/python bench/retrieval_server.py --corpus wiki-vital --seconds 5 --repeats 1

Builds (or reuses) a bm25s index of the corpus with `build_index`, starts three servers on
loopback as subprocesses, side by side: `batched` (the defaults: under concurrent load, requests
arriving within a 2 ms window are merged into one `search()` call), `no-window` (only requests
that queued while the previous call ran are merged) and `unbatched` (`max_batch_queries=1`: one
`search()` call per query, as the reference server does). A bounded load generator (httpx async;
at most `--requests` requests AND `--seconds` seconds per cell) sends one-query Search-R1 requests
(`topk=3, return_scores=true`, real HotpotQA / MuSiQue / 2Wiki dev questions) at concurrency 1, 8
and 32. Cells are interleaved over `--repeats` rounds (the config order rotates each round); the
table shows medians over rounds of requests/s, p50 and p99 latency, the mean queries per
`search()` call seen by the server, the server process's CPU time per request (from /proc; less
sensitive to a busy machine than wall time) and the summed errors (target: zero), plus each config's
throughput relative to `unbatched`. The in-process `search()` latency of the same index is
measured too, to show the HTTP overhead. Results go to `bench/results/retrieval_server.json`.

Caveats: the load generator runs on the same (small, shared) machine as the server, so at high
concurrency it competes with the server for CPU; compare the ratios, not the absolute numbers.
Only 127.0.0.1 is ever contacted. Not a test; not run by `make test`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentic_infer.tools.retrieval.index import build_index, load_index, read_meta  # noqa: E402

RESULTS = REPO / "bench" / "results" / "retrieval_server.json"
CONCURRENCY = (1, 8, 32)
CONFIGS = {
    "batched": {"batch_window_ms": 2.0, "max_batch_queries": 1024},  # the server's defaults
    "no-window": {"batch_window_ms": 0.0, "max_batch_queries": 1024},  # merges only what queued meanwhile
    "unbatched": {"batch_window_ms": 0.0, "max_batch_queries": 1},  # one search() per query
}
SERVER_SCRIPT = """
import sys
from agentic_infer.tools.retrieval.index import load_index
from agentic_infer.tools.retrieval.server import ServerLimits, serve
index, port, window, max_batch = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
limits = ServerLimits(batch_window_ms=window, max_batch_queries=max_batch)
serve(load_index(index), "127.0.0.1", port, limits=limits, log_level="warning")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_index(corpus: str, directory: Path) -> tuple[Any, dict[str, Any]]:
    """Reuse the index in `directory` if it was built from `corpus`, else build it."""
    try:
        meta = read_meta(directory)
        if meta["corpus"]["name"] == corpus or Path(meta["corpus"]["name"]).name == Path(corpus).name:
            return load_index(directory), {"built_now": False, **meta.get("build", {})}
    except Exception:  # noqa: BLE001 - anything wrong with a cached index: rebuild it
        pass
    t = time.perf_counter()
    index = build_index(corpus, out=directory, kind="bm25", overwrite=True)
    return index, {"built_now": True, "total_s": round(time.perf_counter() - t, 2)}


def load_questions(limit: int) -> tuple[list[str], str]:
    """Real multi-hop dev questions from the shared data, else document titles of the index."""
    from agentic_infer.runner import iter_jsonl
    from agentic_infer.tools.retrieval.recipes import shared_data_dir

    try:
        folder = shared_data_dir() / "multihop"
    except Exception:  # noqa: BLE001
        return [], "none"
    questions: list[str] = []
    for name in ("hotpotqa_dev_distractor_150.jsonl", "musique_ans_dev_150.jsonl", "2wiki_dev_150.jsonl"):
        path = folder / name
        if path.is_file():
            questions += [str(r["question"]) for _, r in iter_jsonl(path) if r.get("question")]
    return questions[:limit], "hotpotqa/musique/2wiki dev questions"


def direct_latency(index: Any, queries: list[str]) -> dict[str, float]:
    one = []
    for q in queries[:200]:
        t = time.perf_counter()
        index.search([q], 3)
        one.append(time.perf_counter() - t)
    batch = queries[:256]
    t = time.perf_counter()
    index.search(batch, 3)
    per_query_batched = (time.perf_counter() - t) / len(batch)
    return {
        "single_query_p50_ms": round(1000 * float(np.median(one)), 3),
        "batched_256_per_query_ms": round(1000 * per_query_batched, 3),
    }


def start_server(index_dir: Path, config: dict[str, Any]) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-c",
        SERVER_SCRIPT,
        str(index_dir),
        str(port),
        str(config["batch_window_ms"]),
        str(config["max_batch_queries"]),
    ]
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
            )
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server on {url} did not start in 120 s")


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process (Linux /proc), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def run_load(
    url: str,
    queries: list[str],
    *,
    concurrency: int,
    max_requests: int,
    max_seconds: float,
    offset: int = 0,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """Closed-loop load: `concurrency` workers, each sending one request after the other."""
    latencies: list[float] = []
    errors: list[str] = []
    counter = itertools.count()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        before = (await client.get(f"{url}/health")).json()["batching"]
        cpu_before = cpu_seconds(server_pid)
        deadline = time.perf_counter() + max_seconds

        async def worker() -> None:
            while True:
                i = next(counter)
                if i >= max_requests or time.perf_counter() > deadline:
                    return
                body = {"queries": [queries[(offset + i) % len(queries)]], "topk": 3, "return_scores": True}
                t = time.perf_counter()
                try:
                    r = await client.post(f"{url}/retrieve", json=body)
                    ok = r.status_code == 200 and len(r.json()["result"]) == 1
                    why = f"HTTP {r.status_code}: {r.text[:100]}"
                except httpx.HTTPError as e:
                    ok, why = False, f"{type(e).__name__}: {e}"
                if ok:
                    latencies.append(time.perf_counter() - t)
                else:
                    errors.append(why)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - t0
        cpu_after = cpu_seconds(server_pid)
        after = (await client.get(f"{url}/health")).json()["batching"]
    calls = after["search_calls"] - before["search_calls"]
    searched = after["searched_queries"] - before["searched_queries"]
    lat_ms = np.array(latencies) * 1000 if latencies else np.array([float("nan")])
    return {
        "requests": len(latencies) + len(errors),
        "errors": len(errors),
        "error_samples": errors[:3],
        "wall_s": round(wall, 3),
        "rps": round(len(latencies) / wall, 1),
        "p50_ms": round(float(np.percentile(lat_ms, 50)), 2),
        "p99_ms": round(float(np.percentile(lat_ms, 99)), 2),
        "search_calls": calls,
        "queries_per_call": round(searched / calls, 2) if calls else None,
        "server_cpu_ms_per_request": round(1000 * (cpu_after - cpu_before) / len(latencies), 3)
        if cpu_before is not None and cpu_after is not None and latencies
        else None,
    }


def median_cell(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"rounds": len(runs)}
    for key in ("rps", "p50_ms", "p99_ms", "queries_per_call", "server_cpu_ms_per_request"):
        values = [r[key] for r in runs if r[key] is not None]
        out[key] = round(statistics.median(values), 2) if values else None
    out["requests"] = sum(r["requests"] for r in runs)
    out["errors"] = sum(r["errors"] for r in runs)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--corpus", default="multihop-pooled", help="recipe name (multihop-pooled, wiki-vital) or path"
    )
    p.add_argument("--index-dir", type=Path, default=None, help="where to build/reuse the index")
    p.add_argument("--requests", type=int, default=3000, help="max requests per cell")
    p.add_argument("--seconds", type=float, default=5.0, help="max seconds per cell")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds; medians are reported")
    args = p.parse_args()

    index_dir = args.index_dir or Path("/tmp/agentic-bench") / f"retrieval_server-{Path(args.corpus).name}"
    index, build = get_index(args.corpus, index_dir)
    queries, source = load_questions(2000)
    if not queries:
        queries = [index.get(i).title for i in index.store.ids()[:500]]
        source = "document titles (shared data not found)"
    direct = direct_latency(index, queries)
    print(
        f"index: {type(index).__name__} of {len(index)} passages from {args.corpus} in {index_dir} "
        f"({'built' if build.get('built_now') else 'reused'}); {len(queries)} queries from {source}"
    )
    print(
        f"in-process search(): p50 {direct['single_query_p50_ms']} ms for one query, "
        f"{direct['batched_256_per_query_ms']} ms/query in a batch of 256"
    )

    servers = {name: start_server(index_dir, cfg) for name, cfg in CONFIGS.items()}
    raw: dict[str, dict[int, list[dict[str, Any]]]] = {name: {c: [] for c in CONCURRENCY} for name in CONFIGS}
    try:
        for _, url in servers.values():  # warm-up
            asyncio.run(run_load(url, queries, concurrency=4, max_requests=100, max_seconds=5))
        for rnd in range(args.repeats):
            for conc in CONCURRENCY:
                names = list(servers)
                names = names[rnd % len(names) :] + names[: rnd % len(names)]  # rotate: no fixed order bias
                for name in names:
                    url = servers[name][1]
                    raw[name][conc].append(
                        asyncio.run(
                            run_load(
                                url,
                                queries,
                                concurrency=conc,
                                max_requests=args.requests,
                                max_seconds=args.seconds,
                                offset=rnd * 997,
                                server_pid=servers[name][0].pid,
                            )
                        )
                    )
    finally:
        for proc, _ in servers.values():
            stop_server(proc)

    cells = {name: {str(c): median_cell(runs) for c, runs in by_c.items()} for name, by_c in raw.items()}
    ratios = {
        name: {
            str(c): round(cells[name][str(c)]["rps"] / cells["unbatched"][str(c)]["rps"], 2)
            if cells["unbatched"][str(c)]["rps"]
            else None
            for c in CONCURRENCY
        }
        for name in CONFIGS
        if name != "unbatched"
    }

    header = (
        f"{'config':<10} {'conc':>4} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'q/call':>7} "
        f"{'cpu ms/req':>10} {'errors':>6} {'reqs':>6}"
    )
    print(header)
    print("-" * len(header))
    for conc in CONCURRENCY:
        for name in CONFIGS:
            c = cells[name][str(conc)]
            print(
                f"{name:<10} {conc:>4} {c['rps']:>8} {c['p50_ms']:>8} {c['p99_ms']:>8} "
                f"{c['queries_per_call'] or '-':>7} {c['server_cpu_ms_per_request'] or '-':>10} "
                f"{c['errors']:>6} {c['requests']:>6}"
            )
    for name, by_c in ratios.items():
        print(f"throughput {name}/unbatched: " + ", ".join(f"c={c}: {r}x" for c, r in by_c.items()))

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "retrieval_server",
                "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "index": {
                    "kind": type(index).__name__,
                    "corpus": args.corpus,
                    "n_passages": len(index),
                    "build": build,
                },
                "queries": {"source": source, "n": len(queries), "topk": 3, "per_request": 1},
                "bounds": {
                    "max_requests_per_cell": args.requests,
                    "max_seconds_per_cell": args.seconds,
                    "repeats": args.repeats,
                },
                "configs": CONFIGS,
                "direct_search": direct,
                "cells_median": cells,
                "throughput_ratio_over_unbatched": ratios,
                "raw": {name: {str(c): runs for c, runs in by_c.items()} for name, by_c in raw.items()},
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
