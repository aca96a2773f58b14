"""Verdict / Judge / MetricJudge, the metric registry, and verdicts written into Trajectory/Rollout rewards."""

import json

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Trajectory
from agentic_infer.verify import (
    METRICS,
    Judge,
    MetricJudge,
    Verdict,
    judge_answers,
    score,
    write_verdicts,
)

# --------------------------------------------------------------------------------------------------
# registry


def test_one_registry_names_the_plain_metrics_and_the_published_variants():
    assert {"em", "f1", "cover_em", "math_equal", "search_o1_em", "search_r1_em", "boxed_found"} <= set(METRICS)
    assert score("search_o1_em", "ignored", ["Paris"], text="so \\boxed{\\text{Paris}}") == 1.0
    assert score("search_o1_em", "Paris", ["Paris"], text="no box") == 0.0  # its own extraction, not the prediction
    assert score("em", "The Eiffel Tower", ["Eiffel Tower"]) == 1.0
    assert score("f1", "Barack Obama", "Obama") == pytest.approx(2 / 3)
    assert score("cover_em", "it is the big dog", "Dog") == 1.0
    assert score("math_equal", "0.5", "1/2") == 1.0 and isinstance(score("math_equal", "0.5", "1/2"), float)
    assert score("em", None, "x") == 0.0


def test_registry_errors_name_the_value_and_pass_options_through():
    with pytest.raises(ConfigError, match=r"metric 'bleu': unknown; choose one of \[.*'cover_em', 'em', 'f1'"):
        score("bleu", "a", "a")
    with pytest.raises(ConfigError, match="'judge_acc' is not rule-based"):
        score("judge_acc", "a", "a")
    with pytest.raises(ConfigError, match="timeout_s=0"):
        score("math_equal", "x^2", "y", timeout_s=0)


# --------------------------------------------------------------------------------------------------
# Verdict, Judge, MetricJudge


def test_verdict_fields():
    v = Verdict("CORRECT", 1.0, "same")
    assert v.correct and not Verdict("INCORRECT", 0.0).correct
    assert v.to_dict() == {"label": "CORRECT", "score": 1.0, "reason": "same", "samples": [], "cached": False}


async def test_metric_judge_wraps_registry_metrics():
    judge = MetricJudge("f1", threshold=0.5)
    assert isinstance(judge, Judge)
    v = await judge.score("q", "Barack Obama", ["Obama"])
    assert (v.label, v.reason) == ("CORRECT", "f1") and v.score == pytest.approx(2 / 3)
    assert (await MetricJudge("f1").score("q", "Barack Obama", "Obama")).label == "INCORRECT"  # threshold 1.0
    assert (await MetricJudge("math_equal").score("q", "\\frac{1}{2}", "0.5")).label == "CORRECT"
    assert (await MetricJudge().score("q", None, "x")) == Verdict("INCORRECT", 0.0, "em")


async def test_metric_judge_wraps_any_function_with_options():
    def starts_with(prediction, gold, *, n):
        return float((prediction or "")[:n] == gold[:n])

    judge = MetricJudge(starts_with, n=3)
    assert await judge.score("q", "Paris, France", "Parma") == Verdict("CORRECT", 1.0, "starts_with")
    got = await judge_answers(judge, [("q", "Rome", "Paris"), {"question": "q", "prediction": "Pa", "reference": "Pa"}])
    assert [v.label for v in got] == ["INCORRECT", "CORRECT"]


async def test_metric_judge_errors_name_the_fix():
    with pytest.raises(ConfigError, match="metric 'bleu': unknown"):
        MetricJudge("bleu")
    with pytest.raises(ConfigError, match="metric=3"):
        MetricJudge(3)
    with pytest.raises(ConfigError, match="needs a reference"):
        await MetricJudge("em").score("q", "a")


# --------------------------------------------------------------------------------------------------
# write_verdicts


def test_write_verdicts_into_a_trajectory_round_trips():
    t = Trajectory(answer="Paris", rewards={"em": 0.0, "format": 1.0})
    out = write_verdicts(t, {"em": score("em", t.answer, "paris"), "judge_acc": True})
    assert out is t.rewards and t.rewards == {"em": 1.0, "format": 1.0, "judge_acc": 1.0}
    assert all(type(v) is float for v in t.rewards.values())
    assert Trajectory.from_json(t.to_json()).rewards == t.rewards


def test_write_verdicts_into_a_rollout_and_its_chosen_trajectory():
    chosen, other = Trajectory(answer="Paris"), Trajectory(answer="Rome")
    r = Rollout("ex1", trajectories=[chosen, other], answer="Paris", chosen=0)
    write_verdicts(r, {"em": 1.0})
    assert r.rewards == {"em": 1.0} and chosen.rewards == {"em": 1.0} and other.rewards == {}
    assert json.loads(r.to_json())["rewards"] == {"em": 1.0}
    vote = Rollout("ex2", trajectories=[Trajectory(), Trajectory()], answer="7", chosen=None)
    write_verdicts(vote, {"math_equal": 0.0})
    assert vote.rewards == {"math_equal": 0.0} and all(t.rewards == {} for t in vote.trajectories)


@pytest.mark.parametrize(("verdicts", "match"), [
    ({"em": "1"}, r"em='1' is not a finite number"),
    ({"em": float("nan")}, r"em=nan is not a finite number"),
    ({"em": Verdict("CORRECT", 1.0)}, r"pass the verdict's score"),
    ({"": 1.0}, "metric name '' must be a non-empty string"),
])
def test_write_verdicts_rejects_what_is_not_a_score(verdicts, match):
    t = Trajectory()
    with pytest.raises(ConfigError, match=match):
        write_verdicts(t, verdicts)
    assert t.rewards == {}


def test_write_verdicts_needs_a_record():
    with pytest.raises(ConfigError, match="target is a dict; pass a Trajectory or a Rollout"):
        write_verdicts({}, {"em": 1.0})
