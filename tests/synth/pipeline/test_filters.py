"""Every filter as a plain function: what it keeps, what it drops and with which reason."""

import json

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.types import TokenLogprob, TopLogprob, Trajectory, Usage
from synth.pipeline import filters as F


def traj(answer="x", rewards=None, model="The answer is \\boxed{x}", tokens=5, tool_calls=0, finish="answer",
         config=None, conf=None):
    t = Trajectory(answer=answer, rewards=dict(rewards or {}), usage=Usage(completion_tokens=tokens,
                                                                           tool_calls=tool_calls),
                   finish_reason=finish, config=dict(config or {}), group_id="g")
    t.add("prompt", "Q?")
    lps = None
    if conf is not None:  # top-k logprobs whose mean gives the token confidence
        lps = [TokenLogprob(i, "a", conf, tuple(TopLogprob("a", conf, i) for _ in range(3))) for i in range(tokens)]
    t.add("model", model, logprobs=lps)
    return t


def test_correct():
    assert F.correct(traj(rewards={"em": 1.0})) is True
    assert F.correct(traj(rewards={"em": 0.0})) == (False, "incorrect:em")
    assert F.correct(traj()) == (False, "unjudged:em")
    assert F.correct(traj(rewards={"f1": 0.6}), metric="f1", threshold=0.5) is True


def test_format_per_dialect():
    assert F.format_valid(traj()) is True
    assert F.format_valid(traj(answer=None)) == (False, "bad_format:no_answer")
    so1 = {"dialect": "search_o1"}
    assert F.format_valid(traj(config=so1)) is True
    assert F.format_valid(traj(model="no box", config=so1)) == (False, "bad_format:no_answer")
    assert F.format_valid(traj(model="<|begin_search_query|>x \\boxed{y}", config=so1)) == (
        False, "bad_format:unclosed:<|begin_search_query|>")
    assert F.format_valid(traj(model="<answer>y</answer>"), dialect="search_r1") is True


def test_length_and_tool_calls_and_finished():
    t = traj(tokens=0)  # no ids: falls back to usage
    assert F.length(t, max_tokens=10) is True
    assert F.length(traj(tokens=20), max_tokens=10) == (False, "too_long")
    assert F.length(traj(tokens=2), min_tokens=3) == (False, "too_short")
    assert F.tool_calls(traj(tool_calls=5), max_calls=4) == (False, "too_many_tool_calls")
    assert F.tool_calls(traj(tool_calls=0), min_calls=1) == (False, "too_few_tool_calls")
    assert F.tool_calls(traj(tool_calls=2), min_calls=1, max_calls=4) is True
    assert F.finished(traj(finish="length")) == (False, "unfinished:length")


def test_confidence_keeps_top_eta():
    group = [traj(conf=c) for c in (-0.1, -1.0, -2.0, -3.0)]  # confidence = -mean(top logprobs): 0.1 .. 3.0
    assert F.confidence(group, eta=0.5) == [(False, "low_confidence"), (False, "low_confidence"), True, True]
    assert F.confidence(group, eta=0.25) == [(False, "low_confidence")] * 3 + [True]  # DeepConf: keep the top 25%
    assert F.confidence([traj()], eta=0.5) == [(False, "no_logprobs")]
    with pytest.raises(ConfigError, match="eta"):
        F.confidence(group, eta=0)


def test_accuracy_band_all_equal_and_reward_variance():
    def g(*rs):
        return [traj(rewards={"em": r}) for r in rs]

    assert F.accuracy_band(g(1, 1, 1, 1, 1)) == [(False, "accuracy_above_band")] * 5
    assert F.accuracy_band(g(0, 0, 0, 0, 0, 0)) == [(False, "accuracy_below_band")] * 6
    assert F.accuracy_band(g(1, 0, 1, 0)) == [True] * 4
    assert F.all_equal(g(1, 1)) == [(False, "all_equal_rewards")] * 2
    assert F.all_equal(g(1, 0)) == [True, True]
    res = F.reward_variance([g(1, 0), g(1, 1, 1, 0), g(0, 0)], p=0.3)
    assert res == [True, (False, "low_reward_variance"), (False, "low_reward_variance")]


def test_dedup_and_decontamination(tmp_path):
    d = F.ExactDedup()
    assert d("Hello, world") is True and d("hello world!") == (False, "exact_duplicate")
    m = F.MinHashDedup(threshold=0.5)
    base = "the quick brown fox jumps over the lazy dog near the river bank today"
    assert m(base) is True
    assert m(base + " again") == (False, "near_duplicate")
    assert m("an entirely different sentence about quantum chromodynamics and gluons") is True
    ev = tmp_path / "eval.jsonl"
    ev.write_text(json.dumps({"question": "Which magazine was started first, Arthur's Magazine or First for Women?"})
                  + "\n")
    dc = F.Decontaminate(eval_files=[str(ev)], n=5)
    assert dc("Tell me: which magazine was started first, Arthur's Magazine or First?") == (False, "contaminated")
    assert dc("Who wrote Hamlet?") is True
    with pytest.raises(ConfigError, match="eval_files"):
        F.Decontaminate(eval_files=[])
    with pytest.raises(ConfigError, match="does not exist"):
        F.Decontaminate(eval_files=[str(tmp_path / "missing.jsonl")])


def test_unknown_filter_names_the_choices():
    with pytest.raises(ConfigError, match="unknown filter 'nope'.*correct"):
        F.get_filter("nope")
