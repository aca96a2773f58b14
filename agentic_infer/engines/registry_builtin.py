"""The built-in entries of the engine registry (`agentic_infer.engines.registry`).

`direct` / `cot` (one generation with the task's prompt and answer extraction), `search-o1` (over the run's
retriever; `--set first_query=question` makes the first search the question itself), `tir` (the Python
sandbox), `deepconf` (offline by default, its traces are the samples), `lats` / `rap` (the environment the
task needs, from `agentic_infer.engines.tree.envs`; judge feedback only, no gold), `env` (the env agent over a
registered environment: `--set env=NAME`; an env eval task sets it). Run defaults are sized for
CPU runs (`defaults`); `--show-config` prints the effective config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentic_infer.engines.deepconf import DeepConfConfig
from agentic_infer.engines.direct import DirectConfig
from agentic_infer.engines.env_agent import EnvAgentConfig
from agentic_infer.engines.registry import EngineParts, EngineSpec, PerExample, register_engine
from agentic_infer.engines.search_o1 import SearchO1Config
from agentic_infer.engines.tir import TIRConfig
from agentic_infer.engines.tree.lats import LATSOptions
from agentic_infer.engines.tree.rap import RAPOptions
from agentic_infer.types import Rollout

SEEDED = {"sampling.seed": 0}  # registry runs are reproducible unless told otherwise
AGENT = {"sampling.max_tokens": 512, **SEEDED}
TREE = {"iterations": 4}


class _ProbeRetriever:
    """Stands in for the per-example retriever while the search-o1 builder validates its config."""

    def search(self, query: str, k: int = 10) -> list[Any]:
        return []

    def get(self, doc_id: str) -> Any:
        return None


def _prompted(family: str):
    def build(parts: EngineParts, cfg: DirectConfig):
        from agentic_infer.engines.direct import COT_PROMPT, DIRECT_PROMPT, Direct
        from agentic_infer.verify import boxed_answer

        task = parts.task
        if task is None:
            return Direct(parts.llm, cfg, prompt=COT_PROMPT if family == "cot" else DIRECT_PROMPT,
                          extract=boxed_answer, name=family)
        return Direct(parts.llm, cfg, prompt=lambda ex: task.prompt(family, ex), extract=task.extract, name=family)

    return build


def _search_o1(parts: EngineParts, cfg: SearchO1Config):
    from agentic_infer.engines.search_o1 import SearchO1

    SearchO1(parts.llm, _ProbeRetriever(), cfg)  # an invalid combination fails now, not on every example
    retriever_for = parts.retriever_for
    return PerExample("search-o1", lambda ex: SearchO1(parts.llm, retriever_for(ex), cfg))


def _tir(parts: EngineParts, cfg: TIRConfig):
    from agentic_infer.engines.tir import TIR
    from agentic_infer.tools.sandbox import PythonSandbox

    return TIR(parts.llm, PythonSandbox(), cfg)


def _deepconf(parts: EngineParts, cfg: DeepConfConfig):
    from agentic_infer.engines.deepconf import DeepConf

    if parts.task is None:
        return DeepConf(parts.llm, cfg)
    return DeepConf(parts.llm, cfg, extract_answer=parts.task.extract)


def _lats(parts: EngineParts, cfg: LATSOptions):
    from agentic_infer.engines.tree import LATS
    from agentic_infer.engines.tree.envs import env_kind, lats_env_factory

    kind = env_kind(parts.task, "lats") if parts.task is not None else "qa"
    return LATS(parts.llm, lats_env_factory(kind, retriever_for=parts.retriever_for, with_gold=False), cfg)


def _rap(parts: EngineParts, cfg: RAPOptions):
    from agentic_infer.engines.tree import RAP
    from agentic_infer.engines.tree.envs import env_kind, rap_task_factory
    from agentic_infer.errors import ConfigError

    if parts.task is None:
        raise ConfigError("engine 'rap' needs a task (game24 or a math benchmark) to choose its world model")
    return RAP(parts.llm, rap_task_factory(env_kind(parts.task, "rap"), with_gold=False), cfg)


def _tree_tool_calls(rollout: Rollout) -> int:
    """Search / lookup actions on the chosen path (a retrieval QA environment's tool calls)."""
    path = rollout.trajectories[0].steps if rollout.trajectories else []
    return sum(1 for st in path if st.action.lower().startswith(("search[", "lookup[")))


def _tree_report(rollout: Rollout) -> dict[str, Any]:
    t = rollout.metadata.get("tree", {})
    return {"tree": {"stop_reason": t.get("stop_reason"), "feedback": t.get("feedback"), "actions": t.get("actions"),
                     "nodes": len(t.get("nodes") or ())}}


def _sampled_direct(k: int) -> Mapping[str, Any]:
    return {"sampling.temperature": 0.7, "sampling.top_p": 0.95}  # k samples of a greedy prompt would be equal


register_engine(EngineSpec("direct", "one generation, short-answer prompt", DirectConfig, _prompted("direct"),
                           defaults=SEEDED, sample_defaults=_sampled_direct))
register_engine(EngineSpec("cot", "one generation, step-by-step prompt", DirectConfig, _prompted("cot"),
                           defaults=SEEDED, sample_defaults=_sampled_direct))
register_engine(EngineSpec("search-o1", "Search-o1 agentic search with Reason-in-Documents", SearchO1Config,
                           _search_o1, defaults={"max_searches": 5, "k": 5, **AGENT}, needs_retriever=True))
register_engine(EngineSpec("tir", "tool-integrated reasoning with a Python sandbox", TIRConfig, _tir, defaults=AGENT))
register_engine(EngineSpec("deepconf", "DeepConf confidence-filtered voting over sampled traces", DeepConfConfig,
                           _deepconf, defaults={"mode": "offline", "budget": 2, **AGENT},
                           sample_defaults=lambda k: {"budget": k}, samples_internally=True,
                           report=lambda r: {"deepconf": r.metadata.get("deepconf")}))
for _name, _cls, _build, _what in (("lats", LATSOptions, _lats, "LATS tree search"),
                                   ("rap", RAPOptions, _rap, "RAP MCTS with the LLM as world model")):
    register_engine(EngineSpec(_name, f"{_what} (agentic_infer.engines.tree)", _cls, _build, defaults=TREE,
                               text=lambda r: r.answer or "", tool_calls=_tree_tool_calls, report=_tree_report))


def _env(parts: EngineParts, cfg: EnvAgentConfig):
    from agentic_infer.engines.env_agent import EnvAgent

    return EnvAgent(parts.llm, cfg)


def _env_report(rollout: Rollout) -> dict[str, Any]:
    t = rollout.trajectory
    if t is None:
        return {}
    verdict = t.metadata.get("verdict") or {}
    return {"env": {"failed": verdict.get("failed"), "done": t.metadata.get("env_done"),
                    "finish_reason": t.finish_reason, "digest": t.metadata.get("env_digest")}}


register_engine(EngineSpec("env", "the env agent: tool calls against a registered environment (agentic envs)",
                           EnvAgentConfig, _env, defaults={"max_calls": 8, "max_turns": 12, "max_tokens_per_turn": 512,
                                                           "max_total_tokens": 4096, **SEEDED},
                           sample_defaults=_sampled_direct, report=_env_report))
