"""`agentic eval compare SPEC.yaml`: several policies against a base on the same tasks, with paired differences.

    compare(read_spec("runs/distill/compare.yaml"), limit=20)     # runs OUT/limit20/<policy>/<task>/, eval.md

A spec names the tasks (name -> data file), the engine and corpus every policy runs with, the `base` policy
and each policy's backend URI and engine settings (`--set`-style, nested or dotted; a policy may also name its
own `engine`):

    out: runs/distill/eval
    engine: search-o1
    corpus: per-question
    base: base
    tasks: {hotpotqa: ../shared/data/multihop/hotpotqa_dev_distractor_150.jsonl}
    policies:
      base: {backend: "llamacpp://default", settings: {worked_example: true, max_searches: 3}}
      sft: {backend: "llamacpp:///abs/sft/policy.gguf", settings: {rid: false, k: 2}}

Each (policy, task) is an ordinary `eval.runner.run_eval` run directory (resumable: a rerun continues), the
policy's model loaded once for all its tasks. `only` runs a subset; the table still includes every policy's
earlier results under the output folder. The table (`eval.md`, `eval.json`): EM, F1, cover-EM with 95% bootstrap
intervals, the paired difference to the base (or to the policy `--base NAME` names) per question (bootstrap), share boxed, share with >= 1 search,
searches, tokens and seconds per question; notes list runs that scored fewer questions than their file holds
and each policy's EM/F1 over all questions with the unscored ones counted as wrong.
Not covered: significance corrections across many policies.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentic_infer.config import read_config_file
from agentic_infer.errors import ConfigError
from agentic_infer.executors import ExecutorConfig
from agentic_infer.runner import iter_jsonl
from eval.runner import RunConfig, run_eval
from eval.stats import summarize_values
from eval.summary import read_results

SPEC_KEYS = ("out", "engine", "corpus", "index", "base", "tasks", "policies", "concurrency", "executor")
POLICY_KEYS = ("backend", "settings", "engine")


def read_spec(path: str | Path) -> dict[str, Any]:
    """A compare spec from YAML, checked (unknown keys, a base that is not a policy, missing tasks)."""
    spec = read_config_file(path)
    return check_spec(spec, where=str(path))


def check_spec(spec: Mapping[str, Any], *, where: str = "spec") -> dict[str, Any]:
    bad = sorted(set(spec) - set(SPEC_KEYS))
    if bad:
        raise ConfigError(f"{where}: unknown key(s) {bad}; a compare spec takes {list(SPEC_KEYS)}")
    for key in ("out", "tasks", "policies"):
        if not spec.get(key):
            raise ConfigError(f"{where}: needs {key!r} (see `agentic eval compare --help`)")
    for name, p in spec["policies"].items():
        if not isinstance(p, Mapping) or not p.get("backend"):
            raise ConfigError(f"{where}: policy {name!r} needs a backend URI, e.g. {{backend: llamacpp://default}}")
        extra = sorted(set(p) - set(POLICY_KEYS))
        if extra:
            raise ConfigError(f"{where}: policy {name!r} has unknown key(s) {extra}; a policy takes {list(POLICY_KEYS)}")
    base = spec.get("base", next(iter(spec["policies"])))
    if base not in spec["policies"]:
        raise ConfigError(f"{where}: base={base!r} is not one of the policies {list(spec['policies'])}")
    return {"engine": "search-o1", "corpus": None, "index": None, "concurrency": 1, "executor": {}, **spec, "base": base}


def run_config(spec: Mapping[str, Any], policy: str, task: str, *, limit: int | None) -> RunConfig:
    p = spec["policies"][policy]
    return RunConfig(task=task, data=str(spec["tasks"][task]), engine=p.get("engine", spec["engine"]),
                     backend=p["backend"], corpus=spec["corpus"], index=spec["index"], limit=limit,
                     concurrency=spec["concurrency"], settings=dict(p.get("settings") or {}),
                     executor=ExecutorConfig(**spec["executor"]), out=str(_root(spec, limit) / policy / task))


def _root(spec: Mapping[str, Any], limit: int | None) -> Path:
    return Path(spec["out"]) / (f"limit{limit}" if limit else "full")


def compare(spec: Mapping[str, Any], *, limit: int | None = None, only: tuple[str, ...] | None = None,
            base: str | None = None, echo: Callable[[str], None] = print, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) every policy in `only` (default all) on every task; write and return the table. `base`: pair
    against this policy instead of the spec's base (e.g. a retrained policy against the one it started from); that
    table goes to `eval-vs-<base>.md` / `.json`, beside the spec's own."""
    spec = check_spec(spec)
    if base is not None and base not in spec["policies"]:
        raise ConfigError(f"eval compare: base {base!r} is not one of the policies {list(spec['policies'])}")
    name = "eval" if base in (None, spec["base"]) else f"eval-vs-{base}"
    only = tuple(only or spec["policies"])
    bad = sorted(set(only) - set(spec["policies"]))
    if bad:
        raise ConfigError(f"eval compare: unknown policy {bad}; choose from {list(spec['policies'])}")
    runs: dict[str, dict[str, Path]] = {}
    for policy in spec["policies"]:
        configs = [run_config(spec, policy, task, limit=limit) for task in spec["tasks"]]  # validated up front
        if policy not in only:  # not run now: its earlier results (if any) still go into the table
            runs[policy] = {c.task: Path(c.out) for c in configs if (Path(c.out) / "results.jsonl").is_file()}
            continue
        from agentic_infer.backends import load_llm

        ex = configs[0].executor  # sharded runs load the model in each shard; one process loads it once here
        llm = load_llm(configs[0].backend) if not ex.sharded else None
        for cfg in configs:
            echo(f"[eval compare] {policy} {cfg.task} -> {cfg.out}")
            asyncio.run(run_eval(cfg, llm=llm, progress=progress))
            runs.setdefault(policy, {})[cfg.task] = Path(cfg.out)
        del llm
    recs = table(runs, base=base or spec["base"])
    root = _root(spec, limit)
    md = markdown(recs, limit, coverage(runs) + counted_as_wrong(runs))
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.md").write_text(md, encoding="utf-8")
    (root / f"{name}.json").write_text(json.dumps(recs, indent=2), encoding="utf-8")
    echo(md)
    echo(f"[eval compare] {root / f'{name}.md'}")
    return {"table": recs, "path": str(root / f"{name}.md")}


