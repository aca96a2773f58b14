"""The eval runner: one task x one engine x one backend -> `results.jsonl` + `summary.json`, resumable.

    summary = asyncio.run(run_eval(RunConfig(task="hotpotqa", data=path, engine="search-o1",
                                             corpus="per-question", out="runs/hq-so1", limit=50)))
    # CLI: agentic eval run --task hotpotqa --data PATH --engine search-o1 --corpus per-question --out DIR

The run directory (`--out DIR`):
- `rollouts.jsonl`: one `Rollout` per finished example (`agentic_infer.runner.run_many`: appended and
  flushed as each finishes; a torn last line is dropped on the next run). It holds every trajectory, and
  the verdicts under each metric's name in `rollout.rewards` and the trajectories' `rewards`
  (`eval.scoring`). A rerun of the same command skips the examples already there, so a killed run loses
  only the items in flight and never writes a trajectory twice.
- `results.jsonl`: one row per example, a flat view of its rollout (id, question, gold, prediction,
  metrics read from `rollout.rewards`, tokens, calls, wall time, trajectory ids, the output's tail),
  written right after the rollout; a rollout whose row a kill prevented gets it on the next run.
- `rollouts.jsonl.errors.jsonl`: items whose engine raised an `AgenticError`; they are retried on the
  next run.
- `run.json` (the exact config; a rerun with a different config into the same DIR is refused),
  `summary.json` (`eval.summary.summarize`, rewritten at the end of every run), `judge_cache.sqlite`.
With `--judge URI`, the judge scores every item it has not judged after generation (`eval.judging`: the
verdicts go into the rollouts, then the rows), so adding `--judge` to a finished run's command judges it
without regenerating anything.
Env tasks (`agentic_infer.tasks.envs`, e.g. `--task retail`) run on engine "env" (their default and only one)
over the task's env: the engine gets the whole task row, its verdict gives the metrics (`eval.scoring`), and
`--samples k` adds tau-bench's pass^1..k.
`--executor ray|slurm` (or `--tasks N` with `--workers`) splits the pending items into shards that generate on
the executor and are merged here (`eval.distributed`); the rest of the run (judge, summary) is the same.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.backends import result_uri
from agentic_infer.config import config_to_dict, renamed
from agentic_infer.engines.judge import check_verdict, make_judge
from agentic_infer.engines.registry import (
    EngineParts,
    build_engine,
    check_retriever,
    engine_config,
    get_engine,
)
from agentic_infer.errors import ConfigError
from agentic_infer.executors import ExecutorConfig
from agentic_infer.runner import load_rollouts, repair_jsonl, run_many, write_jsonl
from agentic_infer.tasks import get_task
from agentic_infer.tasks.base import Task
from agentic_infer.tasks.envs import engine_input as env_engine_input
from agentic_infer.tasks.envs import run_env_options
from agentic_infer.tools.retrieval.corpora import check_source, retriever_factory
from agentic_infer.types import Rollout
from eval.judging import judge_id, judge_rollouts
from eval.scoring import backoff_metrics, result_row, write_item_verdicts
from eval.summary import file_sha256, read_results, summarize, write_summary

log = logging.getLogger(__name__)
DEFAULT_BACKEND = "llamacpp://default"


@renamed(max_tokens="settings.sampling.max_tokens", temperature="settings.sampling.temperature",
         seed="settings.sampling.seed", max_searches="settings.max_searches",
         top_k=("settings.k", "documents per search"), engine_options=("settings", "the engine's config overrides"))
@dataclass
class RunConfig:
    """Everything that defines a run (written to DIR/run.json). `settings` are the engine's config overrides
    (`--set KEY=VALUE`, dotted or nested: `{"max_searches": 3, "sampling": {"temperature": 0.2}}`) on the
    registry's run defaults (`agentic_infer.engines.registry.engine_config`)."""

    task: str
    data: str
    engine: str | None = None  # None: the task's first engine ("direct"; an env task's only one, "env")
    out: str = "runs/eval"
    backend: str = DEFAULT_BACKEND
    index: str | None = None
    corpus: str | None = None
    limit: int | None = None
    samples: int = 1
    judge: str | None = None
    judge_verdict: str = "json"  # json | yes-no (agentic_infer.engines.judge.make_judge)
    backoff: str | None = None  # DIR of a direct-generation run (Search-o1 answer backoff)
    concurrency: int = 1
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # local | ray | slurm (eval.distributed)
    settings: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)  # renamed columns: expected field -> column in the file

    def __post_init__(self) -> None:
        check_source(index=self.index, corpus=self.corpus)
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit {self.limit}: must be >= 1")
        check_verdict(self.judge_verdict)
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency {self.concurrency}: must be >= 1")
        self._task_engine()
        self.engine_config()  # validates the engine's settings
        check_retriever(self.engine, bool(self.index or self.corpus))

    def _task_engine(self) -> None:
        """The task's default engine when none is given; an env task runs on engine "env" only, on its env."""
        task = get_task(self.task)
        self.engine = self.engine or task.engines[0]
        if (task.family == "env") != (self.engine == "env"):
            fix = ("drop --engine (or pass --engine env)" if task.family == "env" else
                   "choose an env task (agentic eval tasks: family env) or another engine")
            raise ConfigError(f"task {task.name!r} (family {task.family}) with engine {self.engine!r}: env tasks run "
                              f"on engine 'env' and engine 'env' runs env tasks only; {fix}")
        if task.family == "env":
            env = self.settings.get("env", task.name)
            if env != task.name:
                raise ConfigError(f"--set env={env}: task {task.name!r} runs env {task.name!r}; drop --set env")
            options = {**run_env_options(task, self.data), **(self.settings.get("env_options") or {})}
            self.settings = {**self.settings, "env": task.name, **({"env_options": options} if options else {})}

    def engine_config(self) -> Any:
        """The config the engine reads (the registry's run defaults < `settings`)."""
        return engine_config(self.engine, self.settings, samples=self.samples, source="--set")

    def identity(self) -> dict[str, Any]:
        """What a resumed run must share with the first one: the data, the backend and what the engine reads
        (limit, concurrency, executor, output, judge and backoff may change)."""
        d = asdict(self)
        for k in ("limit", "concurrency", "out", "judge", "judge_verdict", "backoff", "settings", "executor"):
            d.pop(k)
        d["backend"] = result_uri(self.backend)  # threads and client limits may change between a run and its resume
        d["engine_config"] = config_to_dict(self.engine_config())
        return d


