"""The env agent (agentic_infer.engines.env_agent) on the scripted CounterEnv: steps and their states, masked
observations, token exactness, refusals, the user-reply hook, terminal tools, the verdict in rewards, the
registry entry, and one short run of the real embedded model (mechanics only)."""

from __future__ import annotations

import json

import pytest

from agentic_infer.engines.env_agent import EnvAgent, EnvAgentConfig
from agentic_infer.engines.loop import user_turn
from agentic_infer.engines.registry import EngineParts, build_engine, engine_config, seeded_factory
from agentic_infer.envs.registry import ENVS, register_env
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM, counter_env_spec
from agentic_infer.types import IGNORE_INDEX, Rollout

ENV = "counter-test"


@pytest.fixture(autouse=True)
def counter_env():
    register_env(counter_env_spec(ENV))
    yield
    ENVS.pop(ENV, None)


def call(name: str, **arguments) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


def agent(llm, **overrides) -> EnvAgent:
    return EnvAgent(llm, EnvAgentConfig(env=ENV, max_tokens_per_turn=128, **overrides))


async def test_steps_states_rewards_and_verdict():
    llm = FakeLLM([f"I add two. {call('add', n=2)}", call("add", n=1), "The counter is at 3 now."])
    rollout = await agent(llm).run({"id": "c1", "target": 3})
    traj = rollout.trajectory
    assert traj.finish_reason == "answer" and traj.token_exact
    # one Step per tool call; the state BEFORE each call as canonical text; the env's per-step reward
    assert [(s.action, s.arguments) for s in traj.steps] == [("add", {"n": 2}), ("add", {"n": 1})]
    assert [s.state for s in traj.steps] == ['{"value":0}', '{"value":2}']
    assert [s.reward for s in traj.steps] == [1.0, 1.0]
    assert [s.observation for s in traj.steps] == ["The counter is now 2.", "The counter is now 3."]
    assert traj.steps[0].metadata["info"] == {"delta": 2} and traj.steps[0].metadata["refused"] is False
    assert traj.steps[0].segment == 1 and traj.segments[1].kind == "model"
    # value == target and "3" reported: both checks pass
    assert traj.rewards == {"env_reward": 1.0, "success": 1.0} and rollout.rewards == traj.rewards
    assert traj.metadata["verdict"]["success"] is True and traj.metadata["verdict"]["failed"] == {}
    assert rollout.answer == traj.answer == "The counter is at 3 now."
    assert traj.metadata["env_digest"] and traj.metadata["env"] == ENV and traj.usage.tool_calls == 2
    assert Rollout.from_json(rollout.to_json()).trajectory.steps[1].state == '{"value":2}'


async def test_prompt_shows_instructions_tools_and_first_observation():
    llm = FakeLLM(["Done."])
    traj = (await agent(llm).run({"id": "c1", "target": 3})).trajectory
    system, user = traj.segments[0].metadata["messages"]
    assert system["role"] == "system" and system["content"].startswith("You operate a counter.")
    tools = system["content"].split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
    assert [json.loads(t)["function"]["name"] for t in tools] == ["add", "get", "stop"]
    assert '<tool_call>\n{"name": <function-name>, "arguments": <arguments-json-object>}\n</tool_call>' in system["content"]
    assert user == {"role": "user", "content": "Please bring the counter from 0 to 3."}
    # the verdict on a message that does nothing: value check fails, "3" not stated -> reward 0/2
    assert traj.rewards == {"env_reward": 0.0, "success": 0.0}
    assert set(traj.metadata["verdict"]["failed"]) == {"value", "reported"}


async def test_observations_are_masked_and_ids_are_what_the_model_saw():
    llm = FakeLLM([call("add", n=3), "It is 3."])
    traj = (await agent(llm).run({"id": "c1", "target": 3})).trajectory
    assert [s.kind for s in traj.segments] == ["prompt", "model", "observation", "model"]
    mask, ids = traj.loss_mask(), traj.token_ids()
    obs = traj.segments[2]
    start, end = traj.token_span(2)
    assert mask[start:end] == [0] * len(obs.token_ids) and "<tool_response>\nThe counter is now 3.\n" in obs.text
    assert all(mask[i] == 1 for i in range(*traj.token_span(1)))
    row = traj.sft_row()
    n_prompt = len(traj.segments[0].token_ids)
    labels = row["labels"]
    assert all(v == IGNORE_INDEX for v in labels[:n_prompt])
    assert all(v == IGNORE_INDEX for v in labels[start:end])
    assert labels[end:] == ids[end:]
    # every generation was conditioned on exactly the trajectory's ids so far
    for prompt in llm.prompt_ids:
        assert ids[:len(prompt)] == prompt


