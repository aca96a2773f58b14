"""Engine adapters for eval: one `solve(example, sample=i) -> Attempt` over every engine, and a registry.

    spec = get_engine("search-o1")
    engine = spec.build(EngineContext(llm=llm, task=task, options=opts, retriever_for=fn))
    attempt = await engine.solve(example, sample=0)

Built in: `direct` (one generation, the task's short-answer prompt), `cot` (step-by-step prompt),
`search-o1` (`agentic_infer.engines.search_o1.SearchO1` over the run's retriever), `tir`
(`agentic_infer.engines.tir.TIR` with the Python sandbox), `deepconf` (`DeepConf`, its traces are the
samples), `lats` / `rap` (`agentic_infer.engines.tree.run_lats` / `run_rap`, see `TreeEngine`; when that
package is absent the builder says so). `register_engine(EngineSpec(...))` adds another engine; `options` are the
run's `--opt KEY=VALUE` pairs, passed to the engine's constructor where it takes them.
Not covered: engines that need a multi-turn environment (TravelPlanner, tau-bench).
"""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentic_infer.backends.base import LLM, count_prompt_tokens
from agentic_infer.errors import ConfigError
from agentic_infer.types import Completion, Message, SamplingParams, Trajectory, Usage
from eval.tasks.base import Task


@dataclass
class Attempt:
    """One answer to one example (one sample), with what it cost."""

    prediction: str | None
    text: str
    trajectories: list[Trajectory] = field(default_factory=list)
    completion_tokens: int = 0
    prompt_tokens: int = 0
    tool_calls: int = 0
    llm_calls: int = 0
    wall_s: float = 0.0
    unfinished: bool = False
    samples: list[str | None] | None = None  # answers of internal samples (deepconf traces)
    extra: dict[str, Any] = field(default_factory=dict)


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
    llm: LLM
    task: Task
    options: EvalOptions
    retriever_for: Callable[[Mapping[str, Any]], Any] | None = None


class EvalEngine(Protocol):
    name: str

    async def solve(self, example: Mapping[str, Any], *, sample: int) -> Attempt: ...


@dataclass(frozen=True)
class EngineSpec:
    name: str
    description: str
    build: Callable[[EngineContext], EvalEngine]
    needs_retriever: bool = False
    samples_internally: bool = False  # the engine draws `samples` traces itself (deepconf)


ENGINES: dict[str, EngineSpec] = {}


def register_engine(spec: EngineSpec) -> EngineSpec:
    ENGINES[spec.name] = spec
    return spec


def get_engine(name: str) -> EngineSpec:
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
    return ENGINES[name]


def _accepted(cls: Any, options: Mapping[str, Any], engine: str) -> dict[str, Any]:
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(options)
    bad = sorted(set(options) - set(params))
    if bad:
        raise ConfigError(f"engine {engine!r}: unknown option(s) {bad}; it takes {sorted(set(params) - {'self'})}")
    return dict(options)


def _sampling(ctx: EngineContext, sample: int, *, sampling_temp: float = 0.7) -> SamplingParams:
    o = ctx.options
    temp = o.temperature if o.temperature is not None else (0.0 if o.samples == 1 else sampling_temp)
    return SamplingParams(max_tokens=o.max_tokens, temperature=temp, top_p=0.95 if temp > 0 else 1.0,
                          seed=o.seed + sample, logprobs=0)


def _from_trajectory(traj: Trajectory, *, wall_s: float) -> Attempt:
    u: Usage = traj.usage
    return Attempt(prediction=traj.answer, text=traj.completion_text, trajectories=[traj],
                   completion_tokens=u.completion_tokens, prompt_tokens=u.prompt_tokens, tool_calls=u.tool_calls,
                   llm_calls=u.llm_calls, wall_s=u.wall_s or wall_s,
                   unfinished=bool(traj.metadata.get("unfinished")))


# ------------------------------------------------------------------------------- direct / cot

