"""ToolRL's test rows (verl parquet: `prompt`, `reward_model.ground_truth`) as a single-turn env scored by ToolRL's reward.

    rows = load_toolrl_rows()                    # the 80 rows of tools/toolrl_rlla4k_test.parquet, as dicts
    env = make_env("toolrl", rows[0])
    env.instructions()                           # the row's system prompt (its tools and ToolRL's output format)
    env.verify('<think>..</think>\\n<tool_call>\\n{"name": "GetNews", "parameters": {"page": "1"}}\\n</tool_call>')
    # reward 4.0 = R_format 1 + R_correct 3; checks "format", "calls"

The row's tools are read from its system prompt ("N. Name: ..", "Description: ..", "Parameters: {json}") into
OpenAI schemas (names kept as written, spaces and all: the gold names them so; a type ending ", optional" or
a non-empty default makes a parameter optional). The agent answers in ToolRL's text format (the verdict is
`agentic_infer.verify.toolrl.toolrl_score` against the gold text: gold-aware format + correctness) or through
the tools: then the recorded calls are the prediction and R_format is 1 (the calls arrived well formed; there
is no text format to judge). Rows whose gold is a <response> only expect no call (correctness 3 without one).
Not covered: ToolRL's length reward and reward schedules; the multi-turn history inside a row is text only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.envs.base import Check, EnvVerdict
from agentic_infer.envs.bfcl.env import SingleTurnEnv
from agentic_infer.errors import ConfigError
from agentic_infer.verify.toolrl import (
    Call,
    ToolRLScore,
    gold_parts,
    parse_tool_calls,
    toolrl_correctness,
    toolrl_format_score,
)

DEFAULT_FILE = "tools/toolrl_rlla4k_test.parquet"
ROW_FORMAT = ("a verl row {prompt: [{role: system, content}, {role: user, content}], "
              "reward_model: {ground_truth: '<think>..</think>\\n<tool_call>\\n{json call}\\n</tool_call>'}}")
_TOOL = re.compile(r"^\d+\. Name: (.+)\nDescription: (.*)\nParameters: (.*)$", flags=re.MULTILINE)
_JSON_TYPES = (("list", "array"), ("array", "array"), ("dict", "object"), ("object", "object"), ("bool", "boolean"),
               ("int", "integer"), ("float", "number"), ("number", "number"), ("str", "string"))


def load_toolrl_rows(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The rows of a ToolRL parquet file (default: the shared data folder's test set) as plain dicts."""
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ConfigError("reading a ToolRL parquet file needs pyarrow: pip install pyarrow") from e
    if path is None:
        from agentic_infer.tools.retrieval.recipes import shared_data_dir

        path = shared_data_dir() / DEFAULT_FILE
    if not Path(path).is_file():
        raise ConfigError(f"ToolRL rows: no file at {path}; pass the parquet path (e.g. {DEFAULT_FILE})")
    return [dict(r) for r in pq.read_table(path).to_pylist()]


def _json_type(declared: str) -> str:
    t = declared.split(",")[0].strip().lower()
    return next((json_type for prefix, json_type in _JSON_TYPES if t.startswith(prefix)), "string")


def prompt_tools(system: str) -> list[dict[str, Any]]:
    """The tools a ToolRL system prompt lists, as OpenAI function schemas."""
    tools = []
    for name, description, params_text in _TOOL.findall(system):
        try:
            params = json.loads(params_text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"ToolRL tool {name!r}: its Parameters line is not JSON ({e}): {params_text[:200]}") from e
        props, required = {}, []
        for p, spec in (params if isinstance(params, Mapping) else {}).items():
            spec = spec if isinstance(spec, Mapping) else {}
            declared = str(spec.get("type", "string"))
            props[p] = {"type": _json_type(declared), "description": str(spec.get("description", ""))}
            if "optional" not in declared and spec.get("default", "") in ("", None):
                required.append(p)
        tools.append({"type": "function", "function": {"name": name.strip(), "description": description.strip(),
                                                       "parameters": {"type": "object", "properties": props,
                                                                      "required": required}}})
    return tools


def _mismatches(pred: Sequence[Call], gold: Sequence[Call]) -> list[str]:
    """What keeps `pred` from being exactly `gold`: missing calls, wrong or missing values, extra calls."""
    left = list(pred)
    out = []
    for name, params in gold:
        if (name, params) in left:
            left.remove((name, params))
            continue
        same = [c for c in left if c[0] == name]
        if not same:
            out.append(f"missing call {name}")
            continue
        best = max(same, key=lambda c: sum(c[1].get(k) == v for k, v in params.items()))
        left.remove(best)
        for k, v in params.items():
            if k not in best[1]:
                out.append(f"{name}: missing parameter {k!r}")
            elif best[1][k] != v:
                out.append(f"{name}: {k} = {best[1][k]!r}, expected {v!r}")
        out += [f"{name}: unexpected parameter {k!r}" for k in best[1] if k not in params]
    return out + [f"unexpected call {n}" for n, _ in left]


class ToolRLEnv(SingleTurnEnv):
    """One ToolRL row (see the module docstring)."""

    name = "toolrl"

    def __init__(self, row: Mapping[str, Any]) -> None:
        prompt, reward_model = row.get("prompt"), row.get("reward_model")
        if prompt is None or not isinstance(reward_model, Mapping) or not reward_model.get("ground_truth"):
            raise ConfigError(f"ToolRL row: got keys {sorted(row)}; expected {ROW_FORMAT}")
        messages = [dict(m) for m in prompt]
        self.gold_text = str(reward_model["ground_truth"])
        gold = parse_tool_calls(self.gold_text)
        if gold is None:
            raise ConfigError(f"ToolRL row: its gold's <tool_call> block is not JSON call lines: {self.gold_text[:200]}")
        self.gold: list[Call] = gold
        extra = row.get("extra_info") if isinstance(row.get("extra_info"), Mapping) else {}
        rid = str(row.get("id", f"{row.get('data_source', 'toolrl')}-{extra.get('index', '?')}"))
        system = "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        super().__init__(task_id=rid, messages=messages, tool_schemas=prompt_tools(system))

    def verify(self, response: str) -> EnvVerdict:
        if self.calls:
            source, pred = "calls", [(c.name, dict(c.arguments)) for c in self.calls]
            fmt = 1.0
        else:
            source, pred = "text", parse_tool_calls(response or "")
            fmt = toolrl_format_score(response or "", expect=gold_parts(self.gold_text))
        score = ToolRLScore(fmt, toolrl_correctness(pred, self.gold))
        parts = ["<think>", *(f"<{p}>" for p in ("tool_call", "response") if p in gold_parts(self.gold_text))]
        fmt_check = Check("format", fmt == 1.0, f"{source}: well formed" if fmt == 1.0 else
                          f"{source}: expected the spans {' + '.join(parts)} in order, nothing nested", "format")
        wrong = ["a <tool_call> block is not JSON call lines"] if pred is None else _mismatches(pred, self.gold)
        exact = not wrong
        why = "the calls equal the gold" if exact else "; ".join(wrong)
        return EnvVerdict(score.reward, [fmt_check, Check("calls", exact, why, "action")], {
            "id": self.task_id, "source": source, "toolrl": score.to_dict(),
            "calls": [{"name": n, "arguments": a} for n, a in pred or []]})


__all__ = ["DEFAULT_FILE", "ROW_FORMAT", "ToolRLEnv", "load_toolrl_rows", "prompt_tools"]