async def test_a_refused_call_is_an_observation_and_a_tool_error():
    llm = FakeLLM([call("add", n=50), call("nope"), call("add", n=3), "3."])
    traj = (await agent(llm).run({"id": "c1", "target": 3})).trajectory
    first, unknown, ok = traj.steps
    assert first.error == "Error: n must be an integer from -10 to 10, got 50" == first.observation
    assert first.metadata["refused"] is True and first.state == '{"value":0}' and first.reward is None
    assert unknown.error.startswith("Error: unknown tool 'nope'; available: add, get, stop")
    assert ok.error is None and ok.state == '{"value":0}'  # the refusals changed nothing
    assert traj.usage.tool_errors == 2 and traj.usage.tool_calls == 3
    assert "Error: n must be" in traj.segments[2].text and traj.segments[2].kind == "observation"
    assert traj.rewards["success"] == 1.0


async def test_the_reply_hook_continues_the_episode_as_a_user_turn():
    llm = FakeLLM(["Shall I add 3?", call("add", n=3), "Done, it is 3."])
    row = {"id": "c1", "target": 3, "replies": ["yes, go ahead"]}
    traj = (await agent(llm).run(row)).trajectory
    assert [s.kind for s in traj.segments] == ["prompt", "model", "model", "observation", "model", "observation",
                                              "model"]
    # the model ended its message by sampling the end-of-turn token (the backend does not return it): that
    # token is the model's, trained; the rest of the chat template's user turn (FakeLLM: ChatML) is masked
    eot, user = traj.segments[2], traj.segments[3]
    assert eot.text == "<|im_end|>" and eot.metadata["end_of_turn"] is True and eot.trainable
    assert user.text == "\n<|im_start|>user\nyes, go ahead<|im_end|>\n<|im_start|>assistant\n"
    assert user.metadata["status"] == "user" and user.metadata["reply"] == "yes, go ahead"
    assert llm.prompts[1].endswith("Shall I add 3?<|im_end|>" + user.text)
    row = traj.sft_row()
    trained = llm.tokenizer.decode([i for i, lab in zip(row["input_ids"], row["labels"]) if lab != IGNORE_INDEX])
    assert trained.startswith("Shall I add 3?<|im_end|><tool_call>") and "user" not in trained
    assert traj.metadata["messages_to_user"] == ["Shall I add 3?", "Done, it is 3."]
    assert traj.answer == "Done, it is 3." and traj.finish_reason == "answer"
    # the final message states "3" and the state check passes
    assert traj.rewards["success"] == 1.0 and traj.token_exact
    assert llm.remaining == 0


async def test_a_terminal_tool_ends_the_episode():
    llm = FakeLLM([call("add", n=3), call("stop"), "never generated"])
    traj = (await agent(llm).run({"id": "c1", "target": 3})).trajectory
    assert [s.action for s in traj.steps] == ["add", "stop"] and traj.metadata["env_done"] is True
    assert traj.finish_reason == "answer" and traj.metadata["ended_by"] == "stop"
    assert llm.remaining == 1 and traj.answer == ""
    # value at target, but nothing was said: one of two checks
    assert traj.rewards == {"env_reward": 0.5, "success": 0.0}


async def test_call_limit_and_turn_limit():
    llm = FakeLLM([call("add", n=1), call("add", n=1), "It is 1."])
    traj = (await agent(llm, max_calls=1).run({"id": "c1", "target": 3})).trajectory
    assert [s.metadata["status"] for s in traj.steps] == ["executed", "limit"]
    assert traj.metadata["verdict"]["info"] == {"value": 1}
    llm = FakeLLM([call("get")] * 3)
    traj = (await agent(llm, max_turns=2).run({"id": "c1", "target": 3})).trajectory
    assert traj.finish_reason == "max_turns" and traj.answer == "" and traj.rewards["success"] == 0.0


def test_config_validation():
    with pytest.raises(ConfigError, match="no JSON tool calls"):
        EnvAgentConfig(env=ENV, dialect="search_r1")
    with pytest.raises(ConfigError, match="unknown env 'nowhere'"):
        EnvAgentConfig(env="nowhere")
    with pytest.raises(ConfigError, match="max_turns=0"):
        EnvAgentConfig(env=ENV, max_turns=0)
    with pytest.raises(ConfigError, match="env is not set"):
        EnvAgent(FakeLLM(["x"]), EnvAgentConfig())


