"""BFCL v4 single-turn function calling (AST check) and ToolRL's test rows as envs, and their registrations.

    env = make_env("bfcl", row)           # any BFCL v4 simple / multiple / parallel / irrelevance row (+ gold)
    env = make_env("toolrl", row)         # a row of toolrl_rlla4k_test.parquet (load_toolrl_rows())

Registered: "bfcl" (its eval default is the simple subset; the row's own id decides its category, so it runs
any of the four files: `agentic eval run --task bfcl --data .../BFCL_v4_parallel.json`) and "toolrl". No
per-subset env names: bfcl-simple/-multiple/-parallel/-irrelevance are the text tasks of
`agentic_infer.tasks.bfcl`, and a benchmark task keeps its name over an env's (`agentic_infer.tasks.envs`).
Files: checker.py (parsing Python call lists, BFCL's AST check, gold calls), env.py (SingleTurnEnv, BFCLEnv,
the OpenAI tool conversion), toolrl.py (ToolRLEnv, the parquet loader). Not covered: BFCL multi-turn.
"""

from agentic_infer.envs.bfcl.checker import (
    AstResult,
    ast_check,
    ast_match,
    bfcl_category,
    gold_calls,
    parse_calls,
)
from agentic_infer.envs.bfcl.env import ROW_FORMAT, BFCLEnv, SingleTurnEnv, openai_tools
from agentic_infer.envs.bfcl.toolrl import DEFAULT_FILE as TOOLRL_FILE
from agentic_infer.envs.bfcl.toolrl import ROW_FORMAT as TOOLRL_ROW_FORMAT
from agentic_infer.envs.bfcl.toolrl import ToolRLEnv, load_toolrl_rows, prompt_tools
from agentic_infer.envs.registry import EnvSpec, register_env

register_env(EnvSpec(
    name="bfcl",
    description="BFCL v4 single-turn function calling (any simple / multiple / parallel / irrelevance row): "
                "calls are recorded, not executed, and judged by BFCL's AST check",
    make=BFCLEnv,
    tools=("<the row's functions>",),
    task_format=ROW_FORMAT,
    reward="1.0 iff BFCL's AST check passes (irrelevance: iff no call); info['toolrl']: ToolRL's reward "
           "against the gold's first allowed values",
    default_files=("tools/bfcl/BFCL_v4_simple_python.json",),
))

register_env(EnvSpec(
    name="toolrl",
    description="ToolRL's RL test rows: answer in <think>/<tool_call>/<response> text (or through the tools), "
                "scored by ToolRL's reward",
    make=ToolRLEnv,
    tools=("<the tools its system prompt lists>",),
    task_format=TOOLRL_ROW_FORMAT,
    reward="ToolRL's R = R_format (0/1, gold-aware; 1 for calls through the tools) + R_correct in [-3, 3]",
    default_files=(TOOLRL_FILE,),
))

__all__ = ["AstResult", "BFCLEnv", "SingleTurnEnv", "ToolRLEnv", "ast_check", "ast_match",
           "bfcl_category", "gold_calls", "load_toolrl_rows", "openai_tools", "parse_calls", "prompt_tools"]
