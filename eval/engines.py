"""The eval engine table: an engine name -> how to build that `agentic_infer` Engine for a run.

    spec = get_engine("search-o1")
    engine = build_engine(spec, EngineContext(llm=llm, task=task, options=opts, retriever_for=fn))
    rollout = await engine.run({"id": "q1", "question": "..."})    # eval drives it with agentic_infer.runner.run_many

`EngineSpec.build(ctx, seed)` makes one sample's Engine (`await engine.run(example) -> Rollout`) from the
run's context: the LLM, the task (prompts, answer extraction, family), the generation options (`--opt
KEY=VALUE` pairs in `options.engine_options`, validated when the engine is built, with the keys it takes
in the error) and the retriever factory (`--index` / `--corpus`). With `--samples k` (k > 1), `build_engine`
runs k of them, seeds seed..seed+k-1, as one `agentic_infer.engines.group.Group` (one Rollout per example
holding every sample) unless the engine samples internally (deepconf: k is its trace budget).

Built in: `direct` / `cot` (`agentic_infer.engines.direct.Direct` with the task's prompt and answer
extraction), `search-o1` (`SearchO1` over the run's retriever; `--opt first_query=question` makes the
first search the question itself), `tir` (`TIR` with the Python sandbox), `deepconf` (`DeepConf`, offline
by default, its traces are the samples), `lats` / `rap` (`agentic_infer.engines.tree.LATS` / `RAP` with the
environment the task needs; see `_lats`, `_rap`). Add one with `register_engine(EngineSpec(...))`.
How eval reads an engine's Rollout is part of its entry: `text` (the output its answer is scored on),
`tool_calls` and `report` (extra row fields, e.g. a tree search's stop reason).
Not covered: engines that need a multi-turn environment (TravelPlanner, tau-bench).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.engines.base import Engine
from agentic_infer.engines.group import Group
from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, SamplingParams
from eval.tasks.base import Task


@dataclass(frozen=True)
class EvalOptions:
    """Generation settings shared by the engines (engine-specific ones go in `engine_options`)."""

    max_tokens: int = 512
    temperature: float | None = None  # None: greedy for one sample, 0.7 when sampling; engines' own defaults
    seed: int = 0
    samples: int = 1
    max_searches: int = 5
    top_k: int = 5
    engine_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("max_tokens", "samples", "max_searches", "top_k"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"EvalOptions.{name}={v!r}: must be an integer >= 1")
        if self.temperature is not None and self.temperature < 0:
            raise ConfigError(f"EvalOptions.temperature={self.temperature!r}: must be >= 0")


@dataclass
class EngineContext:
    """What a builder gets: the run's LLM, task, options and `retriever_for(example)` (None without a corpus)."""

    llm: LLM
    task: Task
    options: EvalOptions
    retriever_for: Callable[[Mapping[str, Any]], Any] | None = None


def answer_text(rollout: Rollout) -> str:
    """The text a rollout's answer was read from: the chosen trajectory's output, or for a vote the first
    trajectory that gave the winning answer (else the first trajectory)."""
    if rollout.chosen is not None or not rollout.trajectories:
        return rollout.text
    return next((t.completion_text for t in rollout.trajectories if t.answer == rollout.answer),
                rollout.trajectories[0].completion_text)


@dataclass(frozen=True)
class EngineSpec:
    """One entry of the table: how to build the engine and how eval reads its Rollout."""

    name: str
    description: str
    build: Callable[[EngineContext, int], Engine]  # (context, sample seed) -> one sample's engine
    needs_retriever: bool = False
    samples_internally: bool = False  # the engine draws `samples` traces itself (deepconf)
    text: Callable[[Rollout], str] = answer_text  # the output the answer is scored on (row["output"])
    tool_calls: Callable[[Rollout], int] = lambda r: r.usage.tool_calls
    report: Callable[[Rollout], dict[str, Any]] = lambda r: {}  # extra row fields


ENGINES: dict[str, EngineSpec] = {}


def register_engine(spec: EngineSpec) -> EngineSpec:
    ENGINES[spec.name] = spec
    return spec


def get_engine(name: str) -> EngineSpec:
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    return ENGINES[name]


def build_engine(spec: EngineSpec, ctx: EngineContext) -> Engine:
    """The run's engine: one sample's, or a `Group` of `samples` seeded ones (see the module docstring)."""
    o = ctx.options
    if spec.samples_internally or o.samples == 1:
        return spec.build(ctx, o.seed)
    return Group.seeded(lambda seed: spec.build(ctx, seed), o.samples, seed=o.seed, name=spec.name)


