r"""The published systems' metric variants, registered in the one metric registry (`verify.registry`).

    from agentic_infer.verify import score
    score("search_o1_em", prediction, ["Paris"], text=output)   # Search-o1's own boxed extraction of `output`

A variant differs from the plain metric in its answer *extraction*, as the systems' code does; scoring is
`agentic_infer.verify`'s. Every name below is a key of `verify.METRICS` (so eval, synth's judge step and
filters, and rewards see the same ones):

| name | system | extraction | score |
|---|---|---|---|
| em, f1, cover_em | (SQuAD/HotpotQA) | the engine's prediction | EM / token F1 / gold-in-prediction |
| search_o1_em / _f1 / _acc | Search-o1 | last `\boxed{}` of the output (`\text{}` unwrapped); none = empty | EM / F1 / acc = gold-in-prediction |
| search_o1_*_backoff | Search-o1 | as above, an empty prediction replaced by the direct-generation run's | (computed by the runner with `--backoff DIR`) |
| search_r1_em | Search-R1 | last `<answer>` in the generated text (not the prompt: the reference's bug), else the engine's prediction | EM |
| r1_searcher_cover_em | R1-Searcher | last `<answer>`, else the engine's prediction | cover-EM |
| math_equal | (math-verify) | `\boxed{}` | math equivalence |
| math_equal_last_number | lm-eval-harness (GSM8K flexible-extract) | last number of the output | math equivalence |
| boxed_found | - | - | 1 when a `\boxed{}` answer was produced |
| judge_acc / r1_searcher_judge / asearcher_judge | LLM judge | engine prediction | binary equivalence verdict (runner, `--judge`) |

Task-specific metrics (BFCL AST match, Game of 24) register themselves from their task files.
Not covered: the LLM judges themselves (see `agentic_infer.engines.judge`), pass@k / maj@k (`eval.stats`).
"""

from __future__ import annotations

from agentic_infer.verify.extract import answer_tag, boxed_answer, extract_boxed
from agentic_infer.verify.maths import last_number, math_equal
from agentic_infer.verify.qa import cover_exact_match, exact_match, f1_score
from agentic_infer.verify.registry import Scored, metric

# ---------------------------------------------------------------------------------- extraction

def search_o1_answer(text: str | None) -> str:
    r"""Search-o1's QA extraction (`verify.boxed_answer`); '' when there is no `\boxed{}`."""
    return boxed_answer(text) or ""


def backoff(prediction: str | None, fallback: str | None) -> str | None:
    """Search-o1's answer backoff: an empty prediction takes the direct-generation run's prediction."""
    return fallback if not (prediction or "").strip() else prediction


# ---------------------------------------------------------------------------------- metrics

@metric("search_o1_em", "Search-o1 EM: last \\boxed{} (\\text{} unwrapped), SQuAD EM", "Search-o1")
def _so1_em(s: Scored) -> float:
    return exact_match(search_o1_answer(s.text), s.gold)


@metric("search_o1_f1", "Search-o1 F1 on its boxed extraction", "Search-o1")
def _so1_f1(s: Scored) -> float:
    return f1_score(search_o1_answer(s.text), s.gold)


@metric("search_o1_acc", "Search-o1 acc: normalised gold contained in its boxed extraction", "Search-o1")
def _so1_acc(s: Scored) -> float:
    pred = search_o1_answer(s.text)
    return cover_exact_match(pred, s.gold) if pred else 0.0


@metric("search_r1_em", "Search-R1 EM: last <answer> of the generated text (else the engine's answer)", "Search-R1")
def _sr1(s: Scored) -> float:
    tag = answer_tag(s.text)
    return exact_match(tag if tag is not None else s.prediction, s.gold)


@metric("r1_searcher_cover_em", "R1-Searcher cover-EM on the last <answer> (else the engine's answer)",
        "R1-Searcher")
def _r1s(s: Scored) -> float:
    tag = answer_tag(s.text)
    return cover_exact_match(tag if tag is not None else s.prediction, s.gold)


@metric("math_equal_last_number", "lm-evaluation-harness GSM8K flexible-extract: math equivalence of the last "
        "number in the output (no \\boxed{} needed)", "lm-eval-harness")
def _math_last(s: Scored) -> float:
    num = last_number(s.text)
    return float(num is not None and math_equal(num, s.gold))


@metric("boxed_found", "share of outputs with a \\boxed{} answer (format compliance)")
def _boxed(s: Scored) -> float:
    return float(extract_boxed(s.text) is not None)


__all__ = ["backoff", "search_o1_answer"]