class PromptEngine:
    """One generation with the task's prompt for `family` ("direct" or "cot")."""

    def __init__(self, ctx: EngineContext, family: str):
        self.ctx, self.family, self.name = ctx, family, family

    async def solve(self, example: Mapping[str, Any], *, sample: int) -> Attempt:
        t0 = time.perf_counter()
        llm = self.ctx.llm
        prompt = llm.render([Message("user", self.ctx.task.prompt(self.family, example))])
        completion = (await llm.generate(prompt, _sampling(self.ctx, sample)))[0]
        wall = time.perf_counter() - t0
        traj = Trajectory(engine=f"eval/{self.family}", example={"id": example["id"], "question": example["question"]},
                          config={"sampling": _sampling(self.ctx, sample).to_dict()})
        traj.add("prompt", prompt)
        traj.add("model", completion.text, token_ids=completion.token_ids, logprobs=completion.logprobs)
        traj.answer = self.ctx.task.extract(completion.text)
        traj.finish_reason = completion.finish_reason
        traj.usage = Usage(prompt_tokens=count_prompt_tokens(llm, prompt, completion.prompt_tokens),
                           completion_tokens=completion.num_tokens, llm_calls=1, wall_s=wall)
        return _from_trajectory(traj, wall_s=wall)


# ------------------------------------------------------------------------------- agentic engines

class SearchO1Engine:
    name = "search-o1"

    def __init__(self, ctx: EngineContext):
        from agentic_infer.engines.search_o1 import DEFAULT_SAMPLING, SearchO1

        if ctx.retriever_for is None:
            raise ConfigError("engine 'search-o1' needs a corpus: pass --index DIR or --corpus per-question|pooled|wiki-vital")
        self.ctx, self.cls, self.base = ctx, SearchO1, DEFAULT_SAMPLING
        options = dict(ctx.options.engine_options)
        first = options.pop("first_query", None)
        if first not in (None, "question"):
            raise ConfigError(f"search-o1 option first_query={first!r}: the only value is 'question'")
        self.kwargs = _accepted(SearchO1, options, "search-o1")
        if first:
            self.kwargs["first_query"] = first
        for k, v in list(self.kwargs.items()):  # --opt rid_sampling='{"max_tokens": 128}'
            if k.endswith("sampling") and isinstance(v, Mapping):
                self.kwargs[k] = SamplingParams(**v)

    async def solve(self, example: Mapping[str, Any], *, sample: int) -> Attempt:
        o = self.ctx.options
        sampling = self.base.replace(max_tokens=o.max_tokens, seed=o.seed + sample,
                                     **({"temperature": o.temperature} if o.temperature is not None else {}))
        kwargs = {"max_searches": o.max_searches, "top_k": o.top_k, "sampling": sampling, **self.kwargs}
        llm = self.ctx.llm
        if kwargs.pop("first_query", None) == "question":  # the first search is the question itself
            kwargs["assistant_prefix"] = "<|begin_search_query|>" + " ".join(str(example["question"]).split())
            llm = _FirstQueryLLM(llm, kwargs["assistant_prefix"], "<|end_search_query|>")
        engine = self.cls(llm, self.ctx.retriever_for(example), **kwargs)
        t0 = time.perf_counter()
        traj = await engine.run({"id": example["id"], "question": example["question"]})
        return _from_trajectory(traj, wall_s=time.perf_counter() - t0)


class _FirstQueryLLM:
    """Wraps an LLM so that the turn right after the forced `prefix` closes the query tag without sampling.

    Option `first_query=question` of search-o1: small models given `<|begin_search_query|>` rarely close
    the tag, so the first query is the question itself (a baseline setting, recorded in the run config);
    every later turn, and Reason-in-Documents, is the model's own.
    """

    def __init__(self, llm: LLM, prefix: str, end_tag: str):
        self._llm, self._prefix, self._end = llm, prefix, end_tag

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    async def generate(self, prompt: Any, params: SamplingParams) -> list[Completion]:
        if isinstance(prompt, str) and prompt.endswith(self._prefix):
            text = self._end if params.include_stop else ""
            return [Completion(text=text, finish_reason="stop", stop_reason=self._end) for _ in range(params.n)]
        return await self._llm.generate(prompt, params)