# ----------------------------------------------------------------------------------- the run

def engine_input(task: Task, ex: Mapping[str, Any]) -> dict[str, Any]:
    """What the engine runs on: the example's id and question (never its gold); for an env task the whole task
    row (the env engine builds the env from it; the env keeps the gold to itself)."""
    if task.family == "env":
        return env_engine_input(ex)
    return {"id": ex["id"], "question": ex["question"]}


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (`engine_config.sampling.max_tokens`), to name what differs."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _check_config(out: Path, cfg: RunConfig, record: dict[str, Any]) -> None:
    path = out / "run.json"
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("identity") != record["identity"]:
            a, b = _flat(old.get("identity", {})), _flat(record["identity"])
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            raise ConfigError(f"{out} holds a run with a different config (differs in {diff}); "
                              "use another --out DIR or delete it")
    path.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")


async def run_eval(cfg: RunConfig, *, llm: Any = None, judge_llm: Any = None, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) `cfg`; returns the summary written to DIR/summary.json."""
    task = get_task(cfg.task)
    data = Path(cfg.data).expanduser()
    examples = task.load(data, limit=cfg.limit, fields=cfg.fields)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    sharded = cfg.executor.sharded
    if sharded and llm is not None:
        raise ConfigError(f"executor {cfg.executor.kind} with {cfg.executor.tasks} tasks: each shard loads its model "
                          "from --backend; pass the backend URI, not an llm object (or run with one local task)")
    if llm is None:
        from agentic_infer.backends import load_llm

        llm = load_llm(cfg.backend)
    from eval.summary import model_info, toolkit_version

    record = {"config": asdict(cfg), "engine_config": config_to_dict(cfg.engine_config()), "identity": cfg.identity(), "task": task.name, "data_sha256": file_sha256(data),
              "model": model_info(llm, cfg.backend), "toolkit_version": toolkit_version()}
    judge = None
    if cfg.judge or judge_llm is not None:
        if judge_llm is None:  # the generating model judges itself when the URIs match: load it once
            from agentic_infer.backends import load_llm

            judge_llm = llm if cfg.judge == cfg.backend else load_llm(cfg.judge)
        judge = make_judge(task.name, judge_llm, verdict=cfg.judge_verdict, cache=out / "judge_cache.sqlite")
        record["judge_model"] = {**model_info(judge_llm, cfg.judge), "verdict": cfg.judge_verdict}
    _check_config(out, cfg, record)
    direct = backoff_predictions(cfg)
    rollouts_path, results_path = out / "rollouts.jsonl", out / "results.jsonl"
    t_start = time.perf_counter()
    if not sharded:
        await generate(cfg, task, examples, out, llm=llm, direct=direct, progress=progress)
    else:  # shards on the executor, each generating into its own folder, merged here (eval.distributed)
        from eval.distributed import run_sharded

        await asyncio.to_thread(run_sharded, cfg, examples, out)
    rows = read_results(results_path)
    if judge is not None:
        await _judge(rows, judge, rollouts_path, results_path, concurrency=cfg.concurrency)
    if cfg.backoff:  # rows written before --backoff was given get the backoff metrics in the summary too
        for r in rows:
            if "search_o1_em_backoff" not in r["metrics"]:
                r["metrics"].update(backoff_metrics(r.get("output", ""), r["gold"], direct.get(r["id"])))
    summary = summarize(rows, record=record, task=task, n_expected=len(examples),
                        run_wall_s=time.perf_counter() - t_start)
    write_summary(out, summary)
    return summary


def backoff_predictions(cfg: RunConfig) -> dict[str, Any]:
    """The direct run's predictions by id for `--backoff DIR` ({} without one)."""
    if not cfg.backoff:
        return {}
    direct = {r["id"]: r.get("prediction") for r in read_results(Path(cfg.backoff) / "results.jsonl")}
    if not direct:
        raise ConfigError(f"--backoff {cfg.backoff}: no results.jsonl rows there (run the direct engine first)")
    return direct