async def test_registry_entry_and_seeded_factory():
    cfg = engine_config("env", [f"env={ENV}", "max_calls=2"])
    assert cfg.env == ENV and cfg.max_calls == 2 and cfg.sampling.seed == 0
    make = seeded_factory("env", {"env": ENV})
    engine = make(FakeLLM([call("add", n=3), "3"]), 7)
    assert engine.config.sampling.seed == 7
    rollout = await engine.run({"id": "c1", "target": 3})
    assert rollout.engine == f"env/{ENV}" and rollout.rewards["success"] == 1.0
    # k samples: a Group of seeded env agents, each on a fresh env
    group = build_engine("env", EngineParts(llm=FakeLLM([call("add", n=3), "3", "no"])),
                         engine_config("env", {"env": ENV}, samples=2), samples=2)
    rollout = await group.run({"id": "c1", "target": 3})
    assert [t.rewards["success"] for t in rollout.trajectories] == [1.0, 0.0]
    assert [t.steps[0].state if t.steps else None for t in rollout.trajectories] == ['{"value":0}', None]


async def test_real_model_drives_the_env(embedded_llm):
    """SmolLM2-135M rarely calls tools well; only the mechanics are asserted."""
    engine = EnvAgent(embedded_llm, EnvAgentConfig(env=ENV, max_tokens_per_turn=48, max_turns=3,
                                                   max_total_tokens=144))
    rollout = await engine.run({"id": "c1", "target": 3, "replies": ["Please continue."]})
    traj = rollout.trajectory
    assert traj.token_exact and traj.finish_reason in ("answer", "length", "max_turns", "max_tokens")
    assert traj.usage.llm_calls >= 1 and set(traj.rewards) == {"env_reward", "success"}
    assert len(traj.steps) <= 3 and all(s.state is not None for s in traj.steps)
    assert len(traj.loss_mask()) == len(traj.token_ids())
    assert traj.segments[0].text.startswith("<|im_start|>system\nYou operate a counter.")
    # a user reply is spliced in the model's own template markup
    assert user_turn(embedded_llm, "yes") == "<|im_end|>\n<|im_start|>user\nyes<|im_end|>\n<|im_start|>assistant\n"


async def test_lockstep_batches_episodes_each_on_its_own_env():
    import re

    from agentic_infer.runner import run_many

    def policy(prompt: str) -> str:  # act once on the target the user named, then report it
        target = re.findall(r"from 0 to (\d+)\.", prompt)[-1]
        return f"It is {target}." if "The counter is now" in prompt else call("add", n=int(target))

    llm = FakeLLM(policy)
    rows = [{"id": "a", "target": 3}, {"id": "b", "target": 7}]
    rollouts = await run_many(agent(llm), rows, concurrency=2, scheduler="lockstep", progress=False)
    assert [r.trajectory.steps[0].arguments for r in rollouts] == [{"n": 3}, {"n": 7}]
    assert [r.rewards["success"] for r in rollouts] == [1.0, 1.0]
    assert [r.trajectory.metadata["verdict"]["info"]["value"] for r in rollouts] == [3, 7]


def test_compact_schemas_are_one_signature_line_per_tool():
    from agentic_infer.engines.env_agent import compact_schema

    tool = {"type": "function", "function": {"name": "modify", "description": "Modify an order. Only pending ones.",
            "parameters": {"type": "object", "required": ["order_id", "item_ids"], "properties": {
                "order_id": {"type": "string", "description": "the id"},
                "item_ids": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string"}}}}}
    assert compact_schema(tool) == "modify(order_id: string, item_ids: list[string], note?: string): Modify an order."


async def test_tool_schemas_setting_reaches_the_prompt():
    full = (await agent(FakeLLM(["Done."])).run({"id": "c1", "target": 3})).trajectory
    short = (await agent(FakeLLM(["Done."]), tool_schemas="compact").run({"id": "c1", "target": 3})).trajectory
    system_full, system_short = (t.segments[0].metadata["messages"][0]["content"] for t in (full, short))
    assert '"parameters"' in system_full and '"parameters"' not in system_short
    assert "\nadd(n: integer" in system_short
    with pytest.raises(ConfigError, match="tool_schemas='yaml'"):
        EnvAgentConfig(env=ENV, tool_schemas="yaml")
