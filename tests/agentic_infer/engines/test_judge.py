"""LLM judges over FakeLLM scripts: well-formed and malformed verdicts, self-consistency, retries, the
SQLite cache hit path, batching; the yes/no judge also on the embedded model.
MetricJudge is tested in tests/agentic_infer/verify."""

import pytest

from agentic_infer.engines.judge import (
    INVALID,
    EquivalenceJudge,
    JudgeCache,
    RubricJudge,
    SimpleQAGrader,
    YesNoEquivalenceJudge,
    parse_equivalence,
    parse_rubric_score,
    parse_simpleqa_grade,
)
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.verify import Judge, Verdict

# --------------------------------------------------------------------------------------------------
# parsers


@pytest.mark.parametrize("text, expected", [
    ("CORRECT", "CORRECT"),
    ("The gold target is Paris and the prediction says Paris.\nGrade: CORRECT", "CORRECT"),
    ("Grade: **NOT_ATTEMPTED**", "NOT_ATTEMPTED"),
    ("It gives a different year.\n\n**Grade:** INCORRECT.", "INCORRECT"),
    ("Final grade: not attempted", "NOT_ATTEMPTED"),
    ("C", "NOT_ATTEMPTED"),
    ("(A)", "CORRECT"),
    ("Grade: B", "INCORRECT"),
    # the reference parser takes the first A/B/C anywhere: this would have been CORRECT
    ("A prediction of 'I don't know' is NOT_ATTEMPTED.", "NOT_ATTEMPTED"),
    ("A model answered. Since it refused, the grade is NOT_ATTEMPTED", "NOT_ATTEMPTED"),
    ("Grade: NOT_ATTEMPTED\nThis is clearly not CORRECT as a fact.", "NOT_ATTEMPTED"),
    ("<think>maybe CORRECT</think>\nGrade: INCORRECT", "INCORRECT"),
    ("This answer is NOT CORRECT", None),  # negated: ambiguous, never CORRECT
    ("CORRECT or INCORRECT, hard to say", None),
    ("I think it is right", None),
    ("", None),
])
def test_parse_simpleqa_grade(text, expected):
    assert parse_simpleqa_grade(text) == expected


@pytest.mark.parametrize("text, expected", [
    ('{"reason": "same person", "equivalent": true}', (True, "same person")),
    ('```json\n{"reason": "x", "equivalent": false}\n```', (False, "x")),
    ("Sure! Here it is: {'reason': \"it's the same city\", 'equivalent': 'Yes',}", (True, "it's the same city")),
    ('{"reason": "n", "equivalent": False}', (False, "n")),
    ('{"Judgement": "correct"}', (True, "")),
    ('{"thoughts": {"a": 1}, "is_equivalent": "no"}', (False, "")),
    ('"equivalent": true, "reason": "cut off', (True, "")),
    ("yes", (True, "")),
    ("Verdict: No.", (False, "")),
    ("I cannot decide.", None),
    ('{"reason": "only a reason"}', None),
])
def test_parse_equivalence(text, expected):
    assert parse_equivalence(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("Clear and correct.\nScore: 8", 8.0),
    ("Score: **7**/10", 7.0),
    ('{"score": 9, "reason": "fine"}', 9.0),
    ("I would give it 6/10.", 6.0),
    ("Score: 3 at first... on reflection, Score: 5", 5.0),
    ("Score: 11", None),
    ("Score: 0", None),
    ("no number here", None),
])
def test_parse_rubric_score(text, expected):
    assert parse_rubric_score(text) == expected


# --------------------------------------------------------------------------------------------------
# LLM judges


async def test_equivalence_judge_well_formed_and_prompt():
    llm = FakeLLM(['{"reason": "same person", "equivalent": true}'])
    judge = EquivalenceJudge(llm)
    assert isinstance(judge, Judge)
    v = await judge.score("Who wrote Hamlet?", "Shakespeare", "William Shakespeare")
    assert v == Verdict("CORRECT", 1.0, "same person", ('{"reason": "same person", "equivalent": true}',))
    assert v.correct and not v.cached
    p = llm.prompts[0]
    assert "Who wrote Hamlet?" in p and "Gold answer: William Shakespeare" in p and "Predicted answer: Shakespeare" in p


