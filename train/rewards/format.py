"""Format rewards (1.0 well formed, 0.0 not) per dialect: tags balanced, in the allowed order, one answer last.

    dialect_format(RewardInput(text), dialect="r1_searcher")    # R1-Searcher (think + query tags + <answer>)
    toolrl_format(RewardInput(text))                             # ToolRL: <think>, then <tool_call> and/or <response>
    artist_format(RewardInput(text))                             # ARTIST: think -> <python> -> <output> -> <answer>

`tag_sequence` (from `agentic_infer.verify.extract`) reads a text as the ordered names of its tagged spans
(text outside tags is free) and returns None when a tag is unbalanced or spans nest. The dialects' tags come from
`agentic_infer.engines.dialects`, so a format reward and the engine that produced the text agree.
Not covered: graded format scores (each check is all-or-nothing; weight it in the reward sum).
"""

from __future__ import annotations

import re

from agentic_infer.engines.dialects import get_dialect
from agentic_infer.verify import extract_boxed
from agentic_infer.verify.extract import tag_sequence
from agentic_infer.verify.toolrl import TOOLRL_TAGS, toolrl_format_score
from train.rewards.base import RewardInput

THINK = ("<think>", "</think>")
ANSWER = ("<answer>", "</answer>")


def dialect_tags(dialect: str) -> dict[str, tuple[str, str]]:
    """{"think", "tool", "output"[, "answer"]} tags of a dialect (its first action is "tool")."""
    d = get_dialect(dialect)
    tags = {"think": THINK, "output": (d.result_begin.strip() or d.result_begin, d.result_end.strip() or d.result_end)}
    for i, a in enumerate(d.actions):
        tags["tool" if i == 0 else f"tool{i}"] = (a.begin, a.end.strip() or a.end)
    if d.answer == "answer_tag":
        tags["answer"] = ANSWER
    return tags


def dialect_format(inp: RewardInput, *, dialect: str = "r1_searcher", require_think: bool = False) -> float:
    """1.0 when the completion's tags are balanced, every tool call is followed by its output (when one
    came back), and the answer (the dialect's format) is stated once, last; else 0.0."""
    text = inp.completion
    d = get_dialect(dialect)
    seq = tag_sequence(text, dialect_tags(dialect))
    if seq is None or (require_think and "think" not in seq):
        return 0.0
    if d.answer == "answer_tag":
        if seq.count("answer") != 1 or seq[-1] != "answer" or not text.rstrip().endswith(ANSWER[1]):
            return 0.0
    elif extract_boxed(text) is None:
        return 0.0
    return 1.0


def r1_searcher_format(inp: RewardInput) -> float:
    """R1-Searcher's format: <think> reasoning, queries in <|begin_of_query|>…<|end_of_query|>, one <answer> last."""
    return dialect_format(inp, dialect="r1_searcher", require_think=True)


def toolrl_format(inp: RewardInput) -> float:
    """ToolRL's R_format ∈ {0, 1}: one <think> span, then a <tool_call> span and/or a <response> span, in order."""
    return toolrl_format_score(inp.completion)


_ARTIST_ORDER = re.compile(r"^(think )*(tool output (think )*)*answer $")


def artist_format(inp: RewardInput) -> float:
    """ARTIST's order: reasoning (<think>), each tool call (<python>) followed by its <output>, one <answer> last."""
    seq = tag_sequence(inp.completion, dialect_tags("artist"))
    return float(seq is not None and bool(_ARTIST_ORDER.match(" ".join(seq) + " ")))


__all__ = ["TOOLRL_TAGS", "artist_format", "dialect_format", "dialect_tags", "r1_searcher_format", "tag_sequence",
           "toolrl_format"]
