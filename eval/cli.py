"""`agentic eval tasks | run | report | judge-check`: benchmark tasks, the eval runner, run reports, judge checks.

    agentic eval tasks
    agentic eval run --task hotpotqa --data ../shared/data/multihop/hotpotqa_dev_distractor_150.jsonl \
        --engine search-o1 --corpus per-question --limit 10 --out runs/hq-so1
    agentic eval report runs/hq-direct runs/hq-so1 --out report.html
    agentic eval judge-check --task hotpotqa --data PATH --judge URI --judge-verdict yes-no --pairs 100

    agentic eval compare runs/distill/compare.yaml --limit 20          # policies vs a base, paired differences
    agentic eval run --task retail --data ../shared/data/tools/tau_retail_db/retail_tasks_dev.jsonl --samples 4 \
        --out runs/retail                                            # an env task: engine env, pass^1..4

The library functions are `agentic_infer.tasks.list_tasks`, `eval.runner.run_eval`, `eval.compare.compare` and
`eval.report.write_report`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from agentic_infer.cli.app import app
from agentic_infer.cli.settings import RemovedFlag, Set, ShowConfig, removed_flags, show_settings
from agentic_infer.errors import ConfigError

eval_app = typer.Typer(help="Benchmark tasks, the eval runner and reports.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("tasks")
def tasks_cmd(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """List the benchmark tasks, their metrics and the files they expect."""
    from agentic_infer.engines.registry import ENGINES
    from agentic_infer.tasks import list_tasks

    tasks = list_tasks()
    if as_json:
        typer.echo(json.dumps([{"name": t.name, "family": t.family, "description": t.description,
                                "format": t.data_format, "files": list(t.default_files), "metrics": list(t.metrics),
                                "primary": t.primary, "engines": list(t.engines),
                                "corpus": [c for c, ok in (("per-question", t.question_corpus),
                                                           ("pooled", t.pooled_corpus)) if ok]} for t in tasks], indent=1))
        return
    table = Table(title="agentic eval tasks", show_lines=True)
    for col in ("task", "family", "expects", "metrics (primary first)", "corpus"):
        table.add_column(col, overflow="fold")
    for t in tasks:
        files = "\n".join(f"../shared/data/{f}" for f in t.default_files)
        corpus = ", ".join(c for c, ok in (("per-question", t.question_corpus), ("pooled", t.pooled_corpus)) if ok)
        metrics = [t.primary] + [m for m in t.metrics if m != t.primary]
        table.add_row(t.name, t.family, t.data_format + (f"\n{files}" if files else ""), ", ".join(metrics), corpus or "-")
    Console().print(table)
    Console().print(f"engines: {', '.join(ENGINES)}")


@eval_app.command("run")
def run_cmd(
    ctx: typer.Context,
    task: Annotated[Optional[str], typer.Option("--task", help="Task name (see `agentic eval tasks`).")] = None,  # noqa: UP007
    data: Annotated[Optional[Path], typer.Option("--data", help="The benchmark file, in the task's published format.")] = None,  # noqa: UP007
    engine: Annotated[Optional[str], typer.Option("--engine", help="direct|cot|search-o1|tir|deepconf|lats|rap|env (default: the task's first; env tasks: env)")] = None,  # noqa: UP007
    backend: Annotated[str, typer.Option("--backend", help="Backend URI.")] = "llamacpp://default",
    index: Annotated[Optional[Path], typer.Option("--index", help="A built search index directory.")] = None,
    corpus: Annotated[Optional[str], typer.Option("--corpus", help="per-question | pooled | wiki-vital")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N examples.")] = None,
    samples: Annotated[int, typer.Option("--samples", help="Samples per question (pass@k, maj@k; deepconf budget).")] = 1,
    judge: Annotated[Optional[str], typer.Option("--judge", help="Backend URI of an LLM judge (judge_acc); added to a finished run's rows too.")] = None,
    judge_verdict: Annotated[str, typer.Option("--judge-verdict", help="json (a JSON verdict) | yes-no (P(Yes) from one token, small judges).")] = "json",
    backoff: Annotated[Optional[Path], typer.Option("--backoff", help="DIR of a direct run: Search-o1 answer backoff.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Run directory (rollouts.jsonl, results.jsonl, summary.json).")] = Path("runs/eval"),
    concurrency: Annotated[int, typer.Option("--concurrency", help="Questions in flight.")] = 1,
    executor: Annotated[Optional[str], typer.Option("--executor", help="Where the items run: local | ray | slurm (shards merged into DIR; Ray address, Slurm partition: executor: in --config).")] = None,  # noqa: UP007
    tasks: Annotated[Optional[int], typer.Option("--tasks", help="Shards of the items (one executor task each).")] = None,  # noqa: UP007
    workers: Annotated[Optional[int], typer.Option("--workers", help="Shards run at once.")] = None,  # noqa: UP007
    set_: Set = None,
    show_config: ShowConfig = False,
    max_tokens: RemovedFlag("--max-tokens", "--set sampling.max_tokens=VALUE") = None,
    temperature: RemovedFlag("--temperature", "--set sampling.temperature=VALUE") = None,
    seed: RemovedFlag("--seed", "--set sampling.seed=VALUE") = None,
    max_searches: RemovedFlag("--max-searches", "--set max_searches=VALUE") = None,
    top_k: RemovedFlag("--top-k", "--set k=VALUE") = None,
    opt: RemovedFlag("--opt", "--set KEY=VALUE", multiple=True) = None,
    fields: Annotated[Optional[str], typer.Option("--fields", help="Renamed columns FIELD=COLUMN,... (e.g. answer=true_answer).")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", help="YAML file of RunConfig settings (the engine's under settings:); flags given on the command line override it.")] = None,  # noqa: UP007
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
) -> None:
    """Run one engine on one task; resumable (rerun the same command to continue)."""
    from agentic_infer.config import build_config, merge_settings, parse_overrides, read_config_file
    from agentic_infer.engines.registry import engine_config
    from agentic_infer.tasks import get_task
    from agentic_infer.tasks.base import parse_fields
    from eval.runner import RunConfig, run_eval

    removed_flags({"--max-tokens": (max_tokens, "--set sampling.max_tokens=VALUE"),
                   "--temperature": (temperature, "--set sampling.temperature=VALUE"),
                   "--seed": (seed, "--set sampling.seed=VALUE"), "--max-searches": (max_searches, "--set max_searches=VALUE"),
                   "--top-k": (top_k, "--set k=VALUE"), "--opt": (opt, "--set KEY=VALUE")})
    given = {k for k in ctx.params if getattr(ctx.get_parameter_source(k), "name", None) == "COMMANDLINE"}
    flags = {"task": task, "data": str(data) if data else None, "engine": engine, "out": str(out),
             "backend": backend, "index": str(index) if index else None, "corpus": corpus, "limit": limit,
             "samples": samples, "judge": judge, "judge_verdict": judge_verdict,
             "backoff": str(backoff) if backoff else None, "concurrency": concurrency,
             "settings": parse_overrides(set_ or []), "fields": parse_fields(fields),
             "executor": {k: v for k, v in (("kind", executor), ("tasks", tasks), ("workers", workers)) if v is not None}}
    settings = read_config_file(config) if config is not None else {}
    for k, v in flags.items():  # the file's settings, then the flags given on the command line
        if k in ("settings", "fields", "executor"):
            settings[k] = merge_settings(settings.get(k) or {}, v)
        elif k in given or k not in settings:
            settings[k] = v
    if show_config and settings.get("task") and get_task(settings["task"]).family == "env":  # on the task's env
        show_settings(build_config(RunConfig, overrides={**settings, "data": settings.get("data") or ""}, source="eval run").engine_config())
    if show_config:
        show_settings(engine_config(settings.get("engine") or "direct", settings.get("settings") or {},
                                    samples=settings.get("samples") or 1))
    if not settings.get("task") or not settings.get("data"):
        raise ConfigError("give --task NAME and --data FILE (or task: and data: in --config FILE.yaml)")
    cfg = build_config(RunConfig, overrides=settings, source=f"--config {config}" if config else "eval run")
    summary = asyncio.run(run_eval(cfg, progress=not quiet))
    console = Console()
    table = Table(title=f"{summary['task']} / {summary['engine']}  (n={summary['n']}/{summary['n_expected']})")
    for col in ("metric", "mean", "95% CI"):
        table.add_column(col)
    for name, m in summary["metrics"].items():
        table.add_row(name, f"{m['mean']:.3f}", f"[{m['ci95_low']:.3f}, {m['ci95_high']:.3f}]")
    console.print(table)
    t = summary["totals"]
    console.print(f"tokens/question {t['completion_tokens']['mean']:.1f}  tool calls/question "
                  f"{t['search_calls_per_question']['mean']:.2f}  s/question {t['wall_s_per_question']['mean']:.2f}  "
                  f"-> {out}/summary.json")


@eval_app.command("compare")
def compare_cmd(
    spec: Annotated[Path, typer.Argument(help="YAML: out, engine, corpus, base, tasks {name: file}, policies {name: {backend, settings}}.")],
    limit: Annotated[Optional[int], typer.Option("--limit", help="Only the first N questions per task file.")] = None,  # noqa: UP007
    policy: Annotated[Optional[list[str]], typer.Option("--policy", help="Only this policy (repeatable; default all); the table keeps earlier results of the others.")] = None,  # noqa: UP007
    base: Annotated[Optional[str], typer.Option("--base", help="Pair against this policy instead of the spec's base (table: eval-vs-NAME.md).")] = None,  # noqa: UP007
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars.")] = False,
    executor: Annotated[Optional[str], typer.Option("--executor", help="Where each run's items go: local | ray | slurm (the spec's executor: overridden).")] = None,  # noqa: UP007
    tasks: Annotated[Optional[int], typer.Option("--tasks", help="Shards per run.")] = None,  # noqa: UP007
    workers: Annotated[Optional[int], typer.Option("--workers", help="Shards at once.")] = None,  # noqa: UP007
) -> None:
    """Several policies against a base on the same tasks, with paired differences (eval.compare); resumable."""
    from eval.compare import compare, read_spec

    s = read_spec(spec)
    given = {k: v for k, v in (("kind", executor), ("tasks", tasks), ("workers", workers)) if v is not None}
    if given:
        s = {**s, "executor": {**s["executor"], **given}}
    compare(s, limit=limit, only=tuple(policy) if policy else None, base=base, echo=typer.echo, progress=not quiet)


@eval_app.command("report")
def report_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (each with results.jsonl).")],
    out: Annotated[Path, typer.Option("--out", help="HTML report path (a .md is written next to it).")] = Path("report.html"),
) -> None:
    """Compare runs: table with intervals, per-question diffs, plots (HTML + Markdown + PNGs)."""
    from eval.report import write_report

    paths = write_report(runs, out=out)
    for p in paths:
        typer.echo(str(p))


@eval_app.command("judge-check")
def judge_check_cmd(
    task: Annotated[str, typer.Option("--task", help="Task name (its gold answers make the pairs).")],
    data: Annotated[Path, typer.Option("--data", help="The benchmark file, in the task's published format.")],
    judge: Annotated[str, typer.Option("--judge", help="Backend URI of the LLM judge to check.")],
    judge_verdict: Annotated[str, typer.Option("--judge-verdict", help="json | yes-no")] = "json",
    pairs: Annotated[int, typer.Option("--pairs", help="Labelled pairs, half equivalent.")] = 100,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the figures and every verdict as JSON.")] = None,
) -> None:
    """Check a judge on labelled pairs from gold answers before trusting its judge_acc (eval.judge_agreement)."""
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.judge import make_judge
    from agentic_infer.tasks import get_task
    from agentic_infer.verify import MetricJudge
    from eval.judge_agreement import judge_agreement, labelled_pairs

    labelled = labelled_pairs(get_task(task).load(data), n=pairs, seed=seed)
    judges = {f"{judge} ({judge_verdict})": make_judge(task, load_llm(judge), verdict=judge_verdict),
              "exact_match (rule)": MetricJudge("em"), "cover_em (rule)": MetricJudge("cover_em")}
    reports = {name: asyncio.run(judge_agreement(j, labelled)) for name, j in judges.items()}
    table = Table(title=f"judge agreement on {len(labelled)} labelled {task} pairs")
    table.add_column("judge", overflow="fold")
    for col in ("accuracy", "balanced acc", "TPR", "TNR", "AUC", "invalid", "said correct"):
        table.add_column(col)
    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    for name, r in reports.items():
        table.add_row(name, *(fmt(r[k]) for k in ("accuracy", "balanced_accuracy", "tpr", "tnr", "auc",
                                                  "invalid_share", "correct_share")))
    Console().print(table)
    if out is not None:
        out.write_text(json.dumps(reports, indent=1), encoding="utf-8")
        typer.echo(str(out))