async def test_malformed_verdict_is_resampled_then_invalid():
    llm = FakeLLM(["hmm, hard to say", "```json\n{'reason': 'different', 'equivalent': 'No',}\n```"])
    v = await EquivalenceJudge(llm, parse_retries=1).score("q", "a", "b")
    assert (v.label, v.score, v.reason) == ("INCORRECT", 0.0, "different")
    assert len(v.samples) == 2 and llm.remaining == 0
    llm = FakeLLM(["no idea", "still no idea"])
    v = await EquivalenceJudge(llm, parse_retries=1).score("q", "a", "b")
    assert (v.label, v.score) == (INVALID, 0.0) and v.samples == ("no idea", "still no idea")


async def test_self_consistency_majority_and_share():
    yes, no = '{"equivalent": true, "reason": "y"}', '{"equivalent": false, "reason": "n"}'
    v = await EquivalenceJudge(FakeLLM([yes, no, yes]), samples=3).score("q", "a", "b")
    assert (v.label, v.reason) == ("CORRECT", "y") and v.score == pytest.approx(2 / 3)
    v = await EquivalenceJudge(FakeLLM([yes, no, "garbage", no]), samples=4).score("q", "a", "b")
    assert v.label == "INCORRECT" and v.score == pytest.approx(1 / 3)  # the garbage sample does not vote
    g = SimpleQAGrader(FakeLLM(["Grade: CORRECT", "Grade: NOT_ATTEMPTED", "NOT_ATTEMPTED"]), samples=3)
    v = await g.score("q", "I don't know", "Paris")
    assert v.label == "NOT_ATTEMPTED" and v.score == pytest.approx(1 / 3)


async def test_prediction_truncated_in_the_middle():
    llm = FakeLLM(['{"equivalent": false}'])
    await EquivalenceJudge(llm, max_prediction_chars=100).score("q", "H" * 5000 + "TAIL", "gold")
    assert "characters cut" in llm.prompts[0] and "TAIL" in llm.prompts[0] and len(llm.prompts[0]) < 2000


async def test_cache_hit_makes_no_backend_call(tmp_path):
    path = tmp_path / "judge.sqlite"
    llm = FakeLLM(['{"reason": "r", "equivalent": true}'])
    v1 = await EquivalenceJudge(llm, cache=path).score("q", "a", "b")
    assert not v1.cached
    empty = FakeLLM([])  # would raise if asked
    judge = EquivalenceJudge(empty, cache=path, model=EquivalenceJudge(llm).model)
    v2 = await judge.score("q", "a", "b")
    assert v2.cached and (v2.label, v2.score, v2.reason) == (v1.label, v1.score, v1.reason)
    assert empty.prompts == [] and judge.calls == 0 and judge.cache.hits == 1
    # another judge model or another prompt is a miss
    with pytest.raises(BackendError, match="ran out"):
        await EquivalenceJudge(FakeLLM([]), cache=path, model="other-model").score("q", "a", "b")
    assert len(JudgeCache(path)) == 1


