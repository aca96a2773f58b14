"""GRPO over an env (`agentic train grpo` with `env: NAME`): settings, task rows, the env-verdict reward, and one
real TRL step on a tiny model where the env agent's episodes (CounterEnv) get verdict rewards that differ within a
group, per-step rewards and anchor states reach GiGPO, and the parameters move."""

from __future__ import annotations

import json

import pytest

from agentic_infer.envs.registry import ENVS, register_env
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM, counter_env_spec
from tests.conftest import shared_data

ENV = "counter-grpo"


@pytest.fixture(autouse=True)
def counter():
    register_env(counter_env_spec(ENV))
    yield
    ENVS.pop(ENV, None)


def settings(**kw):
    from train.grpo.config import GRPOSettings

    return GRPOSettings(**kw)


def test_env_settings_default_to_the_env_agent_and_its_verdict():
    s = settings(env=ENV)
    assert (s.engine, s.reward) == ("env", "env")
    assert (settings().engine, settings().reward) == ("search-o1", "em")  # unchanged without env
    with pytest.raises(ConfigError, match="engine='tir'.*driven by the env agent, engine 'env'"):
        settings(env=ENV, engine="tir")
    with pytest.raises(ConfigError, match="engine='env' needs env"):
        settings(engine="env")
    with pytest.raises(ConfigError, match="unknown env 'nope'"):
        settings(env="nope")
    with pytest.raises(ConfigError, match="reward='env' reads the env agent's verdict"):
        settings(reward="env")
    with pytest.raises(ConfigError, match="engine_config.env='retail' differs"):
        settings(env=ENV, engine_config={"env": "retail"})


def test_env_settings_through_the_config_overlay(tmp_path):
    from agentic_infer.config import build_config
    from train.grpo.config import GRPOSettings

    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(f"env: {ENV}\nenv_options: {{}}\nengine_config: {{max_calls: 2}}\n")
    s = build_config(GRPOSettings, file=cfg, overrides=["estimator.name=gigpo"])
    assert (s.engine, s.reward, s.engine_config, s.estimator.name) == ("env", "env", {"max_calls": 2}, "gigpo")


def test_env_rows_round_trip_and_the_shipped_task_file(tmp_path):
    from train.grpo.rollout import task_row_example
    from train.grpo.run import read_env_rows

    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps({"id": "c1", "target": 3}) + "\n" + json.dumps({"target": 4, "start": 1}) + "\n")
    rows = read_env_rows(settings(env=ENV, data=str(data)))
    assert [r["env_task_id"] for r in rows] == ["c1", "tasks:2"]
    assert [task_row_example(r["prompt"], i) for i, r in enumerate(rows)] == [
        {"id": "c1", "target": 3}, {"id": "tasks:2", "target": 4, "start": 1}]
    with pytest.raises(ConfigError, match="ships no task file"):
        read_env_rows(settings(env=ENV))
    with pytest.raises(ConfigError, match="not an env task row"):
        task_row_example("What is 2 + 2?", 0)
    path = shared_data("tools/tau_retail_db/retail_tasks_dev.jsonl")  # retail's default file, read as is
    retail = read_env_rows(settings(env="retail"))
    first = json.loads(path.read_text().splitlines()[0])
    assert len(retail) == len(path.read_text().splitlines()) and task_row_example(retail[0]["prompt"], 0) == first


def test_env_reward_reads_the_verdict_only():
    from agentic_infer.types import Trajectory
    from train.grpo.run import reward_function
    from train.rewards import RewardInput, env_reward

    t = Trajectory(rewards={"env_reward": 0.5, "success": 0.0})
    assert env_reward(RewardInput("anything", trajectory=t)) == 0.5
    assert env_reward(RewardInput("", trajectory=t), key="success") == 0.0
    with pytest.raises(ConfigError, match="carries no env verdict"):
        env_reward(RewardInput("the counter is 3", gold="3"))
    fn = reward_function(settings(env=ENV))
    assert fn.__name__ == "env" and fn(["x", "y"], trajectory=[t, t.to_dict()]) == [0.5, 0.5]


