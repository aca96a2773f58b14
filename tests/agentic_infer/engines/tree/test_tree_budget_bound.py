"""A tree search stops at its budget plus at most one call (the call in flight when the limit is reached).

The backend here yields to the event loop between tokens (`token_delay_s`), as every real backend does;
a FakeLLM that never yields runs concurrent calls one after another and would hide an overshoot.
"""

import sys
from pathlib import Path

import pytest

from agentic_infer.engines.tree import LATS, RAP, Budget, Game24LATSEnv
from agentic_infer.engines.tree.rap_tasks import Game24RAPTask
from agentic_infer.testing import FakeLLM

sys.path.insert(0, str(Path(__file__).parent))
from tree_fakes import Game24Policy, Game24RAPPolicy  # noqa: E402

PUZZLE = {"question": "1 1 4 6"}


def lats(limit: dict) -> LATS:
    return LATS(FakeLLM(Game24Policy(), token_delay_s=0.0001), lambda ex: Game24LATSEnv(ex["question"]),
                n_children=5, depth_limit=4, budget=Budget(iterations=None, **limit))


def rap(limit: dict) -> RAP:
    return RAP(FakeLLM(Game24RAPPolicy(), token_delay_s=0.0001), lambda ex: Game24RAPTask(ex["question"]),
               n_actions=3, depth_limit=4, budget=Budget(iterations=None, **limit))


def spend_per_call(search) -> list[tuple[int, int]]:
    """(call group, prompt + completion tokens) of every generate call, in the order they were counted."""
    groups: dict[int, int] = {}
    for t in search.meter.calls:
        g = t.metadata["call_group"]
        groups[g] = groups.get(g, 0) + t.usage.prompt_tokens + t.usage.completion_tokens
    return sorted(groups.items())


@pytest.mark.parametrize("make", [lats, rap], ids=["lats", "rap"])
@pytest.mark.parametrize("calls", [2, 3])
async def test_call_budget_is_never_exceeded(make, calls):
    search = make({"llm_calls": calls}).search(PUZZLE)
    result = await search.run()
    assert result.stop_reason == "budget llm_calls exhausted"
    assert search.meter.spent.llm_calls == calls  # checked before every call: the limit exactly


@pytest.mark.parametrize("make", [lats, rap], ids=["lats", "rap"])
async def test_token_budget_is_exceeded_by_at_most_the_last_call(make):
    search = make({"tokens": 400}).search(PUZZLE)
    result = await search.run()
    assert result.stop_reason == "budget tokens exhausted"
    per_call = [tokens for _, tokens in spend_per_call(search)]
    assert sum(per_call) == search.meter.spent.tokens > 400
    assert sum(per_call[:-1]) < 400  # every call but the last started under the limit
