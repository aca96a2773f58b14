"""One environment factory: the tree-search worlds are envs of the env registry (and LATS / RAP build through
it), and LATS expands any snapshotting env (CounterEnv, tau-bench retail) through EnvWorld, siblings isolated."""

from __future__ import annotations

import asyncio
import json

import pytest
from tree_fakes import searched

from agentic_infer.engines.tree import LATS
from agentic_infer.engines.tree.env_world import EnvWorld, env_world_factory, parse_tool_action
from agentic_infer.engines.tree.envs import lats_env_factory, rap_task_factory
from agentic_infer.envs import get_env_spec, list_envs, make_env
from agentic_infer.envs.registry import ENVS, EnvSpec, register_env
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM, counter_env_spec
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever
from tests.conftest import shared_data

TREE_WORLDS = {"game24", "math", "qa", "program", "blocksworld"}
BLOCKS = "the a block is clear, the hand is empty, the a block is on top of the b block, the b block is on the table"
GOAL = "the b block is on top of the a block"


@pytest.fixture()
def counter():
    register_env(counter_env_spec("counter-tree"))
    yield "counter-tree"
    ENVS.pop("counter-tree", None)


# -- tree worlds as envs ---------------------------------------------------------------------------------------
def test_the_tree_worlds_are_registered_envs():
    names = {s.name for s in list_envs()}
    assert TREE_WORLDS <= names
    for n in TREE_WORLDS:
        spec = get_env_spec(n)
        assert spec.tools == ("act",) and spec.snapshots and spec.default_files == ()


def test_game24_env_acts_snapshots_and_verifies():
    env = make_env("game24", {"question": "1 1 4 6"})
    assert env.tool_names() == ["act"] and "left: 1 1 4 6" in env.first_observation()
    snap = env.snapshot()
    assert env.call("act", {"action": "4 * 6 = 24"}) == "4 * 6 = 24 (left: 1 1 24)"
    after_one = env.state()
    env.restore(snap)  # back to the start: state and call log
    assert env.state()["numbers"] == ["1", "1", "4", "6"] and env.calls == []
    for a in ["4 * 6", "24 * 1", "24 * 1"]:
        env.call("act", {"action": a})
    assert env.done and env.verify("").reward == 1.0 and env.verify("").success
    assert after_one["numbers"] == ["1", "1", "24"]
    bad = make_env("game24", {"question": "1 1 4 6"}).call_record("act", {"action": "9 * 9"})
    assert bad.error and bad.output.startswith("Error: invalid action")


def test_math_env_reads_gold_or_answer_and_with_gold_off():
    env = make_env("math", {"question": "What is 3 + 4?", "answer": "7"})
    assert env.call("act", {"action": "calculate[3+4]"}) == "= 7"
    assert env.verify("").reward == 0.0  # no answer yet
    env.call("act", {"action": "finish[7]"})
    assert env.done and env.verify("").reward == 1.0
    blind = make_env("math", {"question": "What is 3 + 4?", "gold": "7"}, with_gold=False)
    blind.call("act", {"action": "finish[7]"})
    v = blind.verify("")
    assert v.reward == 0.0 and v.checks == [] and "no gold" in v.info["why"]


def test_program_env_step_reward_is_visible_feedback():
    env = make_env("program", {"question": "Write add(a, b).", "tests": ["assert add(1, 2) == 3"],
                               "hidden_tests": ["assert add(-1, 1) == 0"]})
    rec = env.call_record("act", {"action": "```python\ndef add(a, b):\n    return a + b\n```"})
    assert rec.output.startswith("1/1 visible tests passed") and rec.reward == 1.0
    assert env.done and env.verify("").reward == 1.0


