"""The eval runner: one task x one engine x one backend -> `results.jsonl` + `summary.json`, resumable.

    summary = asyncio.run(run_eval(RunConfig(task="hotpotqa", data=path, engine="search-o1",
                                             corpus="per-question", out="runs/hq-so1", limit=50)))
    # CLI: agentic eval run --task hotpotqa --data PATH --engine search-o1 --corpus per-question --out DIR

`DIR/results.jsonl`: one line per finished item (id, question, gold, prediction, every metric,
tokens, tool calls, wall time, trajectory ids into `DIR/trajectories.jsonl`), appended and flushed
as each item finishes. A rerun of the same command skips the items already there, so a killed run
loses only the items in flight and never duplicates one (a torn last line is ignored and redone).
Items whose engine raised an `AgenticError` go to `DIR/errors.jsonl` and are retried on the next run.
With `--judge URI`, the judge scores every row without a verdict after generation (`eval.judging`), so
adding `--judge` to a finished run's command judges it without regenerating anything.
`DIR/run.json` holds the exact config; a rerun with a different config into the same DIR is refused.
`DIR/summary.json` (`eval.summary.summarize`) is rewritten at the end of every run.
Not covered: distributing one run over several machines (shard with --limit / separate DIRs).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.errors import AgenticError, ConfigError
from eval.engines import Attempt, EngineContext, EvalOptions, get_engine
from eval.judging import check_verdict, judge_rows, make_judge
from eval.metric_variants import Scored, backoff, score, search_o1_answer
from eval.metrics import cover_exact_match, exact_match, f1_score
from eval.stats import majority, pass_at_k
from eval.summary import file_sha256, read_results, summarize, write_summary
from eval.tasks import get_task
from eval.tasks.base import Task

log = logging.getLogger(__name__)
CORPORA = ("per-question", "pooled", "wiki-vital")
DEFAULT_BACKEND = "llamacpp://default"


@dataclass
class RunConfig:
    """Everything that defines a run (written to DIR/run.json)."""

    task: str
    data: str
    engine: str = "direct"
    out: str = "runs/eval"
    backend: str = DEFAULT_BACKEND
    index: str | None = None
    corpus: str | None = None
    limit: int | None = None
    samples: int = 1
    judge: str | None = None
    judge_verdict: str = "json"  # json | yes-no (eval.judging)
    backoff: str | None = None  # DIR of a direct-generation run (Search-o1 answer backoff)
    concurrency: int = 1
    max_tokens: int = 512
    temperature: float | None = None
    seed: int = 0
    max_searches: int = 5
    top_k: int = 5
    engine_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.index and self.corpus:
            raise ConfigError("give --index DIR or --corpus NAME, not both")
        if self.corpus is not None and self.corpus not in CORPORA:
            raise ConfigError(f"--corpus {self.corpus!r}: choose one of {', '.join(CORPORA)}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit {self.limit}: must be >= 1")
        check_verdict(self.judge_verdict)
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency {self.concurrency}: must be >= 1")
        self.options()  # validates the generation settings

    def options(self) -> EvalOptions:
        return EvalOptions(max_tokens=self.max_tokens, temperature=self.temperature, seed=self.seed,
                           samples=self.samples, max_searches=self.max_searches, top_k=self.top_k,
                           engine_options=dict(self.engine_options))

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share with the first one (limit and concurrency may change)."""
        d = asdict(self)
        for k in ("limit", "concurrency", "out", "judge", "judge_verdict", "backoff"):
            d.pop(k)
        return d


# ----------------------------------------------------------------------------------- corpora

def make_retriever_factory(cfg: RunConfig, task: Task, data: Path):
    """`example -> retriever` for --index / --corpus (None when neither is given)."""
    if cfg.index:
        from agentic_infer.tools.retrieval.index import load_index

        index = load_index(cfg.index)
        return lambda ex: index
    if cfg.corpus is None:
        return None
    if cfg.corpus == "per-question":
        if task.question_corpus is None:
            raise ConfigError(f"task {task.name!r} has no per-question paragraphs; use --corpus pooled|wiki-vital or --index")
        from agentic_infer.tools.retrieval.bm25 import BM25Index

        def per_question(ex: Mapping[str, Any]) -> Any:
            docs = task.question_corpus(ex)
            if not docs:
                raise ConfigError(f"{task.name} question {ex['id']!r} has no paragraphs for --corpus per-question")
            return BM25Index.from_documents(docs)

        return per_question
    if cfg.corpus == "pooled":
        if task.pooled_corpus is None:
            raise ConfigError(f"task {task.name!r} has no pooled corpus recipe; use --corpus wiki-vital or --index")
        from agentic_infer.tools.retrieval.bm25 import BM25Index

        index = BM25Index.from_documents(list(task.pooled_corpus(data)))
        return lambda ex: index
    from agentic_infer.cli.agents import ensure_default_index
    from agentic_infer.tools.retrieval.index import load_index

    index = load_index(ensure_default_index())
    return lambda ex: index


