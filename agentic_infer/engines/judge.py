"""LLM judges behind the `verify.Judge` interface: `score(question, prediction, reference) -> Verdict`, and
`make_judge`, the one factory eval, synth and fuzzqa build them with.

    judge = make_judge("hotpotqa", llm, verdict="json", cache="~/.cache/agentic-infer/judge.sqlite")
    v = await judge.score("Who wrote Hamlet?", "Shakespeare", ["William Shakespeare", "The Bard"])
    v.label, v.score, v.reason              # "CORRECT", 1.0, "same person"
    verdicts = await judge.score_many([(q, p, golds), ...], concurrency=8)   # verify.judge_answers

- `make_judge(task, llm, verdict=json|yes-no, cache=...)`: `json` -> `EquivalenceJudge` (on SimpleQA its
  published grader `SimpleQAGrader`), `yes-no` -> `YesNoEquivalenceJudge`; the old spelling `yesno` is a
  ConfigError that names `yes-no`.
- `EquivalenceJudge`: binary "is the prediction semantically equivalent to the gold answer?" with a
  JSON verdict (Chain-of-Agents / ASearcher style); labels CORRECT / INCORRECT; over-long
  predictions are cut in the middle (`max_prediction_chars`).
- `YesNoEquivalenceJudge`: the same question answered with one token; `score` = P(Yes) from the
  logprobs (for small local judges that write no JSON; one token per item).
- `SimpleQAGrader`: CORRECT / INCORRECT / NOT_ATTEMPTED with the anchored `parse_simpleqa_grade`.
- `RubricJudge`: a 1-10 rating with reasons (tree search values, synth filters); `score` is the
  mean rating, `label` its rounded value.
`Verdict`, the `Judge` protocol and the rule-based `MetricJudge` live in `agentic_infer.verify.judge`, the
rule for judging many answers (empty answers, gold aliases, concurrency) in `agentic_infer.verify.judging`.

The LLM judges share `LLMJudge`: self-consistency over `samples` outputs (majority label, `score` =
share of CORRECT votes, or the mean rating), a persistent SQLite cache keyed by judge model +
prompt + sampling settings (a hit makes no backend call), retries of retryable `BackendError`s
with exponential backoff, re-sampling when no output parses (`parse_retries`). A list of gold aliases
is shown in one prompt as `alias1 | alias2`. When nothing parses the verdict is label "INVALID", score
0.0, with the raw outputs kept in `samples` (and logged), never a silent pass.
Prompts are ours (the reference prompts' facts, not their prose). Parsers: `judge_parse`.
Not covered: pairwise preference judges.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.backends.base import LLM
from agentic_infer.engines.judge_cache import JudgeCache
from agentic_infer.engines.judge_parse import (
    parse_equivalence,
    parse_rubric_score,
    parse_simpleqa_grade,
    truncate_middle,
    yes_probability,
)
from agentic_infer.errors import AgenticError, BackendError, ConfigError
from agentic_infer.types import Message, SamplingParams
from agentic_infer.verify.judge import Verdict
from agentic_infer.verify.judging import JudgeItem, judge_answers

log = logging.getLogger(__name__)

INVALID = "INVALID"
VERDICTS = ("json", "yes-no")
RENAMED_VERDICTS = {"yesno": "yes-no"}  # old spellings, refused with the new name for one release


def check_verdict(verdict: str) -> str:
    """`verdict` when it is one of `VERDICTS`; a ConfigError names the choices (and the new spelling of an old one)."""
    if verdict in RENAMED_VERDICTS:
        raise ConfigError(f"judge verdict {verdict!r} is now spelled {RENAMED_VERDICTS[verdict]!r} (one vocabulary "
                          f"for eval, synth and fuzzqa); write {RENAMED_VERDICTS[verdict]}")
    if verdict not in VERDICTS:
        raise ConfigError(f"judge verdict {verdict!r}: choose one of {', '.join(VERDICTS)}")
    return verdict


def _model_id(llm: LLM) -> str:
    for attr in ("model_id", "model", "model_path", "path"):
        v = getattr(llm, attr, None)
        if isinstance(v, (str, os.PathLike)):
            return f"{llm.name}:{v}"
    return str(getattr(llm, "name", type(llm).__name__))


class LLMJudge:
    """Shared machinery of the LLM judges (see the module docstring). Subclasses set the prompt and parser."""

    system_prompt = "You are a careful, impartial grader."

    def __init__(self, llm: LLM, *, model: str | None = None, samples: int = 1, temperature: float | None = None,
                 max_tokens: int = 512, cache: JudgeCache | str | os.PathLike[str] | None = None,
                 max_retries: int = 3, backoff_s: float = 1.0, parse_retries: int = 1,
                 max_prediction_chars: int = 4000, seed: int | None = None):
        if samples < 1:
            raise ConfigError(f"{type(self).__name__}: samples={samples!r} must be >= 1")
        if max_retries < 0 or parse_retries < 0:
            raise ConfigError(f"{type(self).__name__}: max_retries={max_retries!r} and parse_retries="
                              f"{parse_retries!r} must be >= 0")
        self.llm = llm
        self.model = model or _model_id(llm)
        self.samples = samples
        self.temperature = (0.0 if samples == 1 else 0.7) if temperature is None else temperature
        self.params = SamplingParams(max_tokens=max_tokens, temperature=self.temperature, n=samples, seed=seed)
        self.cache = JudgeCache(cache) if isinstance(cache, (str, Path, os.PathLike)) else cache
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.parse_retries = parse_retries
        self.max_prediction_chars = max_prediction_chars
        self.calls = 0  # backend calls made (cache hits make none)

    # -- subclass hooks ---------------------------------------------------------------------------
    def user_prompt(self, question: str, prediction: str, reference: str | None) -> str:
        raise NotImplementedError

    def parse(self, text: str) -> Any:
        """One output -> a parsed vote, or None when it holds no verdict."""
        raise NotImplementedError

    def outputs(self, completions: Sequence[Any]) -> list[str]:
        """The backend's completions -> the outputs that are parsed and cached (their texts by default)."""
        return [c.text for c in completions]

    def aggregate(self, parsed: list[tuple[Any, str]], outputs: list[str]) -> Verdict:
        raise NotImplementedError

    # -- machinery --------------------------------------------------------------------------------
    def messages(self, question: str, prediction: str | None, reference: str | Sequence[str] | None) -> list[Message]:
        pred = truncate_middle(prediction or "", self.max_prediction_chars)
        ref = reference if reference is None or isinstance(reference, str) else " | ".join(map(str, reference))
        return [Message("system", self.system_prompt), Message("user", self.user_prompt(question, pred, ref))]

    def _prompt_text(self, msgs: list[Message]) -> tuple[Any, str]:
        try:
            text = self.llm.render(msgs)
            return text, text
        except AgenticError:
            return msgs, "\n\n".join(f"[{m.role}]\n{m.content}" for m in msgs)

    async def _generate(self, prompt: Any) -> list[str]:
        attempt = 0
        while True:
            try:
                self.calls += 1
                return self.outputs(await self.llm.generate(prompt, self.params))
            except BackendError as e:
                if not e.retryable or attempt >= self.max_retries:
                    raise
                delay = self.backoff_s * (2 ** attempt)
                attempt += 1
                log.warning("%s: backend error (%s); retry %d/%d in %.1f s", type(self).__name__, e, attempt,
                            self.max_retries, delay)
                await asyncio.sleep(delay)

    async def score(self, question: str, prediction: str | None,
                    reference: str | Sequence[str] | None = None) -> Verdict:
        """The verdict on one prediction; `reference` is the gold answer or the list of its aliases."""
        prompt, text = self._prompt_text(self.messages(question, prediction, reference))
        key = None
        if self.cache is not None:
            key = self.cache.key(model=self.model, prompt=text,
                                 params={"n": self.samples, "temperature": self.temperature,
                                         "max_tokens": self.params.max_tokens, "seed": self.params.seed})
            hit = self.cache.get(key)
            if hit is not None:
                parsed = [(p, o) for o in hit if (p := self.parse(o)) is not None]
                if parsed:
                    v = self.aggregate(parsed, hit)
                    return Verdict(v.label, v.score, v.reason, v.samples, cached=True)
        outputs: list[str] = []
        parsed: list[tuple[Any, str]] = []
        for _ in range(1 + self.parse_retries):
            new = await self._generate(prompt)
            outputs += new
            parsed += [(p, o) for o in new if (p := self.parse(o)) is not None]
            if parsed:
                break
        if not parsed:
            log.warning("%s: no parseable verdict in %d outputs, e.g. %r", type(self).__name__, len(outputs),
                        outputs[-1][:200] if outputs else "")
            return Verdict(INVALID, 0.0, "no parseable verdict in the judge's output", tuple(outputs))
        if self.cache is not None and key is not None:
            self.cache.put(key, self.model, text, outputs)
        return self.aggregate(parsed, outputs)

    async def score_many(self, items: Iterable[JudgeItem], *, concurrency: int = 8) -> list[Verdict | None]:
        """`verify.judge_answers(self, items, concurrency=...)`: the one rule for empty answers and gold aliases."""
        return await judge_answers(self, items, concurrency=concurrency)