def test_qa_env_needs_a_retriever_and_searches():
    with pytest.raises(ConfigError, match="give an index"):
        make_env("qa", {"question": "q"})
    docs = [Document("1", "Eiffel Tower", "The Eiffel Tower was completed in 1889.")]
    env = make_env("qa", {"question": "When?", "gold": "1889"}, retriever=InMemoryRetriever(docs))
    assert "1889" in env.call("act", {"action": "search[Eiffel Tower]"})
    env.call("act", {"action": "finish[1889]"})
    assert env.verify("").reward == 1.0


def test_blocksworld_env_moves_by_the_checker_and_rap_views():
    env = make_env("blocksworld", {"question": BLOCKS, "goal": GOAL})
    for a in ["unstack a from b", "put down a", "pick up b", "stack b on a"]:
        assert not env.call_record("act", {"action": a}).error
    assert env.done and env.verify("").reward == 1.0
    illegal = make_env("blocksworld", {"question": BLOCKS, "goal": GOAL}).call_record("act", {"action": "pick up b"})
    assert illegal.error and illegal.output.startswith("Error: illegal action")
    g24 = make_env("game24", {"question": "1 1 4 6"}, view="rap")
    assert g24.call("act", {"action": "4 * 6"}) == "4 * 6 = 24 (left: 1 1 24)"
    gsm = make_env("math", {"question": "Tom has 3 apples and buys 4. How many?"}, view="rap")
    assert gsm.call("act", {"action": "How many apples?"}).startswith("Error: ") and "LLM world model" in gsm.calls[0].output
    with pytest.raises(ConfigError, match="no RAP view"):
        make_env("qa", {"question": "q"}, view="rap", retriever=InMemoryRetriever([]))
    with pytest.raises(ConfigError, match="options are view"):
        make_env("game24", {"question": "1 1 4 6"}, bogus=1)


def test_lats_and_rap_factories_build_through_the_registry(monkeypatch):
    from agentic_infer.engines.tree.game24 import Game24LATSEnv
    from agentic_infer.engines.tree.lats_envs import MathEnv, ProgramEnv
    from agentic_infer.engines.tree.rap_tasks import BlocksworldTask, Game24RAPTask, GSM8KTask

    assert isinstance(lats_env_factory("game24")({"question": "1 1 4 6"}), Game24LATSEnv)
    math_env = lats_env_factory("math", with_gold=False)({"question": "1+1?", "gold": "2"})
    assert isinstance(math_env, MathEnv) and math_env.gold is None
    assert lats_env_factory("math")({"question": "1+1?", "gold": "2"}).gold == "2"
    assert isinstance(lats_env_factory("program")({"question": "f", "tests": ["assert True"]}), ProgramEnv)
    assert isinstance(rap_task_factory("game24")({"question": "1 1 4 6"}), Game24RAPTask)
    gsm = rap_task_factory("gsm8k")({"question": "q", "gold": "7"})
    assert isinstance(gsm, GSM8KTask) and gsm.gold == "7"
    assert isinstance(rap_task_factory("blocksworld")({"question": BLOCKS, "goal": GOAL}), BlocksworldTask)
    with pytest.raises(ConfigError, match="give an index"):
        lats_env_factory("qa")
    with pytest.raises(ConfigError, match="at least one visible test"):
        lats_env_factory("program")({"question": "f"})
    with pytest.raises(ConfigError, match="LATS environment 'nope'"):
        lats_env_factory("nope")
    with pytest.raises(ConfigError, match="RAP task 'qa'"):
        rap_task_factory("qa")
    # one factory: replacing the registry's entry changes what the tree engines get
    made = []
    orig = get_env_spec("game24")

    def spy(row, **options):
        made.append((dict(row), options))
        return orig.make(row, **options)

    monkeypatch.setitem(ENVS, "game24", EnvSpec("game24", orig.description, spy, orig.tools, orig.task_format,
                                                 orig.reward))
    lats_env_factory("game24")({"question": "1 1 4 6"})
    rap_task_factory("game24")({"question": "2 3 4 5"})
    assert [m[0]["question"] for m in made] == ["1 1 4 6", "2 3 4 5"] and made[1][1]["view"] == "rap"