# ----------------------------------------------------------------------------------- scoring

def _correct(task: Task, pred: str | None, ex: Mapping[str, Any], text: str = "") -> float:
    return score([task.primary], Scored(pred, ex["gold"], text=text or (pred or ""), example=ex))[task.primary]


def backoff_metrics(text: str, gold: list[str], direct_pred: str | None) -> dict[str, float]:
    """Search-o1's metrics with answer backoff: an empty boxed answer takes the direct run's prediction."""
    pred = backoff(search_o1_answer(text), direct_pred)
    return {"search_o1_em_backoff": exact_match(pred, gold), "search_o1_f1_backoff": f1_score(pred, gold),
            "search_o1_acc_backoff": cover_exact_match(pred, gold) if pred else 0.0}


def score_item(task: Task, ex: Mapping[str, Any], attempts: list[Attempt], *, direct_pred: str | None = None,
               has_backoff: bool = False) -> dict[str, float]:
    """Every metric of one item: the task's metrics on sample 0, pass@k / maj@k over samples."""
    first = attempts[0]
    metrics = score(task.metrics, Scored(first.prediction, ex["gold"], text=first.text, example=ex))
    if has_backoff:
        metrics.update(backoff_metrics(first.text, ex["gold"], direct_pred))
    if first.samples is not None:  # deepconf: its traces are the samples
        answers = first.samples
        texts = [""] * len(answers)
    else:
        answers = [a.prediction for a in attempts]
        texts = [a.text for a in attempts]
    if len(answers) > 1:
        correct = [_correct(task, a, ex, t) >= 1.0 for a, t in zip(answers, texts)]
        n, c = len(answers), sum(correct)
        metrics["pass@1"] = pass_at_k(n, c, 1)
        metrics[f"pass@{n}"] = float(c > 0)
        maj = majority(answers)
        metrics[f"maj@{n}"] = _correct(task, maj, ex) if maj is not None else 0.0
    return metrics


def _row(task: Task, index: int, ex: Mapping[str, Any], attempts: list[Attempt], metrics: dict[str, float]) -> dict:
    first = attempts[0]
    row = {
        "id": ex["id"], "index": index, "question": ex.get("user_question", ex["question"]), "gold": ex["gold"],
        "prediction": first.prediction, "metrics": metrics,
        "completion_tokens": sum(a.completion_tokens for a in attempts),
        "prompt_tokens": sum(a.prompt_tokens for a in attempts),
        "tool_calls": sum(a.tool_calls for a in attempts),
        "search_calls": first.tool_calls, "llm_calls": sum(a.llm_calls for a in attempts),
        "wall_s": round(sum(a.wall_s for a in attempts), 4), "unfinished": first.unfinished,
        "trajectory_ids": [t.id for a in attempts for t in a.trajectories],
        "output": first.text[-2000:],
    }
    if len(attempts) > 1:
        row["predictions"] = [a.prediction for a in attempts]
    if first.samples is not None:
        row["predictions"] = first.samples
    if first.extra:
        row.update(first.extra)
    return row


# ----------------------------------------------------------------------------------- the run

def _check_config(out: Path, cfg: RunConfig, record: dict[str, Any]) -> None:
    path = out / "run.json"
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("identity") != record["identity"]:
            diff = sorted(k for k in set(old.get("identity", {})) | set(record["identity"])
                          if old.get("identity", {}).get(k) != record["identity"].get(k))
            raise ConfigError(f"{out} holds a run with a different config (differs in {diff}); "
                              "use another --out DIR or delete it")
    path.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")


