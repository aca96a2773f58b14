"""PNG plots for eval reports (matplotlib, Agg backend): accuracy vs tokens, search calls, DeepConf budget.

Each function takes run records `{"label", "summary", "rows"}` and writes one PNG, returning its
path, or None when no run has the data the plot needs. Not covered: interactive plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agentic_infer.verify import score  # noqa: E402
from agentic_infer.verify.registry import METRICS  # noqa: E402
from eval.stats import majority  # noqa: E402


def accuracy_vs_tokens(runs: Sequence[dict[str, Any]], path: Path) -> Path | None:
    pts = [r for r in runs if r["summary"].get("primary") in r["summary"]["metrics"]]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for r in pts:
        s = r["summary"]
        m = s["metrics"][s["primary"]]
        x = s["totals"]["completion_tokens"]["mean"]
        ax.errorbar([x], [m["mean"]], yerr=[[m["mean"] - m["ci95_low"]], [m["ci95_high"] - m["mean"]]], fmt="o",
                    capsize=4, label=f"{r['label']} ({s['primary']})")
    ax.set_xlabel("generated tokens per question (mean)")
    ax.set_ylabel("accuracy (primary metric, 95% CI)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title("Accuracy vs tokens")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def search_calls(runs: Sequence[dict[str, Any]], path: Path) -> Path | None:
    runs = [r for r in runs if any(row.get("search_calls") for row in r["rows"])]
    if not runs:
        return None
    top = max(int(row["search_calls"]) for r in runs for row in r["rows"])
    xs = list(range(top + 1))
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for i, r in enumerate(runs):
        n = len(r["rows"])
        counts = [sum(int(row["search_calls"]) == x for row in r["rows"]) / n for x in xs]
        ax.bar([x + i * width - 0.4 + width / 2 for x in xs], counts, width=width, label=r["label"])
    ax.set_xlabel("search calls per question")
    ax.set_ylabel("share of questions")
    ax.set_xticks(xs)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    ax.set_title("Search-call distribution")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def budget_curve(run: dict[str, Any]) -> list[tuple[int, float]]:
    """Majority-vote accuracy over the first k sampled answers, for k = 1..K (from `predictions`); [] when the
    primary metric is no rule-based metric."""
    rows = [row for row in run["rows"] if row.get("predictions")]
    if not rows:
        return []
    primary = run["summary"].get("primary") or "em"
    if primary not in METRICS:  # no rule to score a voted answer with (e.g. an env task's engine verdict)
        return []
    kmax = min(len(row["predictions"]) for row in rows)
    curve = []
    for k in range(1, kmax + 1):
        acc = 0.0
        for row in rows:
            maj = majority(row["predictions"][:k])
            ex = {"id": row["id"], "question": row.get("question", ""), "gold": row["gold"]}
            acc += score(primary, maj, row["gold"], text=maj or "", example=ex) if maj else 0.0
        curve.append((k, acc / len(rows)))
    return curve


def deepconf_budget(runs: Sequence[dict[str, Any]], path: Path) -> Path | None:
    curves = [(r, budget_curve(r)) for r in runs if r["summary"].get("engine") == "deepconf"
              or any(row.get("predictions") for row in r["rows"])]
    curves = [(r, c) for r, c in curves if len(c) > 1]
    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for r, c in curves:
        ax.plot([k for k, _ in c], [a for _, a in c], marker="o", label=f"{r['label']} majority@k")
        s = r["summary"]
        if s.get("engine") == "deepconf" and s.get("primary") in s["metrics"]:
            ax.axhline(s["metrics"][s["primary"]]["mean"], ls="--", lw=1, label=f"{r['label']} DeepConf vote")
    ax.set_xlabel("traces (budget)")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Accuracy vs sampling budget")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
