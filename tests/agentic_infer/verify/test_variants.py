"""Named metric variants, task metrics (Game of 24, BFCL AST), statistics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.tasks import get_task
from agentic_infer.tasks.bfcl import ast_match, parse_calls
from agentic_infer.verify import METRICS, Scored, answer_tag, backoff, search_o1_answer
from agentic_infer.verify import score_all as score
from eval.stats import bootstrap_ci, majority, pass_at_k

CASES = json.loads((Path(__file__).parent / "metric_cases.json").read_text())


@pytest.mark.parametrize(("name", "case_key"), [("em", "exact_match"), ("f1", "f1_score"), ("cover_em", "cover_exact_match")])
def test_registry_metrics_follow_the_metric_cases(name, case_key):
    for case in CASES[case_key]:
        gold = case["gold"] if isinstance(case["gold"], list) else [case["gold"]]
        got = score([name], Scored(case["prediction"], gold))[name]
        assert got == pytest.approx(case["expected"], abs=1e-6), case


def test_search_o1_extraction_and_backoff():
    text = "reasoning ... \\boxed{\\text{Paris}}"
    assert search_o1_answer(text) == "Paris"
    assert search_o1_answer("no box") == ""
    s = Scored("Paris", ["paris"], text=text)
    assert score(["search_o1_em", "search_o1_acc", "search_o1_f1"], s) == {
        "search_o1_em": 1.0, "search_o1_acc": 1.0, "search_o1_f1": 1.0}
    assert score(["search_o1_acc"], Scored("", ["x"], text="nothing"))["search_o1_acc"] == 0.0
    assert backoff("", "direct") == "direct" and backoff("  ", "d") == "d" and backoff("mine", "d") == "mine"


def test_answer_tag_variants_use_generated_text_only():
    text = "<think>..</think><answer>The Eiffel Tower</answer>"
    assert answer_tag(text) == "The Eiffel Tower"
    s = Scored("ignored", ["Eiffel Tower"], text=text)
    assert score(["search_r1_em", "r1_searcher_cover_em"], s) == {"search_r1_em": 1.0, "r1_searcher_cover_em": 1.0}
    # without tags the engine's prediction is scored
    assert score(["search_r1_em"], Scored("Eiffel Tower", ["Eiffel Tower"], text="\\boxed{x}"))["search_r1_em"] == 1.0
    assert score(["r1_searcher_cover_em"], Scored(None, ["dog"], text="<answer>big dog here</answer>"))["r1_searcher_cover_em"] == 1.0


def test_unknown_metric_is_an_error():
    with pytest.raises(ConfigError, match="metric 'nope': unknown"):
        score(["nope"], Scored("a", ["a"]))
    assert "judge_acc" not in score(["judge_acc", "em"], Scored("a", ["a"]))


def test_math_metric():
    assert score(["math_equal", "boxed_found"], Scored("0.5", ["\\frac{1}{2}"], text="\\boxed{0.5}")) == {
        "math_equal": 1.0, "boxed_found": 1.0}


@pytest.mark.parametrize(("text", "expected"), [
    ("She sells 9 eggs at $2, so she makes $18.", 1.0),      # no \boxed{}: only the flexible extraction credits it
    ("16 - 3 - 4 = 9 eggs; 9 * 2 = 18. The answer is 1,8.", 1.0),  # commas are dropped, as lm-eval does
    ("The answer is 18 dollars, or 36 half-dollars.", 0.0),  # the LAST number counts
    ("No number here.", 0.0),
])
def test_gsm8k_flexible_extract(text, expected):
    s = score(["math_equal", "math_equal_last_number"], Scored(None, ["18"], text=text))
    assert s == {"math_equal": 0.0, "math_equal_last_number": expected}


def test_game24_metric_uses_the_verify_checker():
    assert get_task("game24").primary == "game24_valid"  # importing the task registers its metric
    ex = {"question": "1 2 3 4"}
    assert METRICS["game24_valid"].fn(Scored("(1+2+3)*4", ["24"], text="", example=ex)) == 1.0
    assert METRICS["game24_valid"].fn(Scored(None, ["24"], text="so \\boxed{(1+2+3) \\times 4 = 24}", example=ex)) == 1.0
    assert METRICS["game24_valid"].fn(Scored("(1+2+3)*5", ["24"], text="", example=ex)) == 0.0


def test_bfcl_parse_and_ast_match():
    gt = [{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}]
    assert ast_match(parse_calls("[calculate_triangle_area(base=10, height=5)]"), gt)
    assert ast_match(parse_calls("```python\ncalculate_triangle_area(base=10, height=5.0, unit='Units')\n```"), gt)
    assert not ast_match(parse_calls("[calculate_triangle_area(base=10)]"), gt)  # required height missing
    assert not ast_match(parse_calls("[calculate_triangle_area(base=10, height=5, color='red')]"), gt)
    assert not ast_match(parse_calls("[other(base=10, height=5)]"), gt)
    assert parse_calls("I cannot do that") is None
    par = [{"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
           {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}}]
    out = "[spotify.play(artist='Maroon 5', duration=15), spotify.play(artist='taylor swift', duration=20)]"
    assert ast_match(parse_calls(out), par)  # any order, strings case-insensitive
    assert not ast_match(parse_calls("[spotify.play(artist='Maroon 5', duration=15)]"), par)
    assert not ast_match(parse_calls("[f(x=True)]"), [{"f": {"x": [1]}}])  # bool is not an int


def test_bfcl_metric_through_task():
    ex = {"ground_truth": [{"f": {"a": [[1, 2]], "b": [{"k": ["v"]}]}}]}
    assert METRICS["bfcl_ast"].fn(Scored(None, ["x"], text="[f(a=[1, 2], b={'k': 'V'})]", example=ex)) == 1.0
    assert get_task("bfcl-simple").primary == "bfcl_ast"


def test_stats():
    assert pass_at_k(5, 0, 1) == 0.0 and pass_at_k(5, 5, 3) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25) and pass_at_k(4, 1, 2) == pytest.approx(0.5)
    with pytest.raises(ConfigError):
        pass_at_k(2, 1, 3)
    lo, hi = bootstrap_ci([0, 1] * 50)
    assert 0.35 < lo < 0.5 < hi < 0.65
    assert bootstrap_ci([1.0, 1.0]) == (1.0, 1.0)
    assert majority(["a", None, "b", "b", "a", ""]) == "a"  # tie -> earliest
    assert majority([None, " "]) is None
