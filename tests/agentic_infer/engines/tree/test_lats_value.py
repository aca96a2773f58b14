"""LATS's node value V = λ·LM + (1−λ)·SC with LM = (s−1)/9 for the judge's 1-10 score s.

λ ≠ 0.5 and a score s ≠ 10 so that every wrong form gives another number: swapping λ and 1−λ,
scaling s as s/10 or leaving it raw, or reading the first "Score:" instead of the last.
"""

import pytest

from agentic_infer.engines.tree import LATS, Budget, Game24LATSEnv, LATSOptions
from agentic_infer.testing import FakeLLM

PUZZLE = {"question": "1 1 4 6"}


async def expanded_root(lam: float, value_reply: str) -> dict:
    """One LATS expansion of the root with five scripted action samples; children by action."""
    actions = iter(["4 * 6 = 24", "4 * 6", "6 * 4", "hello", "hello there"])

    def policy(prompt: str) -> str:
        return value_reply if "Score: N" in prompt else next(actions)

    engine = LATS(FakeLLM(policy), lambda ex: Game24LATSEnv(ex["question"]), LATSOptions(lam=lam), n_children=5,
                  depth_limit=1, budget=Budget(iterations=1))
    search = engine.search(PUZZLE)
    await search.run()
    return {n.action: n for n in search.tree.children(search.tree.root)}


@pytest.mark.parametrize("lam", [0.8, 0.2])
async def test_value_weights_lm_by_lambda_and_sc_by_one_minus_lambda(lam):
    # the last "Score:" is the judge's verdict: s = 7, so LM = 6/9; '4 * 6' (2 votes) and '6 * 4' reach the
    # same state: SC = 3/5 for both
    kids = await expanded_root(lam, "At first glance Score: 2.\nOn reflection the step keeps 24 reachable.\nScore: 7")
    lm, sc = 6 / 9, 3 / 5
    for action in ("4 * 6", "6 * 4"):
        ev = kids[action].details["evaluation"]
        assert ev["lm_score"] == 7 and ev["lm"] == pytest.approx(lm) and ev["sc"] == pytest.approx(sc)
        assert kids[action].reward == pytest.approx(lam * lm + (1 - lam) * sc)
        assert kids[action].reward != pytest.approx((1 - lam) * lm + lam * sc)  # the swapped form differs here
    # an invalid action gets neither an LM score nor consistency: V = 0 whatever λ
    assert all(n.reward == 0.0 for a, n in kids.items() if a.startswith("hello"))


@pytest.mark.parametrize(("score", "lm"), [(1, 0.0), (4, 1 / 3), (10, 1.0)])
async def test_lm_score_maps_1_to_10_onto_0_to_1(score, lm):
    kids = await expanded_root(1.0, f"Score: {score}")  # λ = 1: V is LM alone
    assert kids["4 * 6"].details["evaluation"]["lm"] == pytest.approx(lm)
    assert kids["4 * 6"].reward == pytest.approx(lm)
