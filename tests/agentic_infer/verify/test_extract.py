"""Answer extraction: one function per answer format, and the dialects read their answers through it."""

import pytest

from agentic_infer.engines import dialects
from agentic_infer.errors import ConfigError
from agentic_infer.verify import (
    ANSWER_FORMATS,
    answer_tag,
    boxed_answer,
    extract_answer,
    extract_boxed,
    short_answer,
    yes_no_answer,
)


def test_boxed_answer_unwraps_text_and_keeps_math():
    assert boxed_answer(r"so \boxed{\frac{1}{2}} and \boxed{\text{Paris}}") == "Paris"
    assert boxed_answer(r"\boxed{ \text {New York} }") == "New York"
    assert boxed_answer(r"\boxed{\frac{1}{2}}") == extract_boxed(r"\boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert boxed_answer("no box") is None and boxed_answer(None) is None


def test_answer_tag_takes_the_last_one():
    assert answer_tag("<answer> a </answer> then <answer>b</answer>") == "b"
    assert answer_tag("<answer>unclosed") is None


@pytest.mark.parametrize(("text", "expected"), [
    (r"reasoning \boxed{\text{Paris}}", "Paris"),
    ("<answer>Rome</answer>", "Rome"),
    ("I think the final answer is Berlin.", "Berlin"),
    ("Answer: 1912", "1912"),
    ("\n\nMadrid.\nmore text", "Madrid"),
    ("   ", None),
    (None, None),
])
def test_short_answer_fallbacks(text, expected):
    assert short_answer(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    (r"\boxed{Yes, because}", "yes"),
    ("True. So no wait, the answer is false", "no"),
    (r"\boxed{maybe}", "maybe"),
    ("nothing to say", None),
])
def test_yes_no_answer(text, expected):
    assert yes_no_answer(text) == expected


def test_extract_answer_dispatches_by_format_and_names_an_unknown_one():
    text = r"<answer>42</answer> \boxed{\text{7}} and 1,234 apples"
    assert {f: extract_answer(f, text) for f in ANSWER_FORMATS} == {
        "boxed": "7", "answer_tag": "42", "short": "7", "yes_no": r"\text{7}", "last_number": "1234"}
    with pytest.raises(ConfigError, match=r"answer format 'json'.*choose one of"):
        extract_answer("json", text)


@pytest.mark.parametrize("name", sorted(dialects.DIALECTS))
def test_every_dialect_reads_its_answer_through_verify(name):
    dialect = dialects.DIALECTS[name]
    assert dialect.answer in ANSWER_FORMATS
    text = r"<answer>tagged</answer> \boxed{\text{boxed}}"
    assert dialects.extract_answer(dialect, text) == extract_answer(dialect.answer, text)
