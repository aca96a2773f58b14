"""Labelled pairs from gold answers and the agreement figures, with rule-based and scripted judges."""

import pytest

from agentic_infer.engines.judge import YesNoEquivalenceJudge
from agentic_infer.errors import ConfigError
from agentic_infer.tasks import get_task
from agentic_infer.testing import FakeLLM
from agentic_infer.verify import MetricJudge
from eval.judge_agreement import judge_agreement, labelled_pairs, roc_auc
from tests.conftest import shared_data

EXAMPLES = [{"question": f"q{i}", "gold": [f"answer {i}"] + ([f"alias {i}"] if i % 3 == 0 else [])} for i in range(12)]


def test_pairs_are_balanced_and_labelled_correctly():
    pairs = labelled_pairs(EXAMPLES, n=20, seed=1)
    assert len(pairs) == 20 and sum(p.equivalent for p in pairs) == 10
    for p in pairs:
        i = int(p.question[1:])
        assert p.reference == f"answer {i}"
        if p.equivalent:
            assert p.prediction in (f"alias {i}", f"The answer is answer {i}.")
        else:
            assert p.prediction.startswith("answer ") and p.prediction != p.reference
    assert any(p.prediction.startswith("alias") for p in pairs)  # aliases are used when the data has them
    assert labelled_pairs(EXAMPLES, n=20, seed=1) == pairs
    with pytest.raises(ConfigError, match="at least 2 examples"):
        labelled_pairs(EXAMPLES[:1], n=4)
    with pytest.raises(ConfigError, match="no negatives"):
        labelled_pairs([{"question": "a", "gold": ["x"]}, {"question": "b", "gold": ["X"]}], n=4)


def test_roc_auc():
    assert roc_auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert roc_auc([0.5, 0.5], [True, False]) == 0.5
    assert roc_auc([0.1, 0.9], [True, False]) == 0.0
    assert roc_auc([0.3], [True]) is None


async def test_rule_judges_on_real_musique_pairs():
    pairs = labelled_pairs(get_task("musique").load(shared_data("multihop/musique_ans_dev_150.jsonl")), n=40)
    em = await judge_agreement(MetricJudge("em"), pairs)
    cover = await judge_agreement(MetricJudge("cover_em"), pairs)
    assert em["tnr"] == 1.0 and em["tpr"] < 0.5  # restated answers and aliases fail exact match
    assert cover["tnr"] == 1.0 and cover["tpr"] > em["tpr"] and cover["auc"] > em["auc"]
    assert em["invalid_share"] == 0.0 and len(em["verdicts"]) == 40


async def test_an_always_yes_judge_is_at_chance():
    r = await judge_agreement(YesNoEquivalenceJudge(FakeLLM(reply="Yes")), labelled_pairs(EXAMPLES, n=10))
    assert (r["accuracy"], r["balanced_accuracy"], r["tpr"], r["tnr"], r["auc"]) == (0.5, 0.5, 1.0, 0.0, 0.5)
