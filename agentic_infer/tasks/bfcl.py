"""BFCL (Berkeley Function-Calling Leaderboard v4): simple / multiple / parallel / irrelevance, AST match.

Format: the question file is JSON Lines (named .json) `{id, question: [[{role, content}]], function:
[json-schema]}`; gold calls come from `possible_answer/<same file name>` next to it:
`{id, ground_truth: [{fn_name: {arg: [allowed values]}}]}` (irrelevance files have none: no call is
right). The model writes Python call syntax, `[fn(a=1, b="x"), fn2(...)]` (BFCL's prompting format).

The parsing and BFCL's AST check (per category, with the row's function schemas) are
`agentic_infer.envs.bfcl.checker`'s, shared with the `bfcl` env (the same rows through tool calls).
Not covered: multi-turn, live and executable categories.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentic_infer.envs.bfcl.checker import ast_check, ast_match, bfcl_category, parse_calls
from agentic_infer.tasks.base import Task, fail, need, read_rows
from agentic_infer.verify.registry import Scored, metric

FORMAT = ("BFCL v4 JSON Lines {id, question: [[messages]], function: [schemas]} with "
          "possible_answer/<same name> holding {id, ground_truth: [{fn: {arg: [values]}}]}")

PROMPT = (
    "You are an expert in composing function calls. Given the question and the functions below, make the "
    "function call(s) that answer it. Reply ONLY with a Python list of calls, e.g. "
    "[func_name1(param1=value1, param2=value2), func_name2(param=value)], and nothing else. If none of the "
    "functions can be used, say so in plain words instead.\n\n"
    "Functions (JSON schema):\n{functions}\n\nQuestion: {question}"
)


def load(path: Path) -> list[dict[str, Any]]:
    answers_file = path.parent / "possible_answer" / path.name
    irrelevance = "irrelevance" in path.name
    if not irrelevance and not answers_file.is_file():
        raise fail(path, None, f"no gold answers at {answers_file}", FORMAT)
    gold = {} if irrelevance else {
        str(need(r, "id", answers_file, w, FORMAT)): need(r, "ground_truth", answers_file, w, FORMAT)
        for w, r in read_rows(answers_file, FORMAT)}
    out = []
    for where, rec in read_rows(path, FORMAT):
        rid = str(need(rec, "id", path, where, FORMAT))
        turns = need(rec, "question", path, where, FORMAT)
        functions = need(rec, "function", path, where, FORMAT)
        category = bfcl_category(rid)
        if category == "irrelevance":
            gold.setdefault(rid, [])
        if rid not in gold:
            raise fail(path, where, f"id {rid!r} has no entry in {answers_file.name}", FORMAT)
        msgs = turns[0] if turns and isinstance(turns[0], list) else turns
        question = "\n".join(str(m.get("content", "")) for m in msgs if isinstance(m, Mapping) and m.get("role") == "user")
        prompt = PROMPT.format(functions=json.dumps(functions, indent=1), question=question)
        out.append({"id": rid, "question": prompt, "user_question": question, "gold": [json.dumps(gold[rid])],
                    "ground_truth": gold[rid], "functions": functions, "category": category, "raw": rec})
    return out


@metric("bfcl_ast", "BFCL AST match of the output calls against possible_answer")
def _bfcl(s: Scored) -> float:
    ex = s.example
    return float(ast_check(parse_calls(s.text or s.prediction), ex["ground_truth"], functions=ex.get("functions"),
                           category=ex.get("category")).passed)


@metric("bfcl_parse", "share of outputs that parse as a list of function calls")
def _bfcl_parse(s: Scored) -> float:
    return float(parse_calls(s.text or s.prediction) is not None)


PROMPTS = {"direct": "{question}", "cot": "{question}"}
ALIASES = {"bfcl-simple": ("bfcl-simple-python",)}


def _task(name: str, file: str, desc: str) -> Task:
    return Task(name=name, family="tools", description=desc, data_format=FORMAT, loader=load,
                metrics=("bfcl_ast", "bfcl_parse"), primary="bfcl_ast", default_files=(f"tools/bfcl/{file}",),
                prompts=PROMPTS, extract=lambda t: (t or "").strip() or None, engines=("direct", "cot"))


TASKS = [
    _task("bfcl-simple", "BFCL_v4_simple_python.json", "BFCL v4 simple (one function, one call)"),
    _task("bfcl-multiple", "BFCL_v4_multiple.json", "BFCL v4 multiple (choose among functions)"),
    _task("bfcl-parallel", "BFCL_v4_parallel.json", "BFCL v4 parallel (several calls)"),
    _task("bfcl-irrelevance", "BFCL_v4_irrelevance.json", "BFCL v4 irrelevance (no function fits: call nothing)"),
]

__all__ = ["FORMAT", "PROMPT", "TASKS", "ast_match", "load", "parse_calls"]
