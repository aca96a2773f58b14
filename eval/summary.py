"""Summaries of eval runs: metrics with 95% bootstrap intervals, totals, provenance.

    rows = read_results("runs/x/results.jsonl")
    summary = summarize(rows, record=run_json, task=get_task("hotpotqa"))

`read_results` tolerates a torn last line (a killed run) and keeps the first row of an id.
`model_info` records the backend URI, class, model path and, for a local model file, its size and
the SHA-256 of its first and last 8 MiB (`sha256_head_tail`, fast on multi-GB files; not the
file's full hash). Not covered: significance tests between runs (see `eval.report` diffs).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentic_infer.runner import atomic_open, read_jsonl
from agentic_infer.verify import describe
from eval.stats import summarize_values

# Published systems' metrics, named as the papers name them -> the metric key that computes them.
PUBLISHED = {
    "Search-o1 EM": "search_o1_em", "Search-o1 F1": "search_o1_f1", "Search-o1 acc": "search_o1_acc",
    "Search-o1 EM (backoff)": "search_o1_em_backoff", "Search-o1 F1 (backoff)": "search_o1_f1_backoff",
    "Search-o1 acc (backoff)": "search_o1_acc_backoff", "Search-R1 EM": "search_r1_em",
    "R1-Searcher cover-EM": "r1_searcher_cover_em", "R1-Searcher judge": "judge_acc", "ASearcher judge": "judge_acc",
}


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a results.jsonl ([] when absent); unreadable lines (a torn tail) are skipped, ids kept once."""
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in read_jsonl(Path(path)):
        if row.get("id") not in seen:
            seen.add(row["id"])
            rows.append(row)
    return rows


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _head_tail_sha(path: Path, span: int = 8 << 20) -> str:
    h = hashlib.sha256()
    size = path.stat().st_size
    with open(path, "rb") as f:
        h.update(f.read(span))
        if size > 2 * span:
            f.seek(size - span)
        h.update(f.read(span))
    return h.hexdigest()


def model_info(llm: Any, uri: str | None) -> dict[str, Any]:
    """The model behind a run: its URI, class, file size and hash, and the `lineage.json` of a trained policy."""
    from agentic_infer.lineage import read_policy_lineage

    info: dict[str, Any] = {"uri": uri, "class": type(llm).__name__}
    for attr in ("model", "model_name", "model_path", "path"):
        v = getattr(llm, attr, None)
        if isinstance(v, (str, Path)) and str(v):
            info[attr] = str(v)
            p = Path(str(v))
            if p.is_file():
                info["size_bytes"] = p.stat().st_size
                info["sha256_head_tail"] = _head_tail_sha(p)
            if p.exists() and (lineage := read_policy_lineage(p)) is not None:
                info["lineage"] = lineage  # what the policy was trained on (agentic_infer.lineage)
    if type(llm).__name__ == "FakeLLM":
        info["note"] = "scripted FakeLLM (tests)"
    return info


def toolkit_version() -> str:
    try:
        from importlib.metadata import version

        return version("agentic-infer")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        from agentic_infer import __version__

        return __version__


def _dist(values: Iterable[float]) -> dict[str, float]:
    v = list(values)
    if not v:
        return {"sum": 0, "mean": float("nan"), "median": float("nan"), "max": float("nan")}
    return {"sum": round(sum(v), 4), "mean": statistics.fmean(v), "median": statistics.median(v), "max": max(v)}


def summarize(rows: list[Mapping[str, Any]], *, record: Mapping[str, Any], task: Any = None,
              n_expected: int | None = None, run_wall_s: float | None = None) -> dict[str, Any]:
    """The summary of a run's rows (see the module docstring)."""
    rows = sorted(rows, key=lambda r: r.get("index", 0))
    names: list[str] = []
    for r in rows:
        names += [k for k in r["metrics"] if k not in names]
    metrics = {}
    for name in names:
        vals = [float(r["metrics"][name]) for r in rows if name in r["metrics"]]
        metrics[name] = summarize_values(vals)
    cfg = record.get("config", {})
    return {
        "task": record.get("task", cfg.get("task")), "engine": cfg.get("engine"), "backend": cfg.get("backend"),
        "corpus": cfg.get("corpus") or (f"index:{cfg['index']}" if cfg.get("index") else None),
        "n": len(rows), "n_expected": n_expected, "complete": n_expected is not None and len(rows) >= n_expected,
        "primary": getattr(task, "primary", None),
        "metrics": metrics,
        "published": {label: metrics[key] for label, key in PUBLISHED.items() if key in metrics},
        "metric_descriptions": {n: describe(n) for n in names},
        "totals": {
            "completion_tokens": _dist(r["completion_tokens"] for r in rows),
            "prompt_tokens": _dist(r["prompt_tokens"] for r in rows),
            "tool_calls": _dist(r["tool_calls"] for r in rows),
            "search_calls_per_question": _dist(r["search_calls"] for r in rows),
            "search_calls_histogram": dict(sorted(Counter(int(r["search_calls"]) for r in rows).items())),
            "wall_s_per_question": _dist(r["wall_s"] for r in rows),
            "unfinished": sum(bool(r.get("unfinished")) for r in rows),
            "run_wall_s": run_wall_s,
        },
        "config": cfg, "data_sha256": record.get("data_sha256"), "model": record.get("model"),
        "toolkit_version": record.get("toolkit_version"),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def write_summary(out: str | Path, summary: Mapping[str, Any]) -> Path:
    path = Path(out) / "summary.json"
    with atomic_open(path) as f:
        f.write(json.dumps(summary, indent=1, default=str))
    return path