async def run_eval(cfg: RunConfig, *, llm: Any = None, judge_llm: Any = None, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) `cfg`; returns the summary written to DIR/summary.json."""
    task = get_task(cfg.task)
    spec = get_engine(cfg.engine)
    data = Path(cfg.data).expanduser()
    examples = task.load(data, limit=cfg.limit)
    if spec.needs_retriever and not (cfg.index or cfg.corpus):
        raise ConfigError(f"engine {cfg.engine!r} searches: pass --index DIR or --corpus per-question|pooled|wiki-vital")
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    if llm is None:
        from agentic_infer.backends import load_llm

        llm = load_llm(cfg.backend)
    from eval.summary import model_info, toolkit_version

    record = {"config": asdict(cfg), "identity": cfg.identity(), "task": task.name, "data_sha256": file_sha256(data),
              "model": model_info(llm, cfg.backend), "toolkit_version": toolkit_version()}
    judge = None
    if cfg.judge or judge_llm is not None:
        if judge_llm is None:  # the generating model judges itself when the URIs match: load it once
            from agentic_infer.backends import load_llm

            judge_llm = llm if cfg.judge == cfg.backend else load_llm(cfg.judge)
        judge = make_judge(task.name, judge_llm, verdict=cfg.judge_verdict, cache=out / "judge_cache.sqlite")
        record["judge_model"] = {**model_info(judge_llm, cfg.judge), "verdict": cfg.judge_verdict}
    _check_config(out, cfg, record)
    direct = {}
    if cfg.backoff:
        direct = {r["id"]: r.get("prediction") for r in read_results(Path(cfg.backoff) / "results.jsonl")}
        if not direct:
            raise ConfigError(f"--backoff {cfg.backoff}: no results.jsonl rows there (run the direct engine first)")
    ctx = EngineContext(llm=llm, task=task, options=cfg.options(), retriever_for=make_retriever_factory(cfg, task, data))
    engine = spec.build(ctx)

    results_path, traj_path, err_path = out / "results.jsonl", out / "trajectories.jsonl", out / "errors.jsonl"
    done = {r["id"] for r in read_results(results_path)}
    todo = [(i, ex) for i, ex in enumerate(examples) if ex["id"] not in done]
    n_samples = 1 if spec.samples_internally else cfg.samples
    files = {p: open(p, "a", encoding="utf-8") for p in (results_path, traj_path, err_path)}  # noqa: SIM115
    for p, f in files.items():  # end a line torn by a crash so the next record starts clean
        if p.stat().st_size and not p.read_bytes().endswith(b"\n"):
            f.write("\n")
    bar = _progress(len(examples), len(examples) - len(todo), f"{task.name}/{cfg.engine}", progress)
    sem = asyncio.Semaphore(cfg.concurrency)
    t_start = time.perf_counter()

    async def one(i: int, ex: dict[str, Any]) -> None:
        async with sem:
            try:
                attempts = [await engine.solve(ex, sample=s) for s in range(n_samples)]
                metrics = score_item(task, ex, attempts, direct_pred=direct.get(ex["id"]), has_backoff=bool(cfg.backoff))
            except AgenticError as e:
                log.warning("%s %s: %s (retried on the next run)", task.name, ex["id"], e)
                files[err_path].write(json.dumps({"id": ex["id"], "error": f"{type(e).__name__}: {e}"}) + "\n")
                files[err_path].flush()
                bar.advance()
                return
            for a in attempts:
                for t in a.trajectories:
                    t.metadata["example_id"] = ex["id"]
                    files[traj_path].write(t.to_json() + "\n")
            files[traj_path].flush()
            files[results_path].write(json.dumps(_row(task, i, ex, attempts, metrics), ensure_ascii=False, default=str) + "\n")
            files[results_path].flush()
            bar.advance()

    tasks = [asyncio.ensure_future(one(i, ex)) for i, ex in todo]
    try:
        await asyncio.gather(*tasks)
    except BaseException:  # stop the items in flight before the files close; they are redone next run
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        bar.close()
        for f in files.values():
            f.close()
    rows = read_results(results_path)
    if judge is not None and await judge_rows(rows, judge, concurrency=cfg.concurrency):
        _rewrite(results_path, rows)
    if cfg.backoff:  # rows written before --backoff was given get the backoff metrics in the summary too
        for r in rows:
            if "search_o1_em_backoff" not in r["metrics"]:
                r["metrics"].update(backoff_metrics(r.get("output", ""), r["gold"], direct.get(r["id"])))
    summary = summarize(rows, record=record, task=task, n_expected=len(examples),
                        run_wall_s=time.perf_counter() - t_start)
    write_summary(out, summary)
    return summary


def _rewrite(path: Path, rows: list[dict[str, Any]]) -> None:
    """Replace results.jsonl with `rows` atomically (a crash leaves the old file or the new one)."""
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class _progress:
    def __init__(self, total: int, done: int, label: str, enabled: bool):
        self.bar = None
        if enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TimeRemainingColumn())
            self.task = self.bar.add_task(label, total=total, completed=done)
            self.bar.start()

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
