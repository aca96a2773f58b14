"""Retrieval benchmark: our BM25 vs raw bm25s vs rank_bm25, and BM25 / dense / hybrid recall.

    .venv/bin/python bench/retrieval.py                 # full run (see timings below)
    .venv/bin/python bench/retrieval.py --no-dense      # BM25 parts only (~1-2 min)

Corpora: `multihop-pooled` (13.5k paragraphs of HotpotQA/MuSiQue/2Wiki) and `wiki-vital` (10k
Wikipedia leads). Queries: the 450 HotpotQA/MuSiQue/2Wiki dev questions (pooled) and the first 1,000
NQ-open dev questions (wiki-vital). All three BM25 implementations see the same passages
(`title\\ntext`), the same queries and the same tokenisation rules (regex words, English stopwords,
Snowball stemmer); raw bm25s uses its own `bm25s.tokenize` (same rules) as its README shows.
Timings are medians over `--repeats` runs in this one process; ratios are what to read, the
machine is noisy. "ours (Hits)" returns full `Hit` objects (id, title, text, score); "ours (rows)"
and raw bm25s return row numbers and scores only; the ratio uses the stricter "ours (Hits)". rank_bm25 scores every passage in Python, so only `--rank-bm25-queries` queries
(default 100) are timed for it and its rate is extrapolated per query.

Recall@k (k = 2, 5, 10) on the pooled corpus: share of each HotpotQA / MuSiQue dev question's gold
supporting paragraphs found in the top k, averaged over questions. The dense encoder
(all-MiniLM-L6-v2) needs ~10-15 min to embed the pooled corpus on 2 CPU cores; the hybrid index
(BM25 + dense) is therefore cached under `$AGENTIC_CACHE/bench/` keyed by the corpus hash and reused
by later runs. Writes `bench/results/retrieval.json`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_infer.assets import cache_dir  # noqa: E402
from agentic_infer.tools.retrieval.bm25 import passage_text  # noqa: E402
from agentic_infer.tools.retrieval.index import build_index, load_index  # noqa: E402
from agentic_infer.tools.retrieval.recipes import (  # noqa: E402
    multihop_pooled,
    pooled_id,
    read_records,
    shared_data_dir,
    supporting_documents,
    wiki_vital,
)
from agentic_infer.tools.retrieval.tokenizer import Tokenizer  # noqa: E402

K = 10
RECALL_KS = (2, 5, 10)


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def bench_bm25(name: str, docs, queries: list[str], *, repeats: int, rank_queries: int) -> dict:
    import bm25s
    import Stemmer
    from rank_bm25 import BM25Okapi

    texts = [passage_text(d) for d in docs]
    res: dict = {"corpus": name, "n_docs": len(docs), "n_queries": len(queries), "k": K}

    # ---- build
    with tempfile.TemporaryDirectory() as tmp:
        t_ours, _ = median_time(lambda: build_index(docs, kind="bm25", out=Path(tmp) / "i", overwrite=True), repeats)
        stemmer = Stemmer.Stemmer("english")

        def build_raw():
            toks = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
            r = bm25s.BM25()
            r.index(toks, show_progress=False)
            return r

        t_raw, raw = median_time(build_raw, repeats)

        def build_rank():
            return BM25Okapi(Tokenizer().batch(texts))

        t_rank, rank = median_time(build_rank, 1)
        res["build_s"] = {"ours": t_ours, "bm25s": t_raw, "rank_bm25": t_rank}
        res["build_note"] = "ours includes writing corpus.jsonl + arrays to disk; all include tokenization"

        # ---- query
        ours = load_index(Path(tmp) / "i")  # memory-mapped, as served
        ours.search(queries[:5], K)  # warm caches
        t_q_ours, ours_hits = median_time(lambda: ours.search(queries, K), repeats)
        t_q_rows, _ = median_time(lambda: ours.search_rows(queries, K), repeats)  # ids + scores, like bm25s

        def query_raw():
            qt = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
            return raw.retrieve(qt, k=K, show_progress=False, n_threads=0)

        t_q_raw, raw_res = median_time(query_raw, repeats)
        sub = queries[:rank_queries]
        tok = Tokenizer()

        def query_rank():
            out = []
            for q in sub:
                s = rank.get_scores(tok(q))
                out.append(np.argsort(-s)[:K])
            return out

        t_q_rank, rank_res = median_time(query_rank, 1)
        qps = {"ours": len(queries) / t_q_ours, "ours_rows_only": len(queries) / t_q_rows,
               "bm25s": len(queries) / t_q_raw, "rank_bm25": len(sub) / t_q_rank}
        res["queries_per_s"] = qps
        res["rank_bm25_queries_timed"] = len(sub)
        res["ratios"] = {
            "ours_vs_bm25s_query_time": qps["bm25s"] / qps["ours"],  # < 1.2 is the target
            "ours_speedup_vs_rank_bm25_query": qps["ours"] / qps["rank_bm25"],  # >= 10 is the target
            "ours_vs_bm25s_build_time": t_ours / t_raw,
            "rank_bm25_vs_ours_build_time": t_rank / t_ours,
        }
        # ---- agreement of the top-10 (same corpus order = same rows)
        row_of = {d.id: i for i, d in enumerate(docs)}
        ours_rows = [[row_of[h.id] for h in hits] for hits in ours_hits]
        raw_rows = [[int(r) for r, s in zip(rr, ss, strict=True) if s > 0] for rr, ss in zip(raw_res.documents, raw_res.scores, strict=True)]
        res["top10_overlap"] = {
            "ours_vs_bm25s": float(np.mean([len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(ours_rows, raw_rows, strict=True)])),
            "ours_vs_rank_bm25": float(np.mean([len(set(a) & set(b.tolist())) / K for a, b in zip(ours_rows[: len(rank_res)], rank_res, strict=True)])),
        }
    return res


def multihop_questions(data: Path) -> dict[str, list[dict]]:
    return {
        "hotpotqa": read_records(data / "multihop" / "hotpotqa_dev_distractor_150.jsonl"),
        "musique": read_records(data / "multihop" / "musique_ans_dev_150.jsonl"),
        "2wiki": read_records(data / "multihop" / "2wiki_dev_150.jsonl"),
    }


def recall_at_k(index, questions: list[dict]) -> dict[str, float]:
    golds = [{pooled_id(d.title, d.text) for d in supporting_documents(q)} for q in questions]
    keep = [i for i, g in enumerate(golds) if g]
    hits = index.search([questions[i]["question"] for i in keep], max(RECALL_KS))
    out = {}
    for k in RECALL_KS:
        out[f"recall@{k}"] = float(np.mean([len(golds[i] & {h.id for h in hs[:k]}) / len(golds[i])
                                            for i, hs in zip(keep, hits, strict=True)]))
    out["n_questions"] = len(keep)
    return out


def cached_hybrid(docs) -> tuple[object, float | None]:
    h = hashlib.sha256()
    for d in docs:
        h.update(f"{d.id}\x00{d.title}\x00{d.text}\x01".encode())
    path = cache_dir() / "bench" / f"pooled-hybrid-{h.hexdigest()[:12]}"
    if (path / "meta.json").is_file():
        return load_index(path), None
    t = time.perf_counter()

    def progress(stage: str, done: int, total: int | None) -> None:
        if stage == "embed":
            print(f"  embedding the pooled corpus for the dense index: {done:,}/{total:,} "
                  f"({time.perf_counter() - t:.0f}s; cached for later runs in {path})", file=sys.stderr)

    idx = build_index(docs, kind="hybrid", out=path, overwrite=True, progress=progress)
    return idx, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rank-bm25-queries", type=int, default=100)
    ap.add_argument("--nq-queries", type=int, default=1000)
    ap.add_argument("--no-dense", action="store_true", help="skip dense/hybrid recall (BM25 recall still runs)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "retrieval.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    data = shared_data_dir()
    questions = multihop_questions(data)
    mh_queries = [q["question"] for qs in questions.values() for q in qs]
    nq = [r["question"] for r in read_records(data / "odqa" / "nq_open_dev.jsonl")[: args.nq_queries]]

    results: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                 "platform": platform.platform()},
                     "repeats": args.repeats, "speed": [], "recall": {}}
    t0 = time.perf_counter()
    pooled = list(multihop_pooled(data))
    vital = [d for d in wiki_vital() if d.text.strip()]
    for name, docs, queries in (("multihop-pooled", pooled, mh_queries), ("wiki-vital", vital, nq)):
        r = bench_bm25(name, docs, queries, repeats=args.repeats, rank_queries=args.rank_bm25_queries)
        results["speed"].append(r)
        print(f"[{time.perf_counter() - t0:6.1f}s] speed on {name} done", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        bm = build_index(pooled, kind="bm25", out=Path(tmp) / "bm25")
        systems = {"bm25": bm}
        if not args.no_dense:
            hyb, t_build = cached_hybrid(pooled)
            systems["dense"] = hyb.dense
            systems["hybrid"] = hyb
            results["dense_build_s"] = t_build  # None when loaded from the cache
        for ds in ("hotpotqa", "musique"):
            results["recall"][ds] = {}
            for sname, idx in systems.items():
                t = time.perf_counter()
                results["recall"][ds][sname] = recall_at_k(idx, questions[ds])
                results["recall"][ds][sname]["search_s"] = time.perf_counter() - t
        print(f"[{time.perf_counter() - t0:6.1f}s] recall done", file=sys.stderr)
    results["total_s"] = time.perf_counter() - t0

    print_tables(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


def print_tables(results: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(width=max(Console().width, 120))
    t = Table(title="BM25 index build, seconds (median; includes tokenization)")
    for col in ("corpus", "docs", "ours", "bm25s", "rank_bm25", "ours / bm25s"):
        t.add_column(col, justify="right")
    for r in results["speed"]:
        b = r["build_s"]
        t.add_row(r["corpus"], f"{r['n_docs']:,}", f"{b['ours']:.2f}", f"{b['bm25s']:.2f}", f"{b['rank_bm25']:.2f}",
                  f"{r['ratios']['ours_vs_bm25s_build_time']:.2f}x")
    con.print(t)
    t = Table(title="BM25 queries per second (median; k=10, one thread, tokenization included)")
    for col in ("corpus", "queries", "ours (Hits)", "ours (rows)", "bm25s (rows)", "rank_bm25", "ours time / bm25s",
                "ours vs rank_bm25",
                "top10 = bm25s", "top10 = rank_bm25"):
        t.add_column(col, justify="right")
    for r in results["speed"]:
        q, x, o = r["queries_per_s"], r["ratios"], r["top10_overlap"]
        t.add_row(r["corpus"], str(r["n_queries"]), f"{q['ours']:,.0f}", f"{q['ours_rows_only']:,.0f}",
                  f"{q['bm25s']:,.0f}",
                  f"{q['rank_bm25']:,.1f} ({r['rank_bm25_queries_timed']} q)",
                  f"{x['ours_vs_bm25s_query_time']:.2f}x", f"{x['ours_speedup_vs_rank_bm25_query']:,.0f}x faster",
                  f"{o['ours_vs_bm25s']:.3f}", f"{o['ours_vs_rank_bm25']:.3f}")
    con.print(t)
    t = Table(title="Recall of gold supporting paragraphs on multihop-pooled")
    for col in ("dataset", "system", *[f"R@{k}" for k in RECALL_KS], "questions"):
        t.add_column(col)
    for ds, systems in results["recall"].items():
        for sname, r in systems.items():
            t.add_row(ds, sname, *[f"{r[f'recall@{k}']:.3f}" for k in RECALL_KS], str(r["n_questions"]))
    con.print(t)


if __name__ == "__main__":
    main()
