"""LATS and RAP on the embedded model (SmolLM2-135M, llama.cpp) with budgets of two or three calls: seconds,
so the default suite runs the real-model path (the longer runs are in the slow `test_tree_real.py`).

Checked on what the model really returned: every call is recorded with the prompt ids the model was sent
and one logprob per sampled token; the spend adds up to the recorded tokens; the budget stops the search;
LATS values are λ·LM + (1−λ)·SC of the recorded judge output; RAP's action prior is exp(mean logprob) of
its proposing sample and its self-evaluation is P(Yes) from the recorded first-token top logprobs.
"""

import math
from types import SimpleNamespace

import pytest

from agentic_infer.backends.base import encode_prompt
from agentic_infer.engines.judge_parse import yes_probability
from agentic_infer.engines.tree import LATS, RAP, Budget, Game24LATSEnv
from agentic_infer.engines.tree.rap_tasks import GSM8KTask


def check_recorded_calls(llm, search) -> dict:
    """Every recorded call is token-exact against the real tokenizer; the spend is what was recorded."""
    calls = {t.id: t for t in search.meter.calls}
    assert calls
    for t in calls.values():
        prompt, model = t.segments
        assert t.token_exact and prompt.token_ids == encode_prompt(llm, prompt.text)
        assert model.token_ids and len(model.logprobs) == len(model.token_ids)
        assert all(math.isfinite(x.logprob) and x.logprob <= 0 and x.token_id == i
                   for x, i in zip(model.logprobs, model.token_ids))
    spent = search.meter.spent
    assert spent.completion_tokens == sum(len(t.segments[1].token_ids) for t in calls.values())
    assert spent.llm_calls == len({t.metadata["call_group"] for t in calls.values()})
    return calls


async def test_lats_on_the_embedded_model(embedded_llm):
    engine = LATS(embedded_llm, lambda ex: Game24LATSEnv(ex["question"]), sampling={"seed": 0, "max_tokens": 8},
                  lam=0.7, n_children=2, depth_limit=2, value_max_tokens=8, reflection_max_tokens=8,
                  budget=Budget(iterations=1, llm_calls=2))
    search = engine.search({"question": "1 1 4 6"})
    result = await search.run()
    calls = check_recorded_calls(embedded_llm, search)
    assert result.stop_reason.startswith("budget") and result.feedback == "judge"
    assert 2 <= search.meter.spent.llm_calls <= 2 + 1  # the budget, plus at most the one call in flight
    assert search.meter.calls_by_purpose["action"] == 1
    kids = search.tree.children(search.tree.root)
    assert kids and all(k.details["proposed_by"] for k in kids)
    for k in kids:  # each child came from a recorded action sample
        assert all(calls[c].metadata["purpose"] == "action" for c in k.details["proposed_by"])
        ev = k.details.get("evaluation")
        if ev is not None:
            assert k.reward == pytest.approx(0.7 * ev["lm"] + 0.3 * ev["sc"])


async def test_rap_on_the_embedded_model(embedded_llm):
    engine = RAP(embedded_llm, lambda ex: GSM8KTask(ex["question"]), sampling={"seed": 0, "max_tokens": 8},
                 n_actions=2, depth_limit=2, world_samples=1, self_eval_samples=1, world_max_tokens=8,
                 budget=Budget(iterations=1, llm_calls=3))
    search = engine.search({"question": "Tom has 3 apples and buys 4 more. How many apples does he have?"})
    await search.run()
    calls = check_recorded_calls(embedded_llm, search)
    # a free-text sub-question always parses: one action call, the world model, the self-evaluation
    assert search.meter.calls_by_purpose == {"action": 1, "world_model": 1, "self_eval": 1}
    kids = search.tree.children(search.tree.root)
    assert kids
    for k in kids:  # the prior is the real likelihood of the sample that proposed the action
        lps = [[x.logprob for x in calls[c].segments[1].logprobs] for c in k.details["proposed_by"]]
        assert k.details["likelihood_source"] == "logprobs"
        assert k.prior == pytest.approx(math.exp(max(sum(v) / len(v) for v in lps)))
    [evaluated] = [k for k in kids if "evaluation" in k.details]
    ev = evaluated.details["evaluation"]
    [judge] = [t for t in calls.values() if t.metadata["purpose"] == "self_eval"]
    assert ev["self_eval_source"] == "logprobs"
    assert ev["self_eval"] == pytest.approx(yes_probability(SimpleNamespace(logprobs=judge.segments[1].logprobs)))
    used = [v for v in (ev["action_likelihood"], ev["self_eval"], ev["confidence"]) if v is not None]
    assert evaluated.reward == pytest.approx(sum(used) / len(used))  # equal weights: the plain mean