def _rows(run: Path) -> list[dict[str, Any]]:
    return read_results(run / "results.jsonl")


def _metric(row: Mapping[str, Any], name: str) -> float:
    return float(row["metrics"].get(name, 0.0))


def _boxed(row: Mapping[str, Any]) -> float:
    from agentic_infer.verify import extract_boxed

    return float(extract_boxed(row.get("output") or "") is not None)


def table(runs: Mapping[str, Mapping[str, Path]], *, base: str = "base") -> list[dict[str, Any]]:
    """One row per (policy, task) and per policy over all tasks, with paired differences to `base`."""
    loaded = {name: {t: _rows(p) for t, p in by_task.items()} for name, by_task in runs.items()}
    by_index = {t: {r.get("index"): r for r in rows} for t, rows in loaded.get(base, {}).items()}
    out = []
    for name, by_task in loaded.items():
        for task in [*by_task, "all"]:
            picked = [(t, r) for t, rows in by_task.items() if task in ("all", t) for r in rows]
            if not picked:
                continue
            rows = [r for _, r in picked]
            pairs = [(r, by_index[t][r.get("index")]) for t, r in picked if r.get("index") in by_index.get(t, {})]
            rec: dict[str, Any] = {"policy": name, "task": task, "n": len(rows)}
            for m in ("em", "f1", "cover_em"):
                rec[m] = summarize_values([_metric(r, m) for r in rows])
                if name != base and pairs:  # without base results there is nothing to pair with
                    rec[f"{m}_diff"] = summarize_values([_metric(r, m) - _metric(b, m) for r, b in pairs])
            rec["boxed"] = sum(_boxed(r) for r in rows) / len(rows)
            rec["searched"] = sum(r.get("search_calls", 0) > 0 for r in rows) / len(rows)
            rec["searches_per_q"] = sum(r.get("search_calls", 0) for r in rows) / len(rows)
            rec["tokens_per_q"] = sum(r.get("prompt_tokens", 0) + r.get("completion_tokens", 0) for r in rows) / len(rows)
            rec["seconds_per_q"] = sum(r.get("wall_s", 0.0) for r in rows) / len(rows)
            out.append(rec)
    return out


def _ci(d: Mapping[str, float]) -> str:
    return f"{d['mean']:.3f} [{d['ci95_low']:.3f}, {d['ci95_high']:.3f}]"


def _summary(run: Path) -> dict[str, Any]:
    p = run / "summary.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}


def coverage(runs: Mapping[str, Mapping[str, Path]]) -> list[str]:
    """One line per run that scored fewer questions than its file holds, with the recorded reasons."""
    lines = []
    for name, by_task in runs.items():
        for task, run in by_task.items():
            d = _summary(run)
            if d.get("n", 0) < d.get("n_expected", 0):
                errors = run / "rollouts.jsonl.errors.jsonl"
                last = {row.get("id"): re.sub(r"'[^']*'", "'...'", row["error"])  # each item once, however often retried
                        for _, row in (iter_jsonl(errors, "error records") if errors.is_file() else ())}
                why = Counter(last.values())
                lines.append(f"- {name} / {task}: {d['n']} of {d['n_expected']} scored; failed: "
                             + "; ".join(f"{n} x {msg}" for msg, n in why.most_common()))
    return lines


def counted_as_wrong(runs: Mapping[str, Mapping[str, Path]]) -> list[str]:
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
    head = (f"# Policy comparison ({'first ' + str(limit) + ' questions per task file: a subset' if limit else 'full task files'})"
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