class CounterPolicy:
    """The env agent's turns on a counter task (target 3): the first episode of each pair adds 3 (a step towards
    the target: step reward 1) and reports 3 (verdict 1.0), the second adds -2 (away: step reward 0) and reports
    nothing useful (verdict 0.0)."""

    def __init__(self):
        self.episodes = 0

    def __call__(self, prompt: str) -> str:
        if "The counter is now" not in prompt:  # no tool result yet: the first turn
            self.episodes += 1
            n = 3 if self.episodes % 2 else -2
            return f'<tool_call>\n{{"name": "add", "arguments": {{"n": {n}}}}}\n</tool_call>'
        return "The counter is 3." if "now 3." in prompt else "I moved it."


def grpo_trainer(tokenizer, tmp_path):
    from agentic_infer.backends.hf import HFTokenizer
    from tests.train.trainers.conftest import tiny_model
    from train.grpo.run import build_grpo_trainer, read_env_rows
    from train.grpo.trainer import Estimator

    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps({"id": f"c{i}", "target": 3}) + "\n" for i in range(2)))
    s = settings(env=ENV, data=str(data), out=str(tmp_path / "o"), num_generations=2, batch_size=4, max_steps=1,
                 learning_rate=5e-2, max_completion_length=160, estimator=Estimator(name="gigpo"), mi_every=0,
                 precision="fp32", engine_config={"max_calls": 2, "max_tokens_per_turn": 48})
    rows = read_env_rows(s)
    trainer = build_grpo_trainer(s, tiny_model(tokenizer), tokenizer, rows)
    policy = FakeLLM(CounterPolicy(), tokenizer=HFTokenizer(tokenizer))  # scripted turns in the real vocabulary
    trainer.rollout_func.llm_factory = lambda _trainer: policy
    return trainer, rows


def test_one_grpo_step_over_an_env(tokenizer, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from train.grpo.trainer import Estimator

    torch.set_num_threads(1)
    trainer, rows = grpo_trainer(tokenizer, tmp_path)
    assert isinstance(trainer.estimator, Estimator) and trainer.estimator.name == "gigpo"
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1
    batch = trainer._generate_and_score_completions([dict(r) for r in rows for _ in range(2)])
    assert trainer._last_rewards.sum(1).tolist() == [1.0, 0.0, 1.0, 0.0]  # the env verdicts, differing in a group
    trajs = [t for r in trainer.rollout_func.last_rollouts for t in r.trajectories]
    for t, n, step_reward in zip(trajs, [3, -2, 3, -2], [1.0, 0.0, 1.0, 0.0]):
        [step] = t.steps
        assert (step.action, step.arguments, step.state, step.reward) == ("add", {"n": n}, '{"value":0}', step_reward)
        assert t.segments[step.segment].kind == "model" and t.token_exact
    # GiGPO by hand (mean_norm; each trajectory = the add turn + the answer turn): A^E = r - mean = ±0.5 over the
    # rows [1, 1, 0, 0]; both add steps start from the anchor {"value": 0}. The outcome is the episode's total, so
    # the step that already paid 1 gets 1 + (1 - 1) = 1 and the other 0 + (0 - 0) = 0 (not 2 and 0: the goal is
    # not paid twice): A^S = ±0.5. The add turn's tokens get A^E + A^S = ±1.0, the answer turn's A^E = ±0.5.
    adv, env = batch["advantages"], batch["tool_mask"] * batch["completion_mask"]
    for b, sign in enumerate([1, -1, 1, -1]):
        trained = adv[b][env[b] == 1]
        assert sorted(set(torch.round(trained, decimals=4).tolist())) == sorted([0.5 * sign, 1.0 * sign])
        assert (adv[b][env[b] == 0] == 0).all()
    assert trainer._metrics["train"]["diag/anchor_share"] == [1.0]  # every step shares its group's start state
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    trainer.train()
    assert any(not (v.detach() == before[k]).all() for k, v in trainer.model.named_parameters())