def _majority(labels: Sequence[str]) -> str:
    counts = Counter(labels)
    best = max(counts.values())
    return next(lab for lab in labels if counts[lab] == best)  # ties: the first seen


class EquivalenceJudge(LLMJudge):
    """Is the prediction semantically equivalent to the gold answer? CORRECT / INCORRECT from a JSON verdict."""

    def user_prompt(self, question: str, prediction: str, reference: str | None) -> str:
        return self.case(question, prediction, reference) + (
            'Reply with one JSON object and nothing else: {"reason": "<one sentence>", "equivalent": true|false}')

    def case(self, question: str, prediction: str, reference: str | None) -> str:
        """The instructions and the item, without the reply format."""
        if reference is None:
            raise ConfigError(f"{type(self).__name__}.score needs a reference (gold) answer")
        return (
            "Decide whether the predicted answer means the same thing as the gold answer for this question. "
            "Ignore differences of wording, formatting, capitalisation, units written differently, and extra "
            "detail that does not contradict the gold answer. A prediction that hedges between several answers "
            "or gives a different entity, number or date is not equivalent.\n\n"
            f"Question: {question}\nGold answer: {reference}\nPredicted answer: {prediction}\n\n"
        )

    def parse(self, text: str) -> tuple[bool, str] | None:
        return parse_equivalence(text)

    def aggregate(self, parsed: list[tuple[Any, str]], outputs: list[str]) -> Verdict:
        yes = [p for p, _ in parsed if p[0]]
        share = len(yes) / len(parsed)
        label = "CORRECT" if share > 0.5 else "INCORRECT"
        reason = next((p[1] for p, _ in parsed if p[0] == (label == "CORRECT")), "")
        return Verdict(label, share, reason, tuple(outputs))