def _accepted(fn: Any, options: Mapping[str, Any], engine: str, *, reserved: tuple[str, ...] = ()) -> dict[str, Any]:
    """`options` when `fn` (a callable, or an engine's config dataclass) takes every key (not one of `reserved`,
    which eval sets itself), else a ConfigError."""
    names = ([f.name for f in dataclasses.fields(fn)] if dataclasses.is_dataclass(fn)
             else list(inspect.signature(fn).parameters))
    params = {k for k in names if k not in ("self", "llm", *reserved)}
    bad = sorted(set(options) - params)
    if bad:
        raise ConfigError(f"engine {engine!r}: unknown option(s) {bad}; it takes {sorted(params)}")
    return dict(options)


def _agent_sampling(base: SamplingParams, o: EvalOptions, seed: int) -> SamplingParams:
    """An agent's own default sampling with the run's token cap, seed and (when given) temperature."""
    return base.replace(max_tokens=o.max_tokens, seed=seed,
                        **({"temperature": o.temperature} if o.temperature is not None else {}))


class _PerExample:
    """An engine built for each example (its retriever depends on the example, e.g. --corpus per-question)."""

    def __init__(self, name: str, make: Callable[[Mapping[str, Any]], Engine]):
        self.name, self.make = name, make

    async def run(self, example: Mapping[str, Any]) -> Rollout:
        return await self.make(example).run(example)


class _ProbeRetriever:
    """Stands in for the per-example retriever while a builder validates its options."""

    def search(self, query: str, k: int = 10) -> list[Any]:
        return []

    def get(self, doc_id: str) -> Any:
        return None


# ------------------------------------------------------------------------------- direct / cot

def _prompted(family: str) -> Callable[[EngineContext, int], Engine]:
    def build(ctx: EngineContext, seed: int) -> Engine:
        from agentic_infer.engines.direct import Direct

        o = ctx.options
        temp = o.temperature if o.temperature is not None else (0.0 if o.samples == 1 else 0.7)
        sampling = SamplingParams(max_tokens=o.max_tokens, temperature=temp, top_p=0.95 if temp > 0 else 1.0,
                                  seed=seed, logprobs=0)
        opts = _accepted(Direct, o.engine_options, family, reserved=("prompt", "extract", "sampling", "name"))
        task = ctx.task
        return Direct(ctx.llm, prompt=lambda ex: task.prompt(family, ex), extract=task.extract, sampling=sampling,
                      name=family, **opts)

    return build


# ------------------------------------------------------------------------------- agents

def _search_o1(ctx: EngineContext, seed: int) -> Engine:
    from agentic_infer.engines.search_o1 import DEFAULT_SAMPLING, SearchO1, SearchO1Config

    retriever_for = ctx.retriever_for
    if retriever_for is None:
        raise ConfigError("engine 'search-o1' needs a corpus: pass --index DIR or --corpus per-question|pooled|wiki-vital")
    o = ctx.options
    opts = _accepted(SearchO1Config, o.engine_options, "search-o1")  # --opt rid_sampling='{"max_tokens": 128}' too
    kwargs = {"max_searches": o.max_searches, "top_k": o.top_k,
              "sampling": _agent_sampling(DEFAULT_SAMPLING, o, seed), **opts}
    SearchO1(ctx.llm, _ProbeRetriever(), **kwargs)  # invalid options fail now, not on every example
    return _PerExample("search-o1", lambda ex: SearchO1(ctx.llm, retriever_for(ex), **kwargs))


def _tir(ctx: EngineContext, seed: int) -> Engine:
    from agentic_infer.engines.tir import DEFAULT_SAMPLING, TIR, TIRConfig
    from agentic_infer.tools.sandbox import PythonSandbox

    opts = _accepted(TIRConfig, ctx.options.engine_options, "tir")
    return TIR(ctx.llm, PythonSandbox(), **{"sampling": _agent_sampling(DEFAULT_SAMPLING, ctx.options, seed), **opts})


def _deepconf(ctx: EngineContext, seed: int) -> Engine:
    from agentic_infer.engines.deepconf import DeepConf

    o = ctx.options
    opts = {"mode": "offline", "budget": max(o.samples, 2), "max_tokens": o.max_tokens, "seed": seed,
            **({"temperature": o.temperature} if o.temperature is not None else {}), **o.engine_options}
    if opts["mode"] == "online":
        opts.setdefault("warmup", min(16, opts["budget"]))
    return DeepConf(ctx.llm, extract_answer=ctx.task.extract, **opts)