# -- any snapshotting env as a tree-search world ---------------------------------------------------------------
def test_parse_tool_action_forms():
    call = parse_tool_action('I will add.\n<tool_call>{"name": "add", "arguments": {"n": 2}}</tool_call>')
    assert call == ("add", {"n": 2})
    assert parse_tool_action('Action: {"arguments": "{\\"n\\": 3}", "name": "add"} done') == ("add", {"n": 3})
    assert parse_tool_action("Thought: done.\nfinish[The counter is 7.]") == "The counter is 7."
    assert parse_tool_action("add five please") is None
    assert parse_tool_action('{"name": "add", "arguments": [1]}') is None
    world = EnvWorld(lambda: make_env("game24", {"question": "1 1 4 6"}))  # any Env, here a tree world's adapter
    a = world.parse_action('{"name":"act","arguments":{"action":"4 * 6"}}')
    b = world.parse_action('<tool_call>{"arguments": {"action": "4 * 6"},  "name": "act"}</tool_call>')
    assert a == b == '{"arguments": {"action": "4 * 6"}, "name": "act"}'  # canonical: equal calls merge as votes


def add(n: int) -> str:
    return json.dumps({"name": "add", "arguments": {"n": n}})


async def test_env_world_steps_are_isolated_snapshots(counter):
    world = env_world_factory(counter)({"id": "c", "target": 7})
    root = world.init_state()
    five, aux = await world.step(root, add(5))
    assert aux["valid"] and aux["reward"] == 1.0 and five["snapshot"]["state"] == {"value": 5}
    two, _ = await world.step(root, add(2))  # a sibling from the same node: it does not see +5
    assert two["snapshot"]["state"] == {"value": 2} and five["snapshot"]["state"] == {"value": 5}
    seven, _ = await world.step(five, add(2))
    assert seven["snapshot"]["state"] == {"value": 7} and [c["name"] for c in seven["snapshot"]["calls"]] == ["add"] * 2
    a, b = await asyncio.gather(world.step(five, add(1)), world.step(two, add(-1)))  # concurrent siblings
    assert (a[0]["snapshot"]["state"], b[0]["snapshot"]["state"]) == ({"value": 6}, {"value": 1})
    bad, aux = await world.step(root, add(99))  # a refused call: an Error observation, the episode goes on
    assert bad["error"].startswith("Error: n must be") and not aux["valid"] and not world.is_terminal(bad)
    junk, _ = await world.step(root, "add some")
    assert junk["error"].startswith("Error: no tool call") and junk["snapshot"]["state"] == {"value": 0}
    done, _ = await world.step(seven, "finish[The counter is at 7.]")
    assert world.is_terminal(done) and world.answer(done) == "The counter is at 7."
    assert await world.gold_reward(done) == 1.0 and await world.gold_reward(seven) == 0.5
    stopped, _ = await world.step(seven, json.dumps({"name": "stop", "arguments": {}}))
    assert world.is_terminal(stopped) and world.answer(stopped) == ""  # env.done: a terminal tool
    assert world.agreement_key(seven) != world.agreement_key(five)


class CounterPolicy:
    """LATS on the counter (target 7): at the root it proposes +5 and +2 (alternating samples), then +2 after +5
    and +5 after +2, then the final message; values favour trajectories that reach 7."""

    def __init__(self):
        self.k = 0

    def __call__(self, prompt: str) -> str:
        if "Score: N" in prompt:
            return "Score: 9" if "now 7" in prompt.split("Trajectory:")[-1] else "Score: 4"
        if "did not solve the task" in prompt:
            return "Reach the target first."
        progress = prompt.split("Progress so far:")[-1]
        if "now 7" in progress:
            return "finish[The counter is 7.]"
        if "now 5" in progress:
            return f"<tool_call>{add(2)}</tool_call>"
        if "now 2" in progress:
            return f"<tool_call>{add(5)}</tool_call>"
        self.k += 1
        return f"Thought: go.\n<tool_call>{add(5 if self.k % 2 else 2)}</tool_call>"