class YesNoEquivalenceJudge(EquivalenceJudge):
    """The equivalence question answered with one token: `score` = P(Yes) / (P(Yes) + P(No)), CORRECT above 0.5.

    For judges that do not write reliable JSON (small local models) and for cheap judging: one generated
    token with `top_logprobs` alternatives, greedy, one sample. A backend without logprobs falls back to
    the token's text (Yes -> 1.0, No -> 0.0); an answer that is neither is INVALID after `parse_retries`.
    The cached output is the probability, written `P(yes)=0.8123`.
    """

    _OUTPUT = re.compile(r"^P\(yes\)=([01](?:\.\d+)?)$")

    def __init__(self, llm: LLM, *, top_logprobs: int = 20, **kw: Any):
        if kw.get("samples", 1) != 1:
            raise ConfigError(f"YesNoEquivalenceJudge: samples={kw['samples']!r}; P(Yes) is read from one greedy "
                              "token, so it takes samples=1 (use EquivalenceJudge for self-consistency)")
        kw.update(max_tokens=1, temperature=0.0)
        super().__init__(llm, **kw)
        self.params = self.params.replace(logprobs=top_logprobs)

    def user_prompt(self, question: str, prediction: str, reference: str | None) -> str:
        return self.case(question, prediction, reference) + (
            "Is the predicted answer equivalent to the gold answer? Answer Yes or No.")

    def outputs(self, completions: Sequence[Any]) -> list[str]:
        out = []
        for c in completions:
            p = yes_probability(c)
            word = c.text.strip().lower()
            if p is None and word in ("yes", "no"):
                p = float(word == "yes")
            out.append(f"P(yes)={p:.4f}" if p is not None else c.text)
        return out

    def parse(self, text: str) -> float | None:
        m = self._OUTPUT.match(text.strip())
        return float(m.group(1)) if m else None

    def aggregate(self, parsed: list[tuple[Any, str]], outputs: list[str]) -> Verdict:
        p = parsed[0][0]
        return Verdict("CORRECT" if p > 0.5 else "INCORRECT", p, f"P(Yes)={p:.4f}", tuple(outputs))