# ------------------------------------------------------------------------------- tree search

def _tree_options(ctx: EngineContext) -> dict[str, Any]:
    """`--opt` pairs for LATS / RAP: small default (iterations=4) for CPU runs; `--opt options='{...}'` (the
    former nested form) is flattened. Not seeded per sample: the options' own `seed` (default None) applies."""
    opts = dict(ctx.options.engine_options)
    nested = opts.pop("options", None)
    if nested is not None and not isinstance(nested, Mapping):
        raise ConfigError(f"--opt options={nested!r}: expected a JSON object of option=value pairs")
    return {"iterations": 4, **(nested or {}), **opts}


def _lats(ctx: EngineContext, seed: int) -> Engine:
    """LATS with the task's environment: Game of 24 -> `Game24LATSEnv`; QA with a corpus -> `RetrievalQAEnv`
    (search/lookup/finish over the run's retriever); math -> `MathEnv`. Judge feedback only (no gold)."""
    from agentic_infer.engines.tree import LATS, Game24LATSEnv, MathEnv, RetrievalQAEnv

    task, retriever_for, k, opts = ctx.task, ctx.retriever_for, ctx.options.top_k, _tree_options(ctx)
    if task.name == "game24":
        return LATS(ctx.llm, lambda ex: Game24LATSEnv(ex["question"]), **opts)
    if task.family == "math":
        return LATS(ctx.llm, lambda ex: MathEnv(ex["question"]), **opts)
    if task.family in ("qa", "multihop"):
        if retriever_for is None:
            raise ConfigError("engine 'lats' on a QA task searches: pass --index DIR or --corpus NAME")
        return LATS(ctx.llm, lambda ex: RetrievalQAEnv(ex["question"], retriever_for(ex), k=k), **opts)
    raise ConfigError(f"engine 'lats' has no environment for task {task.name!r} ({task.family}); it runs on "
                      "game24, math tasks and QA tasks with a corpus")


def _rap(ctx: EngineContext, seed: int) -> Engine:
    """RAP with the LLM as world model: Game of 24 -> `Game24RAPTask`; math -> `GSM8KTask`."""
    from agentic_infer.engines.tree import RAP, Game24RAPTask, GSM8KTask

    task = ctx.task
    if task.name == "game24":
        return RAP(ctx.llm, lambda ex: Game24RAPTask(ex["question"]), **_tree_options(ctx))
    if task.family == "math":
        return RAP(ctx.llm, lambda ex: GSM8KTask(ex["question"]), **_tree_options(ctx))
    raise ConfigError(f"engine 'rap' has no environment for task {task.name!r} ({task.family}); it runs on "
                      "game24 and math tasks")


def _tree_tool_calls(rollout: Rollout) -> int:
    """Search / lookup actions on the chosen path (a retrieval QA environment's tool calls)."""
    path = rollout.trajectories[0].steps if rollout.trajectories else []
    return sum(1 for st in path if st.action.lower().startswith(("search[", "lookup[")))


def _tree_report(rollout: Rollout) -> dict[str, Any]:
    t = rollout.metadata.get("tree", {})
    return {"tree": {"stop_reason": t.get("stop_reason"), "feedback": t.get("feedback"), "actions": t.get("actions"),
                     "nodes": len(t.get("nodes") or ())}}


register_engine(EngineSpec("direct", "one generation, short-answer prompt", _prompted("direct")))
register_engine(EngineSpec("cot", "one generation, step-by-step prompt", _prompted("cot")))
register_engine(EngineSpec("search-o1", "Search-o1 agentic search with Reason-in-Documents", _search_o1,
                           needs_retriever=True))
register_engine(EngineSpec("tir", "tool-integrated reasoning with a Python sandbox", _tir))
register_engine(EngineSpec("deepconf", "DeepConf confidence-filtered voting over sampled traces", _deepconf,
                           samples_internally=True, report=lambda r: {"deepconf": r.metadata.get("deepconf")}))
for _name, _build, _what in (("lats", _lats, "LATS tree search"), ("rap", _rap, "RAP MCTS with the LLM as world model")):
    register_engine(EngineSpec(_name, f"{_what} (agentic_infer.engines.tree)", _build,
                               text=lambda r: r.answer or "", tool_calls=_tree_tool_calls, report=_tree_report))
