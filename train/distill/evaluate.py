"""`agentic train distill-eval` (`make distill-eval`): base vs distilled policy through `agentic eval run`.

    run_distill_eval(DistillSettings(), limit=None)   # runs/distill/eval/<policy>/<task>/, eval.md

Search-o1 over each question's own paragraphs (`--corpus per-question`, BM25) on the dev files (HotpotQA 150,
MuSiQue 150, 2Wiki 150). The base gets the demo's prompting help (worked example, a forced first search tag,
Reason-in-Documents capped at 128 tokens as in `make demo`: its best setting); each distilled policy
(`runs/distill/policy.gguf`, and the SFT-only one, `sft/model/policy.gguf`) gets the plain prompt with the
settings its demonstrations were built with (`agentic_infer.engines.search_o1.plain_options`). Every
generation is capped at 256 tokens, and llama.cpp generates on every core (`n_threads`, at most 8; its own
default is half the cores, one here: two threads ran the base setting 17% faster on these 2 cores with the same
text, `bench/prompt_states.py --a n_threads=1 --b n_threads=2`). `only=("base", "sft")` runs only those; the table still includes every
policy's earlier results found under the run folder. Each run is `agentic eval run`'s own resumable run
directory (with its progress bar and summary), so a rerun continues. The table: EM, F1, cover-EM with 95% bootstrap intervals, the paired
difference to the base (per question, bootstrap), share boxed, share with >= 1 search, searches per question,
tokens and seconds per question.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from agentic_infer.engines.search_o1 import BASE_HELP, plain_options
from agentic_infer.errors import ConfigError
from train.distill.recipe import DistillSettings

DEV = (("hotpotqa", "hotpotqa_dev_distractor_150.jsonl"), ("musique", "musique_ans_dev_150.jsonl"),
       ("2wiki", "2wiki_dev_150.jsonl"))
BASE_OPTS = (*(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in BASE_HELP.items()),
             'rid_sampling={"max_tokens": 128, "temperature": 0.7, "top_p": 0.8, "top_k": 20, '
             '"repetition_penalty": 1.05}')  # the demo's help as `agentic eval run --opt` values
POLICIES = ("base", "sft", "distilled")
THREADS = min(os.cpu_count() or 1, 8)


def eval_command(task: str, data: Path, backend: str, out: Path, opts: list[str], *, limit: int | None,
                 max_searches: int, top_k: int, max_tokens: int = 256) -> list[str]:
    cmd = [sys.executable, "-m", "agentic_infer", "eval", "run", "--task", task, "--data", str(data), "--engine",
           "search-o1", "--corpus", "per-question", "--backend", backend, "--out", str(out), "--max-searches",
           str(max_searches), "--top-k", str(top_k), "--max-tokens", str(max_tokens)]
    cmd += ["--limit", str(limit)] if limit else []
    for o in opts:
        cmd += ["--opt", o]
    return cmd


def policies(s: DistillSettings) -> dict[str, tuple[str, list[str], int]]:
    """name -> (backend URI, engine options, top-k)."""
    plain = plain_options(**s.engine_options)
    plain_opts = [f"rid={str(plain['rid']).lower()}", f"passage_chars={plain['passage_chars']}"]
    threads = f"?n_threads={THREADS}"
    out = {"base": (f"llamacpp://default{threads}", list(BASE_OPTS), 3)}
    sft = Path(s.out) / "sft" / "model" / "policy.gguf"
    if sft.is_file():
        out["sft"] = (f"llamacpp://{sft.resolve()}{threads}", plain_opts, s.top_k)
    final = Path(s.out) / "policy.gguf"
    if final.is_file():
        out["distilled"] = (f"llamacpp://{final.resolve()}{threads}", plain_opts, s.top_k)
    return out


def _rows(run: Path) -> list[dict[str, Any]]:
    p = run / "results.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()] if p.is_file() else []


def _metric(row: dict[str, Any], name: str) -> float:
    return float(row["metrics"].get(name, 0.0))


def _boxed(row: dict[str, Any]) -> float:
    from agentic_infer.verify import extract_boxed

    text = row.get("output") or row.get("text") or row.get("completion") or ""
    if "boxed" in row:
        return float(bool(row["boxed"]))
    return float(extract_boxed(text) is not None or bool(row.get("answer_boxed")))


def table(runs: dict[str, dict[str, Path]]) -> list[dict[str, Any]]:
    """One row per (policy, task) and per policy over all tasks, with paired differences to the base."""
    from eval.stats import summarize_values

    loaded = {name: {t: _rows(p) for t, p in by_task.items()} for name, by_task in runs.items()}
    base = {t: {r.get("index"): r for r in rows} for t, rows in loaded.get("base", {}).items()}
    out = []
    for name, by_task in loaded.items():
        for task in [*by_task, "all"]:
            picked = [(t, r) for t, rows in by_task.items() if task in ("all", t) for r in rows]
            if not picked:
                continue
            rows = [r for _, r in picked]
            pairs = [(r, base[t][r.get("index")]) for t, r in picked if r.get("index") in base.get(t, {})]
            rec: dict[str, Any] = {"policy": name, "task": task, "n": len(rows)}
            for m in ("em", "f1", "cover_em"):
                rec[m] = summarize_values([_metric(r, m) for r in rows])
                if name != "base":
                    rec[f"{m}_diff"] = summarize_values([_metric(r, m) - _metric(b, m) for r, b in pairs])
            rec["boxed"] = sum(_boxed(r) for r in rows) / len(rows)
            rec["searched"] = sum(r.get("search_calls", 0) > 0 for r in rows) / len(rows)
            rec["searches_per_q"] = sum(r.get("search_calls", 0) for r in rows) / len(rows)
            rec["tokens_per_q"] = sum(r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in rows) / len(rows)
            rec["seconds_per_q"] = sum(r.get("wall_s", 0.0) for r in rows) / len(rows)
            out.append(rec)
    return out


def _ci(d: dict[str, float]) -> str:
    return f"{d['mean']:.3f} [{d['ci95_low']:.3f}, {d['ci95_high']:.3f}]"


def _summary(run: Path) -> dict[str, Any]:
    p = run / "summary.json"
    return json.loads(p.read_text()) if p.is_file() else {}


def coverage(runs: dict[str, dict[str, Path]]) -> list[str]:
    """One line per run that scored fewer questions than its file holds, with the recorded reasons."""
    lines = []
    for name, by_task in runs.items():
        for task, run in by_task.items():
            d = _summary(run)
            if d.get("n", 0) < d.get("n_expected", 0):
                errors = run / "rollouts.jsonl.errors.jsonl"
                why = Counter(re.sub(r"'[^']*'", "'...'", json.loads(x)["error"])
                              for x in (errors.read_text().splitlines() if errors.is_file() else []) if x.strip())
                lines.append(f"- {name} / {task}: {d['n']} of {d['n_expected']} scored; failed: "
                             + "; ".join(f"{n} x {msg}" for msg, n in why.most_common()))
    return lines


def counted_as_wrong(runs: dict[str, dict[str, Path]]) -> list[str]:
    """Per policy with unscored questions: EM and F1 over every question of its files, the unscored ones as 0."""
    lines = []
    for name, by_task in runs.items():
        expected = scored = 0
        em = f1 = 0.0
        for run in by_task.values():
            rows = _rows(run)
            expected += _summary(run).get("n_expected", len(rows))
            scored += len(rows)
            em += sum(_metric(r, "em") for r in rows)
            f1 += sum(_metric(r, "f1") for r in rows)
        if expected > scored:
            lines.append(f"- {name}, all {expected} questions with the {expected - scored} unscored counted as wrong: "
                         f"EM {em / expected:.3f} ({em:.0f}/{expected}), F1 {f1 / expected:.3f}")
    return lines


def markdown(recs: list[dict[str, Any]], limit: int | None, notes: list[str] = ()) -> str:
    head = (f"# Distill eval ({'first ' + str(limit) + ' questions per dev file: a subset' if limit else 'full dev files'})"
            "\n\n| policy | task | n | EM | F1 | cover-EM | ΔEM vs base | ΔF1 vs base | boxed | >=1 search | searches/q | "
            "tokens/q | s/q |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in recs:
        d_em = _ci(r["em_diff"]) if "em_diff" in r else ""
        d_f1 = _ci(r["f1_diff"]) if "f1_diff" in r else ""
        lines.append(f"| {r['policy']} | {r['task']} | {r['n']} | {_ci(r['em'])} | {_ci(r['f1'])} | {_ci(r['cover_em'])} "
                     f"| {d_em} | {d_f1} | {r['boxed']:.2f} | {r['searched']:.2f} | {r['searches_per_q']:.2f} | "
                     f"{r['tokens_per_q']:.0f} | {r['seconds_per_q']:.1f} |")
    return "\n".join([*lines, "", *notes]) + "\n"


def run_distill_eval(s: DistillSettings, *, limit: int | None = None, echo=print, dry_run: bool = False,
                     only: tuple[str, ...] = POLICIES) -> dict[str, Any]:
    bad = sorted(set(only) - set(POLICIES))
    if bad:
        raise ConfigError(f"distill-eval: unknown policy {bad}; choose from {list(POLICIES)}")
    root = Path(s.out) / "eval" / (f"limit{limit}" if limit else "full")
    runs: dict[str, dict[str, Path]] = {}
    for name, (backend, opts, top_k) in policies(s).items():
        for task, fname in DEV:
            run = root / name / task
            if name not in only:  # not run now: its earlier results (if any) still go into the table
                if (run / "results.jsonl").is_file():
                    runs.setdefault(name, {})[task] = run
                continue
            runs.setdefault(name, {})[task] = run
            cmd = eval_command(task, Path(s.data_dir) / fname, backend, run, opts, limit=limit,
                               max_searches=s.max_searches if name != "base" else 3, top_k=top_k)
            echo(f"[distill-eval] {name} {task}: {' '.join(cmd[2:])}")
            if not dry_run:
                subprocess.run(cmd, check=True)
    recs = table(runs)
    md = markdown(recs, limit, coverage(runs) + counted_as_wrong(runs))
    (root / "eval.md").parent.mkdir(parents=True, exist_ok=True)
    (root / "eval.md").write_text(md, encoding="utf-8")
    (root / "eval.json").write_text(json.dumps(recs, indent=2), encoding="utf-8")
    echo(md)
    echo(f"[distill-eval] {root / 'eval.md'}")
    return {"table": recs, "path": str(root / "eval.md")}
