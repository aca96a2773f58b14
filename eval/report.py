"""Reports over eval runs: a comparison table with 95% intervals, per-question diffs, PNG plots.

    write_report(["runs/hq-direct", "runs/hq-so1"], out="report.html")
    # -> report.html, report.md, report_files/{accuracy_vs_tokens,search_calls,budget}.png
    # CLI: agentic eval report runs/hq-direct runs/hq-so1 --out report.html

Each run directory needs `results.jsonl` (`summary.json` is recomputed from it with `run.json`
when missing). Diffs compare each task's first run with every later run of that task on the items both
finished, by the primary metric (score changes first, then items whose prediction changed). Not covered: significance tests; runs of different tasks share the
table but are not diffed.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from eval import plots
from eval.summary import read_results, summarize

TABLE_METRICS = ("em", "f1", "cover_em", "judge_acc", "search_o1_acc_backoff", "math_equal", "game24_valid",
                 "bfcl_ast", "success", "env_reward")
MAX_DIFF_ROWS = 40


def load_run(path: str | Path) -> dict[str, Any]:
    d = Path(path)
    rows = read_results(d / "results.jsonl")
    if not rows:
        raise ConfigError(f"{d}: no results.jsonl rows; is this an `agentic eval run --out` directory?")
    if (d / "summary.json").exists():
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    else:
        record = json.loads((d / "run.json").read_text(encoding="utf-8")) if (d / "run.json").exists() else {}
        summary = summarize(rows, record=record)
    return {"label": d.name, "dir": str(d), "summary": summary, "rows": sorted(rows, key=lambda r: r.get("index", 0))}


def _fmt(m: dict[str, float] | None) -> str:
    if not m:
        return "-"
    return f"{m['mean']:.3f} [{m['ci95_low']:.2f}, {m['ci95_high']:.2f}]"


def comparison(runs: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    extra = [k for r in runs for k in r["summary"]["metrics"] if k.startswith(("pass@", "pass^", "maj@"))]
    metrics = [m for m in TABLE_METRICS if any(m in r["summary"]["metrics"] for r in runs)]
    metrics += list(dict.fromkeys(extra))
    header = ["run", "task", "engine", "corpus", "n"] + [f"{m} (95% CI)" for m in metrics] + [
        "tokens/q", "search calls/q", "s/q"]
    body = []
    for r in runs:
        s = r["summary"]
        t = s["totals"]
        body.append([r["label"], str(s.get("task")), str(s.get("engine")), str(s.get("corpus") or "-"),
                     f"{s['n']}" + ("" if s.get("complete", True) else f"/{s.get('n_expected')}")]
                    + [_fmt(s["metrics"].get(m)) for m in metrics]
                    + [f"{t['completion_tokens']['mean']:.1f}", f"{t['search_calls_per_question']['mean']:.2f}",
                       f"{t['wall_s_per_question']['mean']:.2f}"])
    return header, body


def diffs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    metric = a["summary"].get("primary") or "em"
    rb = {r["id"]: r for r in b["rows"]}
    both = [(r, rb[r["id"]]) for r in a["rows"] if r["id"] in rb]
    changed = [(x, y) for x, y in both if x["metrics"].get(metric) != y["metrics"].get(metric)]
    wins = sum(y["metrics"].get(metric, 0) > x["metrics"].get(metric, 0) for x, y in changed)
    # score changes first, then same score but a different prediction
    other = [(x, y) for x, y in both if (x, y) not in changed and x.get("prediction") != y.get("prediction")]

    def row(x: dict[str, Any], y: dict[str, Any]) -> dict[str, Any]:
        sa, sb = x["metrics"].get(metric), y["metrics"].get(metric)
        change = "same score" if sa == sb else (f"{b['label']} better" if (sb or 0) > (sa or 0) else f"{a['label']} better")
        return {"id": x["id"], "question": x.get("question", ""), "gold": " | ".join(map(str, x["gold"]))[:120],
                "a": x.get("prediction"), "b": y.get("prediction"), "score_a": sa, "score_b": sb, "change": change}

    return {"a": a["label"], "b": b["label"], "metric": metric, "shared": len(both), "b_better": wins,
            "a_better": len(changed) - wins, "same": len(both) - len(changed),
            "rows": [row(x, y) for x, y in changed + other]}


def _md_table(header: list[str], body: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(esc, row)) + " |" for row in body]
    return "\n".join(lines)


def _cell(c: Any) -> str:
    text = html.escape(str(c))
    if " [" in text and text.endswith("]"):  # "mean [lo, hi]": the interval on its own small line
        mean, ci = text.split(" [", 1)
        return f"<b>{mean}</b><br><small>[{ci}</small>"
    return text


def _html_table(header: list[str], body: list[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(c).replace(' (95% CI)', '')}</th>" for c in header)
    rows = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in body)
    return f"<div class=wrap><table><thead><tr>{h}</tr></thead><tbody>{rows}</tbody></table></div>"


CSS = """body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1500px}
table{border-collapse:collapse;margin:8px 0 20px;font-size:13px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}tr:nth-child(even){background:#fafafa}h1{font-size:22px}h2{font-size:18px;margin-top:28px}
small{color:#666}.wrap{overflow-x:auto}td b{font-weight:600}
img{max-width:560px;border:1px solid #ddd;margin:6px}.meta{color:#666;font-size:12px}"""


def write_report(run_dirs: Sequence[str | Path], *, out: str | Path = "report.html") -> list[Path]:
    """Write `out` (HTML), the same report as Markdown next to it, and its PNG plots; returns the paths."""
    if not run_dirs:
        raise ConfigError("give at least one run directory")
    runs = [load_run(d) for d in run_dirs]
    labels = [r["label"] for r in runs]
    for i, r in enumerate(runs):  # make labels unique
        if labels.count(r["label"]) > 1:
            r["label"] = f"{r['label']}#{i}"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    files = out.parent / f"{out.stem}_files"
    files.mkdir(exist_ok=True)
    pngs = [p for p in (plots.accuracy_vs_tokens(runs, files / "accuracy_vs_tokens.png"),
                        plots.search_calls(runs, files / "search_calls.png"),
                        plots.deepconf_budget(runs, files / "budget.png")) if p is not None]
    header, body = comparison(runs)
    firsts: dict[Any, dict[str, Any]] = {}  # each task's first run is its baseline
    pairs = []
    for r in runs:
        t = r["summary"].get("task")
        if t in firsts:
            pairs.append(diffs(firsts[t], r))
        else:
            firsts[t] = r
    published = sorted({k for r in runs for k in r["summary"].get("published", {})})
    pub_header = ["run"] + published
    pub_body = [[r["label"]] + [_fmt(r["summary"].get("published", {}).get(k)) for k in published] for r in runs]
    prov = [[r["label"], "{} ({})".format(r["summary"].get("model", {}).get("uri"), r["summary"].get("model", {}).get("class")), str(r["summary"].get("data_sha256", ""))[:16],
             str(r["summary"].get("toolkit_version")), str(r["summary"].get("created"))] for r in runs]
    prov_header = ["run", "backend", "data sha256", "toolkit", "created"]

    md = ["# Eval report", "", _md_table(header, body), ""]
    hp = [f"<h1>Eval report</h1><p class=meta>{len(runs)} run(s): {html.escape(', '.join(r['dir'] for r in runs))}</p>",
          "<h2>Comparison</h2><p class=meta>mean, and its 95% bootstrap interval below; tokens, search calls and seconds per question are means</p>", _html_table(header, body)]
    if published:
        md += ["## Published systems' metrics", "", _md_table(pub_header, pub_body), ""]
        hp += ["<h2>Published systems' metrics</h2>", _html_table(pub_header, pub_body)]
    if pngs:
        md += ["## Plots", ""] + [f"![{p.stem}]({files.name}/{p.name})" for p in pngs] + [""]
        hp += ["<h2>Plots</h2>"] + [f'<img src="{files.name}/{p.name}" alt="{p.stem}">' for p in pngs]
    for d in pairs:
        title = (f"Per-question diff: {d['a']} vs {d['b']} ({d['metric']}; {d['shared']} shared: "
                 f"{d['b']} better on {d['b_better']}, {d['a']} better on {d['a_better']}, same on {d['same']})")
        dh = ["id", "question", "gold", d["a"], d["b"], "score a", "score b", "change"]
        db = [[r["id"], r["question"][:140], r["gold"], str(r["a"])[:80], str(r["b"])[:80], r["score_a"], r["score_b"],
               r["change"]]
              for r in d["rows"][:MAX_DIFF_ROWS]]
        more = len(d["rows"]) - len(db)
        md += [f"## {title}", "", _md_table(dh, db) if db else "(no differences)", ""]
        hp += [f"<h2>{html.escape(title)}</h2>", _html_table(dh, db) if db else "<p>(no differences)</p>"]
        if more > 0:
            md.append(f"... {more} more")
            hp.append(f"<p>... {more} more</p>")
    md += ["## Provenance", "", _md_table(prov_header, prov), ""]
    hp += ["<h2>Provenance</h2>", _html_table(prov_header, prov)]
    out.write_text(f"<!doctype html><html><head><meta charset=utf-8><title>Eval report</title><style>{CSS}</style>"
                   f"</head><body>{''.join(hp)}</body></html>", encoding="utf-8")
    md_path = out.with_suffix(".md")
    md_path.write_text("\n".join(md), encoding="utf-8")
    return [out, md_path, *pngs]
