"""One settings path: every engine's config has one nested `sampling`, and what `--set sampling.X=...`
(`build_config`) puts there is exactly what the backend is asked for (`FakeLLM.params`); documents per
search is `k`; the old flat keys are a ConfigError naming the new key."""

import pytest

from agentic_infer.config import build_config
from agentic_infer.engines.deepconf import DeepConf, DeepConfConfig
from agentic_infer.engines.direct import Direct, DirectConfig
from agentic_infer.engines.search_o1 import SearchO1, SearchO1Config
from agentic_infer.engines.tir import TIR, TIRConfig
from agentic_infer.engines.tree import LATS, RAP, Game24LATSEnv, Game24RAPTask, LATSOptions, RAPOptions
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever
from agentic_infer.types import SamplingParams

SETS = ["sampling.temperature=0.3", "sampling.max_tokens=7"]
DOCS = [Document(f"d{i}", f"Title {i}", f"paris is the capital number {i}") for i in range(4)]


async def test_direct_sends_the_configured_sampling():
    llm = FakeLLM(reply="\\boxed{1}")
    await Direct(llm, build_config(DirectConfig, overrides=SETS)).run({"question": "q"})
    assert llm.params == [SamplingParams(max_tokens=7, temperature=0.3, logprobs=0)]  # the rest: Direct's defaults


async def test_direct_sampling_keyword_is_an_override():
    llm = FakeLLM(reply="\\boxed{1}")
    await Direct(llm, sampling=SamplingParams(max_tokens=5, seed=3)).run({"question": "q"})
    assert llm.params == [SamplingParams(max_tokens=5, seed=3)]
    with pytest.raises(ConfigError, match="Group"):
        Direct(llm, sampling=SamplingParams(n=2))


async def test_search_o1_sends_the_configured_sampling_and_k_documents():
    llm = FakeLLM(["<|begin_search_query|>paris<|end_search_query|>", "\\boxed{1}"])
    sets = ["sampling.temperature=0.3", "sampling.max_tokens=64", "k=3", "rid=false"]  # 64: room for the query
    traj = (await SearchO1(llm, InMemoryRetriever(DOCS), build_config(SearchO1Config, overrides=sets))
            .run({"question": "q"})).trajectory
    assert len(llm.params) == 2
    for p in llm.params:  # the loop adds its stop tags; the rest is the config's (top_k 20: Search-o1's default)
        assert (p.temperature, p.max_tokens, p.top_p, p.top_k) == (0.3, 64, 0.8, 20)
    assert len(traj.steps[0].metadata["doc_ids"]) == 3 and traj.config["k"] == 3


def test_search_o1_top_k_is_no_longer_documents_per_search():
    for make in (lambda: SearchO1Config(top_k=3), lambda: SearchO1(FakeLLM(), InMemoryRetriever(DOCS), top_k=3),
                 lambda: build_config(SearchO1Config, overrides=["top_k=3"])):
        with pytest.raises(ConfigError, match="'top_k' is renamed 'k' \\(documents per search\\)") as e:
            make()
        assert "'sampling.top_k'" in str(e.value)
    assert build_config(SearchO1Config, overrides=["sampling.top_k=5"]).sampling.top_k == 5  # sampling's top_k


async def test_tir_sends_the_configured_sampling():
    llm = FakeLLM(["\\boxed{1}"])
    await TIR(llm, sandbox=None, config=build_config(TIRConfig, overrides=SETS)).run({"question": "q"})
    [p] = llm.params
    assert (p.temperature, p.max_tokens, p.top_p) == (0.3, 7, 0.95)


async def test_deepconf_sends_the_configured_sampling_with_a_seed_per_trace():
    llm = FakeLLM(reply="1")
    cfg = build_config(DeepConfConfig, overrides=[*SETS, "sampling.seed=5", "mode=offline", "budget=2"])
    await DeepConf(llm, cfg).run({"question": "q"})
    paper = dict(top_p=0.95, top_k=0, logprobs=20)  # the defaults not overridden
    assert llm.params == [SamplingParams(max_tokens=7, temperature=0.3, seed=5, **paper),
                          SamplingParams(max_tokens=7, temperature=0.3, seed=6, **paper)]