class TIREngine:
    name = "tir"

    def __init__(self, ctx: EngineContext):
        from agentic_infer.engines.tir import DEFAULT_SAMPLING, TIR
        from agentic_infer.tools.sandbox import PythonSandbox

        self.ctx, self.base = ctx, DEFAULT_SAMPLING
        kwargs = _accepted(TIR, ctx.options.engine_options, "tir")
        self.make = lambda sampling: TIR(ctx.llm, PythonSandbox(), sampling=sampling, **kwargs)

    async def solve(self, example: Mapping[str, Any], *, sample: int) -> Attempt:
        o = self.ctx.options
        sampling = self.base.replace(max_tokens=o.max_tokens, seed=o.seed + sample,
                                     **({"temperature": o.temperature} if o.temperature is not None else {}))
        t0 = time.perf_counter()
        traj = await self.make(sampling).run({"id": example["id"], "question": example["question"]})
        return _from_trajectory(traj, wall_s=time.perf_counter() - t0)


class DeepConfEngine:
    name = "deepconf"

    def __init__(self, ctx: EngineContext):
        from agentic_infer.engines.deepconf_engine import DeepConf

        o = ctx.options
        opts = {"mode": "offline", "budget": max(o.samples, 2), "max_tokens": o.max_tokens, "seed": o.seed,
                **({"temperature": o.temperature} if o.temperature is not None else {}), **o.engine_options}
        if opts["mode"] == "online":
            opts.setdefault("warmup", min(16, opts["budget"]))
        extract = ctx.task.extract
        self.ctx, self.engine = ctx, DeepConf(ctx.llm, extract_answer=lambda t: extract(t), **opts)

    async def solve(self, example: Mapping[str, Any], *, sample: int) -> Attempt:
        res = await self.engine.run({"id": example["id"], "question": example["question"]})
        trajs = res.trajectories
        answers = [tr.answer for tr in res.traces]
        extra = {"deepconf": {k: v for k, v in res.to_dict().items() if k not in ("traces", "question")},
                 "trace_conf": [{"answer": tr.answer, "votes": tr.votes, "tokens": tr.tokens,
                                 **{k: tr.confidences.get(k) for k in ("mean", "bottom10", "lowest", "tail")}}
                                for tr in res.traces]}
        text = next((tr.trajectory.completion_text for tr in res.traces if tr.answer == res.answer),
                    trajs[0].completion_text if trajs else "")
        return Attempt(prediction=res.answer, text=text, trajectories=trajs, completion_tokens=res.tokens_generated,
                       prompt_tokens=sum(t.usage.prompt_tokens for t in trajs), llm_calls=len(trajs),
                       wall_s=res.wall_s, samples=answers, extra=extra)


