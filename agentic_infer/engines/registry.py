"""The engine registry: one vocabulary of engine names, and one way to build any of them from its config.

    spec = get_engine("search-o1")
    cfg = engine_config(spec, ["max_searches=3", "sampling.temperature=0.2"])   # or a mapping, or file=YAML
    engine = build_engine(spec, EngineParts(llm=llm, task=task, retriever_for=retriever_for), cfg, samples=1)
    rollout = await engine.run({"id": "q1", "question": "..."})

Every engine has ONE validated config dataclass with one nested `sampling` (`DirectConfig`, `SearchO1Config`,
`TIRConfig`, `DeepConfConfig`, `LATSOptions`, `RAPOptions`); `engine_config` builds it through
`agentic_infer.config.build_config`: the dataclass defaults < the registry's run defaults for the engine
(`EngineSpec.defaults`, e.g. short CPU-sized searches; shown by `--show-config`) < the sample defaults when
`samples` > 1 < the YAML file < the `--set KEY=VALUE` overrides. What the engine reads is the config, so a run's
identity is `config_to_dict(cfg)`. `agentic eval run`, synth's rollout step and GRPO build engines here;
`agentic run NAME` uses the same names and config classes.

With `samples` = k > 1, `build_engine` runs k engines seeded `sampling.seed`..+k-1 (seed None counts from 0) as one
`Group` (one Rollout per example holding every sample), unless the engine samples internally (deepconf: k is its
trace budget). How a caller reads an engine's Rollout is part of its entry: `text` (the output an answer is scored
on), `tool_calls` and `report` (extra fields, e.g. a tree search's stop reason).
Add an engine with `register_engine(EngineSpec(...))`.
Engines acting in stateful environments (tau-bench, TravelPlanner, BFCL): the "env" entry (`env_agent.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.config import build_config, parse_overrides
from agentic_infer.engines.base import Engine
from agentic_infer.engines.group import Group
from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout

Settings = Sequence[str] | Mapping[str, Any]


@dataclass
class EngineParts:
    """What an engine is built over: the LLM, the benchmark task (prompts, answer extraction, family; None for
    plain questions) and `retriever_for(example)` (None without a corpus)."""

    llm: LLM
    task: Any = None
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
    """One entry: the config class, how to build the engine from (parts, config), and how to read its Rollout."""

    name: str
    description: str
    config: type
    build: Callable[[EngineParts, Any], Engine]
    defaults: Mapping[str, Any] = field(default_factory=dict)  # run defaults over the dataclass's (dotted keys)
    sample_defaults: Callable[[int], Mapping[str, Any]] = lambda k: {}  # extra defaults for k > 1 samples
    needs_retriever: bool = False
    samples_internally: bool = False  # the engine draws `samples` traces itself (deepconf)
    text: Callable[[Rollout], str] = answer_text  # the output the answer is scored on
    tool_calls: Callable[[Rollout], int] = lambda r: r.usage.tool_calls
    report: Callable[[Rollout], dict[str, Any]] = lambda r: {}  # extra row fields


ENGINES: dict[str, EngineSpec] = {}


def register_engine(spec: EngineSpec) -> EngineSpec:
    ENGINES[spec.name] = spec
    return spec


def get_engine(name: str | EngineSpec) -> EngineSpec:
    """The entry for `name` (a ConfigError lists the names; `search_o1` is not a name, `search-o1` is)."""
    if isinstance(name, EngineSpec):
        return name
    if name not in ENGINES:
        hint = f" (did you mean {name.replace('_', '-')!r}?)" if name.replace("_", "-") in ENGINES else ""
        raise ConfigError(f"unknown engine {name!r}{hint}; choose one of {', '.join(ENGINES)}")
    return ENGINES[name]


def engine_config(name: str | EngineSpec, settings: Settings = (), *, file: str | Path | None = None,
                  samples: int = 1, source: str = "--set") -> Any:
    """The engine's config from its run defaults, the YAML `file` and `settings` (see the module docstring)."""
    spec = get_engine(name)
    if not isinstance(samples, int) or samples < 1:
        raise ConfigError(f"samples={samples!r}: must be an integer >= 1")
    base = build_config(spec.config, overrides={**spec.defaults, **(spec.sample_defaults(samples) if samples > 1
                                                                      else {})}, source=f"engine {spec.name!r}")
    return build_config(spec.config, file=file, overrides=parse_overrides(settings), base=base, source=source)


def check_retriever(name: str | EngineSpec, has_source: bool) -> None:
    """A ConfigError when the engine searches and the run names no index or corpus."""
    spec = get_engine(name)
    if spec.needs_retriever and not has_source:
        raise ConfigError(f"engine {spec.name!r} searches: give an index (--index DIR) or a corpus "
                          "(--corpus per-question|pooled|wiki-vital)")


def with_seed(cfg: Any, seed: int | None) -> Any:
    """`cfg` with `sampling.seed` set (every registered config has a nested `sampling`)."""
    return dataclasses.replace(cfg, sampling=cfg.sampling.replace(seed=seed))


def build_engine(name: str | EngineSpec, parts: EngineParts, cfg: Any = None, *, samples: int = 1) -> Engine:
    """The engine for `parts` with config `cfg` (default: `engine_config(name, samples=samples)`): one engine,
    or a `Group` of `samples` seeded ones (see the module docstring)."""
    spec = get_engine(name)
    if cfg is None:
        cfg = engine_config(spec, samples=samples)
    if not isinstance(cfg, spec.config):
        raise ConfigError(f"engine {spec.name!r} takes a {spec.config.__name__}, not a {type(cfg).__name__}")
    check_retriever(spec, parts.retriever_for is not None)
    if spec.samples_internally or samples == 1:
        return spec.build(parts, cfg)
    first = cfg.sampling.seed or 0
    return Group.seeded(lambda seed: spec.build(parts, with_seed(cfg, seed)), samples, seed=first, name=spec.name)


def seeded_factory(name: str | EngineSpec, settings: Mapping[str, Any] | None = None, *, index: str = ""
                   ) -> Callable[[Any, int | None], Engine]:
    """(llm, seed) -> a fresh engine `name` over `llm`, its config from `settings` (as `agentic run --set`
    gives it), its sampling seeded per episode; a searching engine reads `index` ("" = the default
    wiki-vital index). What RL rollouts build one episode with (TRL's rollout_func, verl's agent loop)."""
    from agentic_infer.tools.retrieval.corpora import retriever_factory

    spec = get_engine(name)
    cfg = engine_config(spec, dict(settings or {}), source="engine_config")
    retriever_for = retriever_factory(index=index or None, default="wiki-vital") if spec.needs_retriever else None
    return lambda llm, seed: build_engine(spec, EngineParts(llm=llm, retriever_for=retriever_for), with_seed(cfg, seed))


class PerExample:
    """An engine built for each example (its retriever depends on the example, e.g. --corpus per-question)."""

    def __init__(self, name: str, make: Callable[[Mapping[str, Any]], Engine]):
        self.name, self.make = name, make

    async def run(self, example: Mapping[str, Any]) -> Rollout:
        return await self.make(example).run(example)


# Importing the built-in entries registers them.
from agentic_infer.engines import registry_builtin  # noqa: E402,F401
