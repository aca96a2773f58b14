"""The engine registry: one vocabulary of names, one config per engine, and the settings reach the backend from
every entry point (eval, synth, GRPO) the same way."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentic_infer.config import config_to_dict
from agentic_infer.engines.registry import ENGINES, EngineParts, build_engine, engine_config, get_engine
from agentic_infer.errors import ConfigError
from agentic_infer.tasks import get_task
from agentic_infer.testing import FakeLLM

GAME24 = {"id": "p1", "question": "4 6 1 1"}


def test_one_vocabulary_of_names_for_agentic_run_and_the_registry():
    from typer.main import get_command

    from agentic_infer import cli

    cli._register()
    run_commands = set(get_command(cli.app).commands["run"].commands)
    assert run_commands <= set(ENGINES) and {"search-o1", "tir", "deepconf", "lats", "rap"} <= run_commands
    with pytest.raises(ConfigError, match="did you mean 'search-o1'"):
        get_engine("search_o1")


def test_run_defaults_then_settings_on_top():
    cfg = engine_config("search-o1", ["max_searches=3", "sampling.temperature=0.2"])
    assert (cfg.max_searches, cfg.k, cfg.sampling.max_tokens, cfg.sampling.temperature, cfg.sampling.seed) == (
        3, 5, 512, 0.2, 0)  # 5 documents and 512 tokens: the registry's run defaults; the rest from --set
    assert engine_config("cot", samples=4).sampling.temperature == 0.7  # k samples of a greedy prompt are not k
    assert engine_config("cot", ["sampling.temperature=0.1"], samples=4).sampling.temperature == 0.1
    assert engine_config("deepconf", samples=6).budget == 6  # its own traces are the samples
    with pytest.raises(ConfigError, match="unknown setting 'max_searches' for DirectConfig"):
        engine_config("direct", ["max_searches=3"])  # a direct run has no searches: refused, not silently kept
    with pytest.raises(ConfigError, match="'top_k' is renamed 'k'"):
        engine_config("search-o1", ["top_k=3"])


def test_samples_are_seeded_engines_whose_seeds_reach_the_backend():
    llm = FakeLLM(reply="\\boxed{24}")
    cfg = engine_config("cot", ["sampling.seed=10", "sampling.max_tokens=16"], samples=3)
    engine = build_engine("cot", EngineParts(llm=llm, task=get_task("game24")), cfg, samples=3)
    rollout = asyncio.run(engine.run(GAME24))
    assert len(rollout.trajectories) == 3
    assert [p.seed for p in llm.params] == [10, 11, 12] and {p.max_tokens for p in llm.params} == {16}
    assert {p.temperature for p in llm.params} == {0.7}


@pytest.mark.parametrize("engine", ["lats", "rap"])
def test_tree_searches_get_the_sampling_they_are_given(engine):
    """Before the registry, eval's --temperature / --max-tokens / --seed were silently ignored for lats and rap."""
    llm = FakeLLM(lambda p: "4 * 6 = 24\nScore: 7")
    cfg = engine_config(engine, ["iterations=1", "sampling.temperature=0.3", "sampling.seed=5",
                                 "sampling.max_tokens=11"])
    asyncio.run(build_engine(engine, EngineParts(llm=llm, task=get_task("game24")), cfg).run(GAME24))
    actions = [p for p in llm.params if p.max_tokens == 11]  # the action proposals (value prompts have their own)
    assert actions and {p.temperature for p in actions} == {0.3} and {p.seed for p in actions} == {5}


def test_a_search_engine_needs_a_corpus():
    with pytest.raises(ConfigError, match="searches: give an index"):
        build_engine("search-o1", EngineParts(llm=FakeLLM(reply="")), engine_config("search-o1"))


async def test_eval_and_synth_build_the_same_engine_from_the_same_settings(tmp_path):
    """The same `--set` settings give the same config and the same requests at the backend in eval and synth."""
    from eval.runner import RunConfig, run_eval
    from synth.pipeline.rollout import RolloutStep

    settings = {"sampling": {"max_tokens": 33, "temperature": 0.4}}
    data = tmp_path / "g.csv"
    data.write_text("Rank,Puzzles\n1,4 6 1 1\n")
    eval_llm, synth_llm = FakeLLM(reply="\\boxed{24}"), FakeLLM(reply="\\boxed{24}")
    cfg = RunConfig(task="game24", data=str(data), engine="cot", out=str(tmp_path / "e"), settings=settings)
    await run_eval(cfg, llm=eval_llm, progress=False)
    step = RolloutStep(engine="cot", backend="fake://", task="game24", settings=settings, make_llm=lambda: synth_llm)
    assert config_to_dict(step.config) == config_to_dict(cfg.engine_config())
    engine, _ = step._build()
    await engine.run({"id": "0", "question": "4 6 1 1"})
    assert eval_llm.params == synth_llm.params and eval_llm.params[0].max_tokens == 33
    recorded = json.loads((tmp_path / "e" / "run.json").read_text())
    assert recorded["identity"]["engine_config"] == config_to_dict(cfg.engine_config())  # identity = what it reads