class TreeEngine:
    """LATS / RAP from `agentic_infer.engines.tree` (`run_lats` / `run_rap`), with the environment the task needs.

    LATS: Game of 24 -> `Game24LATSEnv`; QA with a corpus -> `RetrievalQAEnv` (search/lookup/finish over the
    run's retriever); math -> `MathEnv`. RAP: Game of 24 -> `Game24RAPTask`; math -> `GSM8KTask`.
    Feedback is judge-only (no gold is given to the search: no oracle). `--opt` pairs go to run_lats/run_rap
    (iterations, n_children / n_actions, depth_limit, ...); the defaults are small (iterations=4) for CPU runs.
    `budget` and `options` take JSON objects: `--opt budget='{"tokens": 3000}'` (a `Budget`, which then
    replaces `iterations`), `--opt options='{"action_max_tokens": 24}'` (`LATSOptions` / `RAPOptions`).
    """

    def __init__(self, ctx: EngineContext, name: str):
        try:
            self.tree = importlib.import_module("agentic_infer.engines.tree")
            self.fn = getattr(importlib.import_module(f"agentic_infer.engines.tree.{name}"), f"run_{name}")
        except (ModuleNotFoundError, AttributeError) as e:
            raise ConfigError(f"engine {name!r} needs agentic_infer.engines.tree.{name}.run_{name}, which this "
                              f"install does not have ({e}); register another with eval.engines.register_engine") from None
        self.name, self.ctx = name, ctx
        self.kwargs = {"iterations": 4, **_accepted_fn(self.fn, ctx.options.engine_options, name)}
        for key, cls in (("budget", self.tree.Budget), ("options", self._options_class())):
            if isinstance(self.kwargs.get(key), Mapping):  # --opt budget='{"tokens": 3000}'
                try:
                    self.kwargs[key] = cls(**self.kwargs[key])
                except TypeError as e:
                    raise ConfigError(f"engine {name!r}: --opt {key}={self.kwargs[key]!r}: {e}") from None
        self.make_env = self._env_factory(ctx.task.family, ctx.task.name)

    def _options_class(self) -> type:
        module = importlib.import_module(f"agentic_infer.engines.tree.{self.name}")
        return getattr(module, f"{self.name.upper()}Options")

    def _env_factory(self, family: str, task: str) -> Callable[[Mapping[str, Any]], Any]:
        ctx = self.ctx
        if self.name == "lats":
            if task == "game24":
                return lambda ex: self.tree.Game24LATSEnv(ex["question"])
            envs = importlib.import_module("agentic_infer.engines.tree.lats_envs")
            if family == "math":
                return lambda ex: envs.MathEnv(ex["question"])
            if family in ("qa", "multihop"):
                if ctx.retriever_for is None:
                    raise ConfigError("engine 'lats' on a QA task searches: pass --index DIR or --corpus NAME")
                return lambda ex: envs.RetrievalQAEnv(ex["question"], ctx.retriever_for(ex), k=ctx.options.top_k)
        else:
            tasks = importlib.import_module("agentic_infer.engines.tree.rap_tasks")
            if task == "game24":
                return lambda ex: tasks.Game24RAPTask(ex["question"])
            if family == "math":
                return lambda ex: tasks.GSM8KTask(ex["question"])
        raise ConfigError(f"engine {self.name!r} has no environment for task {task!r} ({family}); "
                          "it runs on game24, math tasks" + (" and QA tasks with a corpus" if self.name == "lats" else ""))

    async def solve(self, example: Mapping[str, Any], *, sample: int) -> Attempt:
        t0 = time.perf_counter()
        res = await self.fn(self.ctx.llm, self.make_env(example), **self.kwargs)
        traj = res.to_trajectory(engine=self.name)
        traj.example = {"id": example["id"], "question": example["question"]}
        att = _from_trajectory(traj, wall_s=time.perf_counter() - t0)
        att.text = res.answer or ""
        att.tool_calls = sum(1 for st in traj.steps if st.action.lower().startswith(("search[", "lookup[")))
        att.extra = {"tree": {"stop_reason": res.stop_reason, "feedback": res.feedback, "actions": res.actions,
                              "nodes": len(res.tree.nodes) if hasattr(res.tree, "nodes") else None}}
        return att


def _accepted_fn(fn: Callable[..., Any], options: Mapping[str, Any], engine: str) -> dict[str, Any]:
    params = inspect.signature(fn).parameters
    bad = sorted(set(options) - set(params))
    if bad:
        raise ConfigError(f"engine {engine!r}: unknown option(s) {bad}; it takes {sorted(set(params) - {'llm'})}")
    return dict(options)


register_engine(EngineSpec("direct", "one generation, short-answer prompt", lambda c: PromptEngine(c, "direct")))
register_engine(EngineSpec("cot", "one generation, step-by-step prompt", lambda c: PromptEngine(c, "cot")))
register_engine(EngineSpec("search-o1", "Search-o1 agentic search with Reason-in-Documents", SearchO1Engine,
                           needs_retriever=True))
register_engine(EngineSpec("tir", "tool-integrated reasoning with a Python sandbox", TIREngine))
register_engine(EngineSpec("deepconf", "DeepConf confidence-filtered voting over sampled traces", DeepConfEngine,
                           samples_internally=True))
register_engine(EngineSpec("lats", "LATS tree search (agentic_infer.engines.tree)", lambda c: TreeEngine(c, "lats")))
register_engine(EngineSpec("rap", "RAP MCTS with the LLM as world model (agentic_infer.engines.tree)",
                           lambda c: TreeEngine(c, "rap")))
