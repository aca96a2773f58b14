"""LATS over the retrieval-QA, programming (real sandbox) and math environments, with FakeLLM policies."""

from __future__ import annotations

import re

from tree_fakes import searched

from agentic_infer.engines.tree import LATS
from agentic_infer.engines.tree.lats_envs import MathEnv, ProgramEnv, RetrievalQAEnv
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever

DOCS = [
    Document("1", "France", "France is a country in Western Europe. Its capital is Paris. It borders Spain."),
    Document("2", "Paris", "Paris is the capital and largest city of France. The Eiffel Tower is in Paris."),
    Document("3", "Spain", "Spain is a country in southern Europe. Its capital is Madrid."),
    Document("4", "Eiffel Tower", "The Eiffel Tower was completed in 1889 for the World's Fair."),
]


async def run_lats(policy, env, **options):
    """LATS on one environment: the Rollout and the search's node table."""
    return await searched(LATS(FakeLLM(policy), lambda _example: env, **options), {"question": env.task})


def qa_policy(prompt: str) -> str:
    if "Score: N" in prompt:
        traj = prompt.split("Trajectory:")[-1]
        return "Score: 9" if "finish[1889]" in traj else ("Score: 7" if "1889" in traj else "Score: 3")
    if "did not solve the task" in prompt:
        return "Search for the tower directly."
    progress = prompt.split("Progress so far:")[-1]
    if "lookup[completed]" in progress:
        return "Thought: it says 1889.\nAction: finish[1889]"
    if "search[Eiffel Tower]" in progress:
        return "Action: lookup[completed]"
    return "Thought: I need the tower.\nAction: search[Eiffel Tower]"


async def test_lats_retrieval_qa_react():
    env = RetrievalQAEnv("When was the tower in the capital of France completed?", InMemoryRetriever(DOCS), gold="1889")
    res, tree = await run_lats(qa_policy, env, iterations=3, n_children=2)
    info = res.metadata["tree"]
    assert res.answer == "1889" and res.rewards["correct"] == 1.0 and info["feedback"] == "judge"
    assert info["actions"] == ["search[Eiffel Tower]", "lookup[completed]", "finish[1889]"]
    obs = tree[info["node"]].state["steps"][1]["observation"]
    assert "1889" in obs
    path = res.trajectories[0]
    assert [s.action for s in path.steps] == info["actions"] and "1889" in path.steps[1].observation


async def test_retrieval_env_invalid_action_is_an_observation():
    env = RetrievalQAEnv("q", InMemoryRetriever(DOCS))
    s, aux = await env.step(env.init_state(), "go to the library")
    assert not aux["valid"] and "Invalid action" in s["steps"][0]["observation"] and not env.is_terminal(s)
    assert await env.gold_reward(s) is None  # no gold given: no oracle possible


BUGGY = "```python\ndef add(a, b):\n    return a - b\n```"
GOOD = "```python\ndef add(a, b):\n    return a + b\n```"
OVERFIT = "```python\ndef add(a, b):\n    return 3\n```"


async def test_lats_program_visible_tests_hidden_scoring():
    k = [0]

    def policy(prompt: str) -> str:
        if "Score: N" in prompt:
            return "Score: 5"
        if "did not solve the task" in prompt:
            return "The function subtracts instead of adding."
        k[0] += 1
        return [BUGGY, OVERFIT, GOOD][k[0] % 3]

    env = ProgramEnv("Write add(a, b) returning the sum.", visible_tests=["assert add(1, 2) == 3"],
                     hidden_tests=["assert add(1, 2) == 3", "assert add(-1, 1) == 0"])
    res, tree = await run_lats(policy, env, iterations=2, n_children=3)
    codes = {n.action: n for n in tree.nodes if n.action}
    assert codes[re.search(r"```python\n(.*?)```", OVERFIT, re.S).group(1).strip()].terminal  # passes visible
    # the chosen program passes the visible tests; hidden tests decide `correct`
    assert tree[res.metadata["tree"]["node"]].state["passed"] == 1
    assert res.rewards["correct"] == float(res.answer.strip().endswith("a + b"))
    assert await env.gold_reward({"code": "def add(a, b):\n    return 3", "passed": 1, "total": 1,
                                  "attempts": []}) == 0.0


async def test_lats_math_env():
    def policy(prompt: str) -> str:
        if "Score: N" in prompt:
            return "Score: 8" if "= 7" in prompt.split("Trajectory:")[-1] else "Score: 4"
        progress = prompt.split("Progress so far:")[-1]
        return "finish[7]" if "= 7" in progress else "calculate[3 + 4]"

    res, _ = await run_lats(policy, MathEnv("What is 3 + 4?", gold="7"), iterations=2, n_children=2)
    assert res.answer == "7" and res.rewards["correct"] == 1.0