async def generate(cfg: RunConfig, task: Task, examples: list[dict[str, Any]], out: Path, *, llm: Any,
                   direct: Mapping[str, Any], progress: bool, ids: set[str] | None = None) -> None:
    """Run the engine on the `examples` (those in `ids`, when given) without a row in `out/results.jsonl`: each
    rollout (with its verdicts) appended to `out/rollouts.jsonl`, then its row to `out/results.jsonl`."""
    spec = get_engine(cfg.engine)
    data = Path(cfg.data).expanduser()
    by_id = {ex["id"]: ex for ex in examples}
    factory = retriever_factory(index=cfg.index, corpus=cfg.corpus, task=task, data=data)
    retriever_for = None if factory is None else (lambda ex: factory(by_id[ex["id"]]))
    engine = build_engine(spec, EngineParts(llm=llm, task=task, retriever_for=retriever_for), cfg.engine_config(),
                          samples=cfg.samples)

    rollouts_path, results_path = out / "rollouts.jsonl", out / "results.jsonl"
    repair_jsonl(results_path)
    has_row = {r["id"] for r in read_results(results_path)}
    todo = [(i, ex) for i, ex in enumerate(examples)
            if ex["id"] not in has_row and (ids is None or str(ex["id"]) in ids)]

    names: dict[int, list[str]] = {}  # metric names of the rollouts written but not yet given a row

    def score(j: int, rollout: Rollout) -> None:  # before run_many writes the rollout: the line holds the verdicts
        ex = todo[j][1]
        names[j] = write_item_verdicts(task, spec, ex, rollout, direct_pred=direct.get(ex["id"]),
                                       has_backoff=bool(cfg.backoff))

    with open(results_path, "a", encoding="utf-8") as sink:
        def write_row(j: int, rollout: Rollout) -> None:  # after run_many wrote it
            i, ex = todo[j]
            row = result_row(task, spec, i, ex, rollout, names.pop(j))
            sink.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            sink.flush()
            has_row.add(ex["id"])

        rollouts = await run_many(engine, [engine_input(task, ex) for _, ex in todo],
                                  concurrency=cfg.concurrency, out=rollouts_path, progress=progress, prepare=score,
                                  on_rollout=write_row)
        for j, rollout in enumerate(rollouts):  # rollouts of a run killed before their row was written
            if rollout is not None and todo[j][1]["id"] not in has_row:
                score(j, rollout)
                write_row(j, rollout)


async def _judge(rows: list[dict[str, Any]], judge: Any, rollouts_path: Path, results_path: Path, *,
                 concurrency: int) -> None:
    """The judging phase: verdicts into the rollouts (rollouts.jsonl rewritten), then into the rows."""
    if all(r.get("judged_by") == judge_id(judge) for r in rows):
        return
    rollouts = load_rollouts(rollouts_path)
    paid, changed = await judge_rollouts(rows, rollouts, judge, concurrency=concurrency)
    if paid:
        write_jsonl(rollouts_path, (r.to_json() for r in rollouts.values()))
    if changed:
        write_jsonl(results_path, (json.dumps(r, ensure_ascii=False, default=str) for r in rows))