class SimpleQAGrader(LLMJudge):
    """SimpleQA's three grades: CORRECT / INCORRECT / NOT_ATTEMPTED; `score` = share of CORRECT votes."""

    no_answer_label = "NOT_ATTEMPTED"  # an empty answer, judged without a call (`verify.judge_answers`)

    def user_prompt(self, question: str, prediction: str, reference: str | None) -> str:
        if reference is None:
            raise ConfigError("SimpleQAGrader.score needs a reference (gold target)")
        return (
            "Grade a predicted answer against the gold target.\n"
            "- CORRECT: the prediction contains the gold target's meaning fully and contradicts nothing in it "
            "(extra correct detail, different wording, and hedging that still commits to the right answer are "
            "fine; numbers must match to the precision of the gold target).\n"
            "- INCORRECT: the prediction states something that contradicts the gold target, or commits to "
            "several candidate answers one of which is wrong.\n"
            "- NOT_ATTEMPTED: the prediction does not give the gold target's information and does not contradict "
            "it (e.g. 'I don't know', a refusal, or an answer that is only partly there without any wrong "
            "statement).\n\n"
            f"Question: {question}\nGold target: {reference}\nPredicted answer: {prediction}\n\n"
            "Explain in one or two sentences, then end with a final line exactly of the form "
            "'Grade: CORRECT', 'Grade: INCORRECT' or 'Grade: NOT_ATTEMPTED'."
        )

    def parse(self, text: str) -> str | None:
        return parse_simpleqa_grade(text)

    def aggregate(self, parsed: list[tuple[Any, str]], outputs: list[str]) -> Verdict:
        labels = [p for p, _ in parsed]
        label = _majority(labels)
        reason = next(o for p, o in parsed if p == label).strip()
        return Verdict(label, labels.count("CORRECT") / len(labels), reason[-500:], tuple(outputs))


class RubricJudge(LLMJudge):
    """A 1-10 rating with reasons; `rubric` adds task-specific criteria. `score` = the mean rating."""

    def __init__(self, llm: LLM, *, rubric: str | None = None, **kw: Any):
        super().__init__(llm, **kw)
        self.rubric = rubric

    def user_prompt(self, question: str, prediction: str, reference: str | None) -> str:
        ref = f"Reference answer: {reference}\n" if reference else ""
        crit = f"Criteria: {self.rubric}\n" if self.rubric else ""
        return (
            "Rate the response to the task on a scale from 1 (useless or wrong) to 10 (correct, complete and "
            "well reasoned).\n"
            f"{crit}\nTask: {question}\n{ref}Response: {prediction}\n\n"
            "Give your reasons briefly, then end with a final line of the form 'Score: N' (N an integer 1-10)."
        )

    def parse(self, text: str) -> float | None:
        return parse_rubric_score(text)

    def aggregate(self, parsed: list[tuple[Any, str]], outputs: list[str]) -> Verdict:
        scores = [p for p, _ in parsed]
        mean = sum(scores) / len(scores)
        reason = parsed[0][1].strip()
        return Verdict(str(int(round(mean))), mean, reason[-1000:], tuple(outputs))


def make_judge(task: str, llm: LLM, *, verdict: str = "json", cache: JudgeCache | str | os.PathLike[str] | None = None,
               **options: Any) -> LLMJudge:
    """The equivalence judge for `task` in verdict format `verdict` (see the module docstring); `options` go to
    the judge (e.g. `max_tokens`, `samples`)."""
    if check_verdict(verdict) == "yes-no":
        return YesNoEquivalenceJudge(llm, cache=cache, **options)
    return (SimpleQAGrader if task == "simpleqa" else EquivalenceJudge)(llm, cache=cache, **options)


__all__ = [
    "INVALID",
    "VERDICTS",
    "EquivalenceJudge",
    "JudgeCache",
    "LLMJudge",
    "RubricJudge",
    "SimpleQAGrader",
    "YesNoEquivalenceJudge",
    "check_verdict",
    "make_judge",
    "parse_equivalence",
    "parse_rubric_score",
    "parse_simpleqa_grade",
]
