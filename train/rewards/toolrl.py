"""ToolRL's reward: R = R_format ∈ {0, 1} + R_correct ∈ [−3, 3] over the predicted vs gold tool calls.

    toolrl_reward(RewardInput('<think>..</think><tool_call>\\n{"name": "f", "parameters": {"x": 1}}\\n</tool_call>',
                              gold=[{"name": "f", "parameters": {"x": 1}}]))          # 1 + 3 = 4.0

R_correct (ToolRL): with G the gold calls and P the predicted ones, best-matched one to one,
r_name = |N_G ∩ N_P| / |N_G ∪ N_P| (tool-name Jaccard), r_param = Σ_{g∈G} |keys(g) ∩ keys(p)| /
|keys(g) ∪ keys(p)|, r_value = Σ_{g∈G} Σ_{k∈keys(g)} 1[g[k] = p[k]]; S_max = 1 + |G| + Σ_g |keys(g)| and
R_correct = 6·(r_name + r_param + r_value)/S_max − 3. No gold call and no predicted call scores 3;
unparseable calls score −3. The matching maximises r_param + r_value (exhaustive for up to 7 calls,
greedy beyond). Calls are JSON objects `{"name", "parameters"|"arguments"}` one per line (or a JSON list)
inside `<tool_call>…</tool_call>`. Not covered: fuzzy value matching (values compare by JSON equality).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentic_infer.errors import ConfigError
from train.rewards.base import RewardInput, require_gold
from train.rewards.format import toolrl_format

Call = tuple[str, dict[str, Any]]
_BLOCK = ("<tool_call>", "</tool_call>")


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
    pos = 0
    try:
        while (start := text.find(_BLOCK[0], pos)) != -1:
            end = text.find(_BLOCK[1], start)
            if end == -1:
                return None
            body = text[start + len(_BLOCK[0]):end].strip()
            pos = end + len(_BLOCK[1])
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


def toolrl_correctness(pred: Sequence[Call] | None, gold: Sequence[Call]) -> float:
    """R_correct ∈ [−3, 3] (see the module docstring); `pred=None` (unparseable) scores −3."""
    if pred is None:
        return -3.0
    if not gold and not pred:
        return 3.0
    ng, np_ = {n for n, _ in gold}, {n for n, _ in pred}
    r_name = len(ng & np_) / len(ng | np_)
    s_max = 1 + len(gold) + sum(len(p) for _, p in gold)
    return 6 * (r_name + _best_match(gold, pred)) / s_max - 3


def toolrl_reward(inp: RewardInput) -> float:
    """R_format + R_correct (gold: the expected calls in `inp.gold`)."""
    gold = as_calls(require_gold(inp, "toolrl_reward"))
    return toolrl_format(inp) + toolrl_correctness(parse_tool_calls(inp.completion), gold)


__all__ = ["as_calls", "parse_tool_calls", "toolrl_correctness", "toolrl_reward"]