async def test_invalid_verdicts_are_not_cached(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    v = await EquivalenceJudge(FakeLLM(["?"]), cache=cache, parse_retries=0).score("q", "a", "b")
    assert v.label == INVALID and len(cache) == 0


class Flaky(FakeLLM):
    def __init__(self, fails: int, responses, retryable: bool = True):
        super().__init__(responses)
        self.fails, self.retryable = fails, retryable

    async def generate(self, prompt, params):
        if self.fails:
            self.fails -= 1
            raise BackendError("HTTP 503 from judge server", retryable=self.retryable, status_code=503)
        return await super().generate(prompt, params)


async def test_backend_retries():
    llm = Flaky(2, ["Score: 9"])
    judge = RubricJudge(llm, backoff_s=0.0, max_retries=3)
    v = await judge.score("Write a haiku", "an old silent pond")
    assert (v.label, v.score) == ("9", 9.0) and judge.calls == 3
    with pytest.raises(BackendError, match="503"):
        await RubricJudge(Flaky(5, ["Score: 9"]), backoff_s=0.0, max_retries=2).score("t", "r")
    with pytest.raises(BackendError, match="503"):
        await RubricJudge(Flaky(1, ["Score: 9"], retryable=False), backoff_s=0.0).score("t", "r")


async def test_rubric_judge_mean_and_criteria():
    llm = FakeLLM(["Good but terse.\nScore: 8", "Score: 6/10", "Score: 42"])
    v = await RubricJudge(llm, samples=3, rubric="Prefer cited facts.").score("task", "resp", "ref")
    assert (v.label, v.score) == ("7", 7.0) and v.reason.startswith("Good but terse")
    assert "Criteria: Prefer cited facts." in llm.prompts[0] and "Reference answer: ref" in llm.prompts[0]


async def test_score_many_batches_in_order():
    def reply(prompt: str) -> str:
        return '{"equivalent": true}' if "Predicted answer: Paris" in prompt else '{"equivalent": false}'

    judge = EquivalenceJudge(FakeLLM(reply))
    items = [("Capital of France?", "Paris", "Paris"), {"question": "Capital?", "prediction": "Rome",
                                                        "reference": "Paris"}, ("c", "Paris", "paris")]
    got = await judge.score_many(items, concurrency=2)
    assert [v.label for v in got] == ["CORRECT", "INCORRECT", "CORRECT"]


async def test_judge_argument_errors():
    with pytest.raises(ConfigError, match="needs a reference"):
        await EquivalenceJudge(FakeLLM(["x"])).score("q", "a")
    with pytest.raises(ConfigError, match="samples=0"):
        EquivalenceJudge(FakeLLM(["x"]), samples=0)


# --------------------------------------------------------------------------------------------------
# The yes/no judge: P(Yes) from one token's logprobs


async def test_yes_no_judge_reads_the_first_token(tmp_path):
    llm = FakeLLM(["Yes", "No", "Maybe", "Perhaps"])  # FakeLLM's byte tokens: "Y" / "N" / "M" / "P"
    judge = YesNoEquivalenceJudge(llm, cache=tmp_path / "j.sqlite")
    yes = await judge.score("Who wrote Hamlet?", "Shakespeare", "William Shakespeare")
    assert (yes.label, yes.score, yes.samples) == ("CORRECT", 1.0, ("P(yes)=1.0000",))
    assert "Answer Yes or No.<|im_end|>" in llm.prompts[0] and "Gold answer: William Shakespeare" in llm.prompts[0]
    no = await judge.score("Who wrote Hamlet?", "Dickens", "William Shakespeare")
    assert (no.label, no.score) == ("INCORRECT", 0.0)
    bad = await judge.score("q", "a", "b")  # neither yes nor no, twice (parse_retries=1)
    assert bad.label == INVALID and bad.samples == ("M", "P")
    again = await judge.score("Who wrote Hamlet?", "Shakespeare", "William Shakespeare")
    assert again.cached and again.score == 1.0 and llm.remaining == 0
    with pytest.raises(ConfigError, match="samples=3"):
        YesNoEquivalenceJudge(llm, samples=3)


async def test_yes_no_judge_on_the_embedded_model(embedded_llm):
    from agentic_infer.engines.judge_parse import yes_probability
    from agentic_infer.types import SamplingParams

    judge = YesNoEquivalenceJudge(embedded_llm)
    v = await judge.score("What is the capital of France?", "Paris", "Paris")
    assert v.label in ("CORRECT", "INCORRECT") and 0.0 < v.score < 1.0
    prompt = embedded_llm.render(judge.messages("What is the capital of France?", "Paris", "Paris"))
    [c] = await embedded_llm.generate(prompt, SamplingParams(max_tokens=1, temperature=0.0, logprobs=20))
    assert v.score == pytest.approx(yes_probability(c), abs=1e-4)
