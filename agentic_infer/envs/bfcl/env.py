"""BFCL single-turn function calling as an env: the row's functions as tools, every call recorded (none executed),
and BFCL's AST check of the calls against possible_answer as the verdict.

    env = make_env("bfcl", row)      # row: a line of BFCL_v4_simple_python.json, + "ground_truth" (or data_file=)
    env.tools()                      # OpenAI function schemas ("dict" -> "object", "." in names -> "_")
    env.call("math_factorial", {"number": 5})      # "Recorded math_factorial (not executed). ..."
    v = env.verify("")               # reward 1/0: the AST pass; checks "format", "ast"; info["toolrl"]

Where the gold comes from (first that applies): the row's "ground_truth" (possible_answer's format,
`[{fn: {param: [allowed values]}}]`, as `tasks.bfcl.load` rows also carry it); none for `irrelevance` ids
(no call is right); `data_file=` (the BFCL question file: `possible_answer/<its name>` next to it, by id);
else the shared data folder's `tools/bfcl/possible_answer/BFCL_v4_<id prefix>.json`.

The agent answers through the tools (the calls are judged) or, without any call, in its final text: a
Python call list `[fn(a=1), ...]` (BFCL's prompting format) or ToolRL's `<tool_call>` JSON lines. The episode
ends with the first message without a call (the default `reply`). The same parsed calls feed ToolRL's
reward against the gold's first allowed values (`verdict.info["toolrl"]`: format = the calls were read,
correctness, reward). A call whose arguments break the schema is still recorded; the AST check judges it.
Not covered: BFCL's multi-turn, live, Java / JavaScript and executable categories (`bfcl_category` refuses them).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.envs.base import CallResult, Check, Env, EnvVerdict
from agentic_infer.envs.bfcl.checker import Call, ast_check, bfcl_category, gold_calls, parse_calls
from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl
from agentic_infer.verify.toolrl import ToolRLScore, parse_tool_calls, toolrl_correctness

ROW_FORMAT = ("a BFCL v4 row {id, question: [[{role, content}]], function: [schemas]} plus its gold: "
              "'ground_truth': [{fn: {param: [allowed values]}}] or data_file=<the BFCL file>")
INSTRUCTIONS = ("Answer the question by calling the given functions: make every call it needs, with the "
                "parameter values it states, through the tools (or write them as a Python list, "
                "[func_name(param=value), ...]). If none of the functions can be used, or the question lacks a "
                "parameter a function requires, say so and call nothing.")
_OPENAI_TYPES = {"integer": "integer", "number": "number", "float": "number", "string": "string",
                 "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "tuple": "array",
                 "dict": "object", "object": "object", "any": "string"}


class SingleTurnEnv(Env):
    """An env whose tools are only recorded: `execute` acknowledges, `state()` is the call log, and the verdict
    judges the calls (subclasses: `verify`). Shared by the BFCL and ToolRL envs."""

    def __init__(self, *, task_id: str, messages: Sequence[Mapping[str, Any]], tool_schemas: list[dict[str, Any]],
                 instructions: str = "") -> None:
        super().__init__()
        self.task_id = task_id
        self._tools = tool_schemas
        self._user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        system = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
        self._instructions = "\n\n".join([instructions, *system]).strip()

    def tools(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._tools)

    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self._tools]

    def instructions(self) -> str:
        return self._instructions

    def first_observation(self) -> str:
        return self._user

    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        return CallResult(f"Recorded {tool} (not executed). Make any other call the question needs, "
                          "then reply without a call to finish.")

    def state(self) -> dict[str, Any]:
        return {"calls": [{"name": c.name, "arguments": c.arguments} for c in self.calls]}

    def _mutable(self) -> Any:
        return {}  # the state is the call log, which snapshot() keeps itself

    def _set_mutable(self, value: Any) -> None:
        return None


def openai_tools(functions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """BFCL function descriptions as OpenAI tools, converted as BFCL's OpenAI handler does: "." in names becomes
    "_", types map to JSON schema ("dict" -> "object", "float" -> "number" with format float, "tuple" -> "array",
    "any" and unknown types -> "string")."""
    out = []
    for f in functions:
        params = dict(copy.deepcopy(f.get("parameters") or {}))
        params["type"] = "object"
        params["properties"] = {k: _schema(v) for k, v in (params.get("properties") or {}).items()}
        out.append({"type": "function", "function": {"name": re.sub(r"\.", "_", str(f["name"])),
                                                     "description": str(f.get("description", "")),
                                                     "parameters": params}})
    return out


def _schema(prop: Any) -> Any:
    if not isinstance(prop, Mapping):
        return prop
    out = dict(prop)
    declared = out.get("type")
    out["type"] = _OPENAI_TYPES.get(str(declared), "string")
    if declared == "float":
        out["format"] = "float"
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: _schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), Mapping):
        out["items"] = _schema(out["items"])
    return out


@functools.lru_cache(maxsize=16)
def _answers(path: str) -> dict[str, Any]:
    """{id: ground_truth} of one possible_answer file (JSON Lines), read once."""
    out = {}
    for n, rec in iter_jsonl(path, "BFCL possible_answer JSON Lines {id, ground_truth}"):
        if "id" not in rec or "ground_truth" not in rec:
            raise ConfigError(f"{path}:{n}: expected {{id, ground_truth}}, got keys {sorted(rec)}")
        out[str(rec["id"])] = rec["ground_truth"]
    return out


def _ground_truth(row: Mapping[str, Any], rid: str, category: str, data_file: str | Path | None) -> list[Any]:
    if row.get("ground_truth") is not None:
        gt = row["ground_truth"]
        return json.loads(gt) if isinstance(gt, str) else list(gt)
    if category == "irrelevance":
        return []
    if data_file is not None:
        answers = Path(data_file).parent / "possible_answer" / Path(data_file).name
    else:
        from agentic_infer.tools.retrieval.recipes import shared_data_dir

        answers = shared_data_dir() / "tools" / "bfcl" / "possible_answer" / f"BFCL_v4_{rid.rsplit('_', 1)[0]}.json"
    if not answers.is_file():
        raise ConfigError(f"BFCL row {rid!r}: no gold answers at {answers}; give the row a 'ground_truth' or "
                          "data_file=<the BFCL question file with possible_answer/ next to it>")
    gold = _answers(str(answers))
    if rid not in gold:
        raise ConfigError(f"BFCL row {rid!r}: no entry in {answers}; pass its own file as data_file=")
    return list(gold[rid])


class BFCLEnv(SingleTurnEnv):
    """One BFCL row as a single-turn env (see the module docstring)."""

    name = "bfcl"

    def __init__(self, row: Mapping[str, Any], *, data_file: str | Path | None = None) -> None:
        if not isinstance(row.get("id"), str) or not isinstance(row.get("function", row.get("functions")), list):
            raise ConfigError(f"BFCL row: got keys {sorted(row)}; expected {ROW_FORMAT}")
        rid = row["id"]
        self.category = bfcl_category(rid)
        self.functions: list[dict[str, Any]] = list(row.get("function", row.get("functions")))
        self.ground_truth = _ground_truth(row, rid, self.category, data_file)
        question = row.get("question")
        if isinstance(question, str):
            messages: list[Any] = [{"role": "user", "content": question}]
        elif isinstance(question, list) and question:
            messages = question[0] if isinstance(question[0], list) else question
        else:
            raise ConfigError(f"BFCL row {rid!r}: 'question' is {question!r}; expected [[{{role, content}}]]")
        super().__init__(task_id=rid, messages=messages, tool_schemas=openai_tools(self.functions),
                         instructions=INSTRUCTIONS)
        self._names = {t["function"]["name"]: f["name"] for t, f in zip(self._tools, self.functions)}
        self._names.update({f["name"]: f["name"] for f in self.functions})

    def _original(self, name: str) -> str:
        return self._names.get(name, name)

    def answer_calls(self, response: str) -> tuple[list[Call] | None, str]:
        """The agent's calls and where they came from: the recorded tool calls ("calls"), else the final text
        parsed as a Python call list or `<tool_call>` JSON lines ("text"; None when it holds neither)."""
        if self.calls:
            return [(self._original(c.name), dict(c.arguments)) for c in self.calls], "calls"
        calls = parse_calls(response)
        if calls is None and "<tool_call>" in (response or ""):
            calls = parse_tool_calls(response)
        return (None if calls is None else [(self._original(n), a) for n, a in calls]), "text"

    def verify(self, response: str) -> EnvVerdict:
        calls, source = self.answer_calls(response)
        if calls is not None:
            fmt = Check("format", True, f"{len(calls)} call(s) read from the {source}", "format")
        elif self.category == "irrelevance":
            fmt = Check("format", True, "plain text, no call", "format")
        else:
            fmt = Check("format", False, "the final text is neither a Python call list nor <tool_call> JSON lines",
                        "format")
        result = ast_check(calls, self.ground_truth, functions=self.functions, category=self.category)
        ast = Check("ast", result.passed, result.detail or f"{self.category}: every call matches the gold", "action")
        gold = gold_calls(self.ground_truth, functions=self.functions)
        toolrl = ToolRLScore(float(fmt.passed), toolrl_correctness(calls or [], gold))
        return EnvVerdict(float(result.passed), [fmt, ast], {
            "id": self.task_id, "category": self.category, "source": source, "error_type": result.error_type,
            "calls": [{"name": n, "arguments": a} for n, a in calls or []], "toolrl": toolrl.to_dict()})


__all__ = ["INSTRUCTIONS", "ROW_FORMAT", "BFCLEnv", "SingleTurnEnv", "openai_tools"]
