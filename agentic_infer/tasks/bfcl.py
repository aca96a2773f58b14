"""BFCL (Berkeley Function-Calling Leaderboard v4): simple / multiple / parallel, AST match.

Format: the question file is JSON Lines (named .json) `{id, question: [[{role, content}]], function:
[json-schema]}`; gold calls come from `possible_answer/<same file name>` next to it:
`{id, ground_truth: [{fn_name: {arg: [allowed values]}}]}`. The model writes Python call syntax,
`[fn(a=1, b="x"), fn2(...)]` (BFCL's prompting format).

AST match (after BFCL's checker): the output parses as a list of calls; `simple`/`multiple` need
exactly one call, `parallel` one call per gold entry in any order; each call names the gold function,
passes every required gold argument (a gold list holding "" marks it optional), no unknown argument,
and each value is one of the allowed values (strings compared case-insensitively without spaces and
`,./-_*^`; ints accepted for floats; lists and dicts compared element-wise).
Not covered: multi-turn, irrelevance, live and executable categories.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentic_infer.tasks.base import Task, fail, need, read_rows
from agentic_infer.verify.registry import Scored, metric

FORMAT = ("BFCL v4 JSON Lines {id, question: [[messages]], function: [schemas]} with "
          "possible_answer/<same name> holding {id, ground_truth: [{fn: {arg: [values]}}]}")

PROMPT = (
    "You are an expert in composing function calls. Given the question and the functions below, make the "
    "function call(s) that answer it. Reply ONLY with a Python list of calls, e.g. "
    "[func_name1(param1=value1, param2=value2), func_name2(param=value)], and nothing else.\n\n"
    "Functions (JSON schema):\n{functions}\n\nQuestion: {question}"
)


def load(path: Path) -> list[dict[str, Any]]:
    answers_file = path.parent / "possible_answer" / path.name
    if not answers_file.is_file():
        raise fail(path, None, f"no gold answers at {answers_file}", FORMAT)
    gold = {str(need(r, "id", answers_file, w, FORMAT)): need(r, "ground_truth", answers_file, w, FORMAT)
            for w, r in read_rows(answers_file, FORMAT)}
    out = []
    for where, rec in read_rows(path, FORMAT):
        rid = str(need(rec, "id", path, where, FORMAT))
        turns = need(rec, "question", path, where, FORMAT)
        functions = need(rec, "function", path, where, FORMAT)
        if rid not in gold:
            raise fail(path, where, f"id {rid!r} has no entry in {answers_file.name}", FORMAT)
        msgs = turns[0] if turns and isinstance(turns[0], list) else turns
        question = "\n".join(str(m.get("content", "")) for m in msgs if isinstance(m, Mapping) and m.get("role") == "user")
        category = "parallel" if "parallel" in rid else ("multiple" if "multiple" in rid else "simple")
        prompt = PROMPT.format(functions=json.dumps(functions, indent=1), question=question)
        out.append({"id": rid, "question": prompt, "user_question": question, "gold": [json.dumps(gold[rid])],
                    "ground_truth": gold[rid], "functions": functions, "category": category, "raw": rec})
    return out


# ------------------------------------------------------------------------------ parsing calls

def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    raise ValueError("not a function name")


def parse_calls(text: str | None) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls in `text` (a Python list of calls, or one call; code fences allowed), or None."""
    if not text:
        return None
    s = text.strip()
    fence = re.search(r"```(?:python|json)?\s*(.*?)```", s, flags=re.DOTALL)
    if fence:
        s = fence.group(1).strip()
    start = s.find("[")
    candidates = [s] + ([s[start:s.rfind("]") + 1]] if start >= 0 else [])
    for cand in candidates:
        try:
            node = ast.parse(cand, mode="eval").body
        except SyntaxError:
            continue
        items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
        calls = []
        try:
            for it in items:
                if not isinstance(it, ast.Call) or it.args:
                    raise ValueError("not a keyword call")
                calls.append((_name(it.func), {k.arg: ast.literal_eval(k.value) for k in it.keywords}))
        except ValueError:
            continue
        return calls
    return None


def _norm_str(s: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", s).lower()


def value_matches(value: Any, allowed: list[Any]) -> bool:
    for a in allowed:
        if a == "" and value == "":
            return True
        if isinstance(a, str) and isinstance(value, str) and _norm_str(a) == _norm_str(value):
            return True
        if isinstance(a, bool) or isinstance(value, bool):
            if a is value:
                return True
            continue
        if isinstance(a, (int, float)) and isinstance(value, (int, float)) and float(a) == float(value):
            return True
        if isinstance(a, list) and isinstance(value, (list, tuple)) and len(a) == len(value) and all(
                value_matches(v, [x]) for v, x in zip(value, a)):
            return True
        if isinstance(a, dict) and isinstance(value, dict) and set(value) <= set(a) and all(
                value_matches(value[k], a[k] if isinstance(a[k], list) else [a[k]]) for k in value) and all(
                k in value for k, v in a.items() if not (isinstance(v, list) and "" in v)):
            return True
    return False


def call_matches(call: tuple[str, dict[str, Any]], gold: Mapping[str, Mapping[str, list[Any]]]) -> bool:
    (fn, params), = gold.items()
    name, args = call
    if name != fn:
        return False
    if set(args) - set(params):
        return False
    for arg, allowed in params.items():
        if arg not in args:
            if "" not in allowed:
                return False
        elif not value_matches(args[arg], list(allowed)):
            return False
    return True


def ast_match(calls: list[tuple[str, dict[str, Any]]] | None, ground_truth: list[Mapping[str, Any]]) -> bool:
    """BFCL AST check of parsed `calls` against `ground_truth` (order-free for several calls)."""
    if calls is None or len(calls) != len(ground_truth):
        return False
    left = list(ground_truth)
    for call in calls:
        hit = next((i for i, g in enumerate(left) if call_matches(call, g)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


@metric("bfcl_ast", "BFCL AST match of the output calls against possible_answer")
def _bfcl(s: Scored) -> float:
    return float(ast_match(parse_calls(s.text or s.prediction), s.example["ground_truth"]))


@metric("bfcl_parse", "share of outputs that parse as a list of function calls")
def _bfcl_parse(s: Scored) -> float:
    return float(parse_calls(s.text or s.prediction) is not None)


PROMPTS = {"direct": "{question}", "cot": "{question}"}
ALIASES = {"bfcl-simple": ("bfcl", "bfcl-simple-python")}


def _task(name: str, file: str, desc: str) -> Task:
    return Task(name=name, family="tools", description=desc, data_format=FORMAT, loader=load,
                metrics=("bfcl_ast", "bfcl_parse"), primary="bfcl_ast", default_files=(f"tools/bfcl/{file}",),
                prompts=PROMPTS, extract=lambda t: (t or "").strip() or None, engines=("direct", "cot"))


TASKS = [
    _task("bfcl-simple", "BFCL_v4_simple_python.json", "BFCL v4 simple (one function, one call)"),
    _task("bfcl-multiple", "BFCL_v4_multiple.json", "BFCL v4 multiple (choose among functions)"),
    _task("bfcl-parallel", "BFCL_v4_parallel.json", "BFCL v4 parallel (several calls)"),
]
