"""ToolRL's reward (Qian et al. 2025, verl/utils/reward_score/rlla.py): R = R_format ∈ {0, 1} + R_correct ∈ [−3, 3].

    calls = parse_tool_calls('<think>..</think>\\n<tool_call>\\n{"name": "f", "parameters": {"x": 1}}\\n</tool_call>')
    toolrl_correctness(calls, [("f", {"x": 1})])                 # 3.0
    toolrl_score(text, gold_text)                                # ToolRLScore(format=1.0, correctness=3.0), .reward 4.0

R_correct: with G the gold calls and P the predicted ones, r_name = |N_G ∩ N_P| / |N_G ∪ N_P| over the
multisets of tool names (ToolRL's `match_score`); each gold call g is matched to at most one predicted
call p *of the same name*, scoring |keys(g) ∩ keys(p)| / |keys(g) ∪ keys(p)| + Σ_{k∈keys(g)} 1[g[k] = p[k]];
S_max = 1 + |G| + Σ_g |keys(g)| and R_correct = 6·(r_name + Σ matches)/S_max − 3. The matching is the best
one to one (exhaustive up to 7 calls, greedy beyond; ToolRL is greedy in gold order, which can only score
lower). No gold call and no predicted call scores 3 (ToolRL scores 0 for rows whose gold is a <response>
only); unparseable calls score −3.

R_format (`toolrl_format_score`): one <think> span, then a <tool_call> span and/or a <response> span, in
that order, nothing nested or unclosed. With `expect` (the parts the gold answer has, `gold_parts`), the
spans must be exactly <think> plus those parts, as ToolRL's gold-aware patterns require; whitespace
between spans is free (ToolRL's regexes want single newlines).

Calls are JSON objects `{"name", "parameters"|"arguments"}` one per line (or a JSON list) inside
`<tool_call>…</tool_call>`. `train.rewards.toolrl` adapts these to RewardInput; the BFCL and ToolRL envs
(`agentic_infer.envs.bfcl`) report them in their verdicts. Not covered: fuzzy value matching (values
compare by Python equality, as ToolRL's), the length reward and the reward schedules of ToolRL's ablations.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.verify.extract import tag_sequence

Call = tuple[str, dict[str, Any]]
TOOLRL_TAGS = {"think": ("<think>", "</think>"), "tool_call": ("<tool_call>", "</tool_call>"),
               "response": ("<response>", "</response>")}
_ORDER = re.compile(r"^think (tool_call )?(response )?$")


def _call(obj: Any) -> Call:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str):
        raise ValueError("a tool call is a JSON object with a 'name'")
    params = obj.get("parameters", obj.get("arguments", {}))
    if isinstance(params, str):
        params = json.loads(params)
    if not isinstance(params, Mapping):
        raise ValueError("parameters must be an object")
    return obj["name"], dict(params)


def parse_tool_calls(text: str) -> list[Call] | None:
    """The (name, parameters) calls in the `<tool_call>` blocks of `text`; None when one is malformed."""
    calls: list[Call] = []
    begin, end_tag = TOOLRL_TAGS["tool_call"]
    pos = 0
    try:
        while (start := text.find(begin, pos)) != -1:
            end = text.find(end_tag, start)
            if end == -1:
                return None
            body = text[start + len(begin):end].strip()
            pos = end + len(end_tag)
            try:
                items = json.loads(body)
                items = items if isinstance(items, list) else [items]
            except json.JSONDecodeError:
                items = [json.loads(line) for line in body.splitlines() if line.strip()]
            calls += [_call(o) for o in items]
    except (ValueError, TypeError):
        return None
    return calls


def as_calls(gold: Any) -> list[Call]:
    """Gold calls from a JSON string, a list of call dicts or a list of (name, params) pairs."""
    if isinstance(gold, str):
        gold = json.loads(gold) if gold.strip() else []
    if isinstance(gold, Mapping):
        gold = [gold]
    try:
        return [c if isinstance(c, tuple) else _call(c) for c in gold]
    except (ValueError, TypeError) as e:
        raise ConfigError(f"gold tool calls {gold!r}: {e}; pass [{{'name': ..., 'parameters': {{...}}}}, ...]") from e


def _pair(g: Call, p: Call) -> float:
    if g[0] != p[0]:
        return 0.0  # ToolRL only matches calls of the same tool
    gk, pk = set(g[1]), set(p[1])
    jac = len(gk & pk) / len(gk | pk) if gk | pk else 1.0
    return jac + sum(1.0 for k in gk if k in p[1] and p[1][k] == g[1][k])


def _best_match(gold: Sequence[Call], pred: Sequence[Call]) -> float:
    if not gold or not pred:
        return 0.0
    if min(len(gold), len(pred)) <= 7 and max(len(gold), len(pred)) <= 7:
        if len(gold) <= len(pred):
            return max(sum(_pair(g, pred[j]) for g, j in zip(gold, perm))
                       for perm in itertools.permutations(range(len(pred)), len(gold)))
        return max(sum(_pair(gold[i], p) for p, i in zip(pred, perm))
                   for perm in itertools.permutations(range(len(gold)), len(pred)))
    left, total = list(pred), 0.0
    for g in gold:
        if not left:
            break
        j = max(range(len(left)), key=lambda k: _pair(g, left[k]))
        total += _pair(g, left.pop(j))
    return total


def _name_overlap(gold: Sequence[Call], pred: Sequence[Call]) -> float:
    cg, cp = Counter(n for n, _ in gold), Counter(n for n, _ in pred)
    common = sum((cg & cp).values())
    return common / (len(gold) + len(pred) - common)


def toolrl_correctness(pred: Sequence[Call] | None, gold: Sequence[Call]) -> float:
    """R_correct ∈ [−3, 3] (see the module docstring); `pred=None` (unparseable) scores −3."""
    if pred is None:
        return -3.0
    if not gold and not pred:
        return 3.0
    r_name = _name_overlap(gold, pred)
    s_max = 1 + len(gold) + sum(len(p) for _, p in gold)
    return 6 * (r_name + _best_match(gold, pred)) / s_max - 3


def gold_parts(gold_text: str) -> frozenset[str]:
    """Which of "tool_call" and "response" a ToolRL gold answer holds (what its format check expects)."""
    return frozenset(n for n in ("tool_call", "response") if TOOLRL_TAGS[n][0] in gold_text)


def toolrl_format_score(text: str, *, expect: Collection[str] | None = None) -> float:
    """R_format ∈ {0, 1}: <think>, then <tool_call> and/or <response> (exactly `expect` when given)."""
    seq = tag_sequence(text, TOOLRL_TAGS)
    if not seq:
        return 0.0
    if expect is not None:
        return float(seq == ["think"] + [n for n in ("tool_call", "response") if n in expect])
    return float(seq != ["think"] and bool(_ORDER.match(" ".join(seq) + " ")))


@dataclass(frozen=True)
class ToolRLScore:
    """ToolRL's two terms for one answer; `reward` is their sum."""

    format: float
    correctness: float

    @property
    def reward(self) -> float:
        return self.format + self.correctness

    def to_dict(self) -> dict[str, float]:
        return {"format": self.format, "correctness": self.correctness, "reward": self.reward}


def toolrl_score(text: str, gold_text: str) -> ToolRLScore:
    """ToolRL's reward of an answer `text` against a gold answer written in the same format (its <tool_call>
    lines are the gold calls; its parts decide the format check), as rlla.py's `compute_score`."""
    gold = parse_tool_calls(gold_text)
    if gold is None:
        raise ConfigError(f"ToolRL gold answer {gold_text[:200]!r}: its <tool_call> block is not JSON call lines; "
                          "pass the reward_model.ground_truth of a ToolRL row")
    return ToolRLScore(toolrl_format_score(text, expect=gold_parts(gold_text)),
                       toolrl_correctness(parse_tool_calls(text), gold))


__all__ = ["TOOLRL_TAGS", "Call", "ToolRLScore", "as_calls", "gold_parts", "parse_tool_calls", "toolrl_correctness",
           "toolrl_format_score", "toolrl_score"]
