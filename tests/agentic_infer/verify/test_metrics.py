"""verify's QA and math metrics against data-driven cases (metric_cases.json) plus thread/timeout behaviour."""

import json
import threading
import time
from pathlib import Path

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.verify import (
    MathVerifier,
    cover_exact_match,
    exact_match,
    extract_boxed,
    f1_precision_recall,
    f1_score,
    math_equal,
    normalize_answer,
    normalize_math_answer,
)

CASES = json.loads((Path(__file__).parent / "metric_cases.json").read_text())
SCORERS = {"exact_match": exact_match, "f1_score": f1_score, "cover_exact_match": cover_exact_match}


def _ids(cases):
    return [f"{c.get('prediction', c.get('text'))!r}~{c.get('gold')!r}"[:60] for c in cases]


@pytest.mark.parametrize("metric", list(SCORERS))
def test_text_metrics_cases(metric):
    for case in CASES[metric]:
        got = SCORERS[metric](case["prediction"], case["gold"])
        assert got == pytest.approx(case["expected"]), (metric, case)


@pytest.mark.parametrize("case", CASES["extract_boxed"], ids=_ids(CASES["extract_boxed"]))
def test_extract_boxed_cases(case):
    assert extract_boxed(case["text"]) == case["expected"]


@pytest.mark.parametrize("case", CASES["math_equal"], ids=_ids(CASES["math_equal"]))
def test_math_equal_cases(case):
    assert math_equal(case["prediction"], case["gold"]) is case["expected"]


def test_normalisations():
    assert normalize_answer("The  Quick, brown fox!") == "quick brown fox"
    assert normalize_math_answer(" $1,000.50$ ") == "1000.5"
    assert normalize_math_answer("\\text{72.0}.") == "72"
    assert normalize_math_answer("\\dfrac{1}{2}") == "\\frac{1}{2}"
    assert normalize_math_answer(None) is None
    f1, p, r = f1_precision_recall("Barack Obama", "Obama")
    assert (p, r) == (0.5, 1.0) and f1 == pytest.approx(2 / 3)


def test_bad_gold_is_a_config_error():
    with pytest.raises(ConfigError, match="non-empty list"):
        exact_match("x", [])
    with pytest.raises(ConfigError, match="timeout_s"):
        math_equal("x^2", "y", timeout_s=0)


def test_math_equal_from_worker_threads_and_in_process():
    """math-verify off the main thread: no signal.alarm errors, same answers."""
    results: list[bool] = []
    errors: list[BaseException] = []

    def work():
        try:
            results.append(math_equal("x(x+2)", "x^2+2x"))
            results.append(math_equal("\\frac{\\pi}{2}", "\\pi"))
        except BaseException as e:  # noqa: BLE001 - surfaced by the assert below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(results) == [False] * 4 + [True] * 4
    box: list[bool] = []
    t = threading.Thread(target=lambda: box.append(math_equal("x(x+2)", "x^2+2x", timeout_s=None)))
    t.start()
    t.join()
    assert box == [True]


def test_math_equal_timeout_kills_the_worker_and_recovers():
    v = MathVerifier(max_workers=1)
    try:
        t0 = time.monotonic()
        assert v.equal("9^{9^{9^{9}}}", "1", timeout_s=0.5) is False  # a tower sympy cannot finish
        assert time.monotonic() - t0 < 10
        assert v.timeouts == 1
        assert v.equal("\\frac{1}{2}", "0.5") is True  # a fresh worker took over
    finally:
        v.close()