@pytest.mark.parametrize("key, new", [("max_tokens", "sampling.max_tokens"), ("temperature", "sampling.temperature"),
                                      ("top_p", "sampling.top_p"), ("top_k", "sampling.top_k"),
                                      ("stop", "sampling.stop"), ("seed", "sampling.seed"),
                                      ("top_logprobs", "sampling.logprobs")])
def test_deepconf_flat_sampling_keys_name_the_nested_one(key, new):
    with pytest.raises(ConfigError, match=f"'{key}' is renamed '{new}'"):
        build_config(DeepConfConfig, overrides=[f"{key}=1"])
    with pytest.raises(ConfigError, match=f"'{key}' is renamed '{new}'"):
        DeepConf(FakeLLM(), **{key: 1})


def test_deepconf_sampling_is_validated():
    with pytest.raises(ConfigError, match="sampling.logprobs=0"):
        build_config(DeepConfConfig, overrides=["sampling.logprobs=0"])
    with pytest.raises(ConfigError, match="sampling.n=2"):
        build_config(DeepConfConfig, overrides=["sampling.n=2"])


async def test_lats_sends_the_configured_sampling_and_seed():
    llm = FakeLLM(reply="x")  # an invalid step: no value call; the failed terminal gets a reflection
    cfg = build_config(LATSOptions, overrides=[*SETS, "sampling.seed=4", "n_children=2", "iterations=1"])
    await LATS(llm, lambda ex: Game24LATSEnv(ex["question"]), cfg).run({"question": "1 1 4 6"})
    action = SamplingParams(n=2, max_tokens=7, temperature=0.3, seed=4, logprobs=0)
    assert llm.params[:2] == [action, action]  # n=2 in one call: two samples
    assert set(llm.params) == {action, action.replace(n=1, max_tokens=128)}  # the reflection: its own max tokens


async def test_rap_sends_the_configured_sampling_and_seed():
    llm = FakeLLM(reply="x")  # no parseable action: the search stops after the first action call
    cfg = build_config(RAPOptions, overrides=[*SETS, "sampling.seed=4", "n_actions=2", "iterations=1"])
    await RAP(llm, lambda ex: Game24RAPTask(ex["question"]), cfg).run({"question": "1 1 4 6"})
    assert llm.params and set(llm.params) == {SamplingParams(n=2, max_tokens=7, temperature=0.3, seed=4, logprobs=5,
                                                             stop=("\n",))}


@pytest.mark.parametrize("cls, key, new", [
    (LATSOptions, "temperature", "sampling.temperature"), (LATSOptions, "seed", "sampling.seed"),
    (LATSOptions, "action_max_tokens", "sampling.max_tokens"), (RAPOptions, "temperature", "sampling.temperature"),
    (RAPOptions, "seed", "sampling.seed"), (RAPOptions, "action_max_tokens", "sampling.max_tokens"),
    (RAPOptions, "top_logprobs", "sampling.logprobs")])
def test_tree_options_old_keys_name_the_new_one(cls, key, new):
    with pytest.raises(ConfigError, match=f"'{key}' is renamed '{new}'"):
        build_config(cls, overrides=[f"{key}=1"])
    with pytest.raises(ConfigError, match=f"'{key}' is renamed '{new}'"):
        cls(**{key: 1})


def test_tree_sampling_defaults_and_n():
    assert LATSOptions().sampling == SamplingParams(max_tokens=64, temperature=0.7, logprobs=0)
    assert RAPOptions().sampling == SamplingParams(max_tokens=48, temperature=0.8, logprobs=5)
    with pytest.raises(ConfigError, match="LATSOptions.sampling.n=3"):
        build_config(LATSOptions, overrides=["sampling.n=3"])