async def test_lats_expands_a_snapshotting_env(counter):
    engine = LATS(FakeLLM(CounterPolicy()), lats_env_factory(counter), iterations=4, n_children=2)
    res, tree = await searched(engine, {"id": "c", "target": 7})
    assert res.answer == "The counter is 7." and res.rewards["correct"] == 1.0
    kids = tree.children(tree.root)
    assert sorted(k.state["snapshot"]["state"]["value"] for k in kids) == [2, 5]  # siblings: only their own write
    for k in kids:
        assert [c["arguments"]["n"] for c in k.state["snapshot"]["calls"]] == [k.state["snapshot"]["state"]["value"]]
        for g in tree.children(k):  # a grandchild extends its own parent's snapshot, never its uncle's
            assert [c["arguments"]["n"] for c in g.state["snapshot"]["calls"]][:1] == [k.state["snapshot"]["state"]["value"]]
    assert res.trajectories[0].steps[-1].action == "finish[The counter is 7.]"


def retail_policy(prompt: str) -> str:
    find = {"name": "find_user_id_by_name_zip", "arguments": {"first_name": "Olivia", "last_name": "Ito", "zip": "80218"}}
    cancel = {"name": "cancel_pending_order", "arguments": {"order_id": "#W5442520", "reason": "no longer needed"}}
    if "Score: N" in prompt:
        return "Score: 9" if "olivia_ito_3591" in prompt.split("Trajectory:")[-1] else "Score: 3"
    if "did not solve the task" in prompt:
        return "Authenticate, then cancel."
    progress = prompt.split("Progress so far:")[-1]
    if "cancel_pending_order" in progress:
        return "finish[Your order #W5442520 is cancelled.]"
    if "olivia_ito_3591" in progress:
        return f"<tool_call>{json.dumps(cancel)}</tool_call>"
    return f"<tool_call>{json.dumps(find)}</tool_call>"


async def test_lats_on_tau_bench_retail():
    path = shared_data("tools/tau_retail_db/retail_tasks_dev.jsonl")
    row = json.loads(path.read_text().splitlines()[0])
    assert row["actions"][0]["name"] == "cancel_pending_order"  # the task this policy solves
    engine = LATS(FakeLLM(retail_policy), lats_env_factory("retail"), iterations=5, n_children=1)
    res, tree = await searched(engine, row)
    assert res.answer == "Your order #W5442520 is cancelled." and res.rewards["correct"] == 1.0
    names = [json.loads(s.action)["name"] for s in res.trajectories[0].steps[:-1]]
    assert names == ["find_user_id_by_name_zip", "cancel_pending_order"]
    root_env = make_env("retail", row)
    assert root_env.verify("").reward == 0.0  # the search's writes never reached a fresh env


async def test_the_env_agent_plays_a_tree_world():
    """A tree world is an env like any other: the env agent's episode on game24 ends with the world's verdict,
    one Step per action, each anchored at the world's state before it."""
    from agentic_infer.engines.env_agent import EnvAgent, EnvAgentConfig

    def act(a: str) -> str:
        return f'<tool_call>\n{{"name": "act", "arguments": {{"action": "{a}"}}}}\n</tool_call>'

    llm = FakeLLM([act("4 * 6"), act("24 * 1"), act("24 * 1"), "24 = (4 * 6) * 1 * 1"])
    rollout = await EnvAgent(llm, EnvAgentConfig(env="game24")).run({"id": "g", "question": "1 1 4 6"})
    t = rollout.trajectory
    assert t.rewards["env_reward"] == 1.0 and t.rewards["success"] == 1.0
    assert [s.arguments["action"] for s in t.steps] == ["4 * 6", "24 * 1", "24 * 1"]
    assert '"numbers":["1","1","4","6"]' in t.steps[0].state and '"numbers":["1","1","24"]' in t.steps[1].state
