from __future__ import annotations

import re

import pytest
from tree_fakes import Game24RAPPolicy, searched

from agentic_infer.engines.tree import blocksworld as bw
from agentic_infer.engines.tree.rap import RAP, RAPOptions, RAPWeights, rap_aggregate
from agentic_infer.engines.tree.rap_tasks import BlocksworldTask, Game24RAPTask, GSM8KTask
from agentic_infer.engines.tree.table import Tree
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM


class NoLogprobs:
    """A backend that never returns logprobs (to exercise the documented fallbacks)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = "nolp"
        self.tokenizer = inner.tokenizer

    def render(self, msgs, add_generation_prompt=True):
        return self.inner.render(msgs, add_generation_prompt)

    async def generate(self, prompt, params):
        comps = await self.inner.generate(prompt, params)
        for c in comps:
            c.logprobs = None
        return comps


async def run_rap(llm, task, **options):
    """RAP on one task: the Rollout and the search's node table."""
    return await searched(RAP(llm, lambda _example: task, **options), {"question": task.task})


async def test_rap_finds_the_known_solution_on_game24(tmp_path):
    res, tree = await run_rap(FakeLLM(Game24RAPPolicy()), Game24RAPTask("1 1 4 6"), iterations=10, n_actions=3)
    tree.save(tmp_path / "rap.json")
    info = res.metadata["tree"]
    assert info["feedback"] == "judge" and res.engine == "rap"
    assert res.rewards["correct"] == 1.0, info
    agg = info["aggregation"]
    assert agg["answer"] == res.answer and agg["voters"] >= 1
    t = Tree.load(tmp_path / "rap.json")
    assert t.config["engine"] == "rap" and t.root.visits == info["budget"]["spent"]["iterations"]
    n = next(n for n in t.nodes if n.reward is not None)
    ev = n.details["evaluation"]
    assert {"action_likelihood", "self_eval", "confidence", "heuristic"} <= set(ev)
    assert ev["self_eval_source"] == "logprobs"
    assert any(not x.materialised for x in t.nodes)  # lazy expansion


async def test_rap_fallbacks_without_logprobs():
    res, tree = await run_rap(NoLogprobs(FakeLLM(Game24RAPPolicy())), Game24RAPTask("1 1 4 6"), iterations=4,
                              n_actions=3)
    evals = [n.details["evaluation"] for n in tree.nodes if "evaluation" in n.details]
    assert evals and all("fallback" in e["self_eval_source"] for e in evals)
    kids = [n for n in tree.nodes if n.parent is not None]
    assert all("fallback" in n.details["likelihood_source"] for n in kids)


async def test_no_valid_action_at_the_root_is_named_as_such():
    res, tree = await run_rap(FakeLLM(reply="I like turtles."), Game24RAPTask("1 1 4 6"), iterations=4, n_actions=2)
    assert res.metadata["tree"]["stop_reason"] == "no valid action at the root" and res.answer is None
    assert len(tree.nodes) == 1 and res.trajectories[0].finish_reason == "budget"
    # the two unparseable samples are still recorded, attached to the root
    assert [t.metadata["purpose"] for t in res.trajectories[1:]] == ["action", "action"]
    assert tree.root.calls == [t.id for t in res.trajectories[1:]]


def test_rap_weights_and_options_validation():
    with pytest.raises(ConfigError):
        RAPWeights(0, 0, 0, 0)
    with pytest.raises(ConfigError):
        RAPWeights(action_likelihood=-1)
    with pytest.raises(ConfigError, match="aggregate"):
        RAPOptions(aggregate="mean")
    with pytest.raises(ConfigError, match="n_children"):
        RAP(FakeLLM(), Game24RAPTask, n_actions=0)
    rap = RAP(FakeLLM(), Game24RAPTask, weights={"heuristic": 0.0}, budget={"tokens": 100})
    assert rap.options.weights == RAPWeights(heuristic=0.0) and rap.options.search_budget().tokens == 100


def test_aggregation_count_value_and_deepconf():
    t = Tree.new({}, "root")
    for ans, val, conf in (("A", 0.9, 5.0), ("B", 0.1, 1.0), ("B", 0.1, 1.0)):
        n = t.add_child(t.root, ans)
        n.state, n.terminal, n.value = {}, True, val
        n.details = {"answer": ans, "step": {"conf_sum": conf * 10, "conf_n": 10}}
    assert rap_aggregate(t)["answer"] == "B"
    assert rap_aggregate(t, weighting="value")["answer"] == "A"
    dc = rap_aggregate(t, weighting="deepconf")
    assert dc["answer"] == "A" and dc["weights"]["A"] == pytest.approx(5.0)
    assert rap_aggregate(t, weighting="deepconf", keep_top=0.1)["weights"] == {"A": pytest.approx(5.0)}


def _bw_policy():
    k = [0]

    def policy(prompt: str) -> str:
        state = re.search(r"Current state: (.+)", prompt).group(1)
        s = bw.parse_state(state)
        if "Describe the new state" in prompt:
            act = re.search(r"Action: (.+)", prompt).group(1)
            return bw.format_state(bw.apply(s, act))
        blocks = sorted(set(s["on"]) | ({s["holding"]} if s["holding"] else set()))
        legal = []
        for x in blocks:
            for cand in (f"pick up {x}", f"put down {x}", *[f"stack {x} on {y}" for y in blocks if y != x],
                         *[f"unstack {x} from {y}" for y in blocks if y != x]):
                if bw.apply(s, cand) is not None:
                    legal.append(bw.format_action(bw.parse_action(cand)))
        if "Answer Yes or No" in prompt:
            act = re.search(r"Is '(.+?)' a legal", prompt).group(1)
            return "Yes" if act in legal else "No"
        k[0] += 1
        return legal[k[0] % len(legal)]

    return policy


async def test_rap_blocksworld_plan_is_valid():
    init = "the a block is on top of the b block, the b block is on the table, the c block is on the table"
    goal = "the b block is on top of the c block"
    task = BlocksworldTask(init, goal)
    res, _ = await run_rap(FakeLLM(_bw_policy()), task, iterations=20, n_actions=3, depth_limit=6,
                           options=RAPOptions(world_max_tokens=400))
    assert res.rewards["correct"] == 1.0, res.metadata
    assert bw.validate_plan(task.init, goal, res.answer.split("; "))[0]


async def test_rap_gsm8k_subquestions():
    q = "Tom has 3 apples and buys 4 more. How many apples does Tom have?"

    def policy(prompt: str) -> str:
        if "Answer this sub-question" in prompt:
            return "The answer is 4." if "buy" in prompt.split("Answer this sub-question:")[-1] else "3 + 4 = 7. The answer is 7."
        if "Answer Yes or No" in prompt:
            return "Yes"
        if "Sub-question 1" in prompt:
            return "Now we can answer the question: How many apples does Tom have?"
        return "Sub-question: How many apples does Tom buy?"

    res, tree = await run_rap(FakeLLM(policy), GSM8KTask(q, gold="7"), iterations=3, n_actions=2,
                              options=RAPOptions(world_samples=2))
    assert res.answer == "7" and res.rewards["correct"] == 1.0
    conf = [n.details["step"]["confidence"] for n in tree.nodes if "step" in n.details]
    assert conf and all(c == 1.0 for c in conf)
