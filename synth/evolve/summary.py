"""SE-Agent's structured summary of one attempt, from a rule-based analyser.

    s = summarize(traj, verdict=0.0)   # AttemptSummary(tools, queries, documents, answer, verdict, failure, ...)

`failure` is the first that applies: `correct` (verdict 1), `unfinished` (the episode ended without an answer:
length, budget, turns), `no_answer` (finished, but no answer could be read), `tool_error` (a tool call failed),
`repeated_action` (the same action with the same arguments twice), `no_tool_call` (it answered without calling a
tool; only when `tools_expected`), `wrong_answer`. The summary is what the operators (`operators.py`) read;
`analysis` is filled only by the optional LLM summariser (`analyst.py`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from agentic_infer.types import Trajectory

FAILURES = ("correct", "unfinished", "no_answer", "tool_error", "repeated_action", "no_tool_call", "wrong_answer")


@dataclass
class AttemptSummary:
    id: str
    answer: str | None
    verdict: float
    failure: str
    tools: dict[str, int] = field(default_factory=dict)  # tool -> calls
    queries: list[str] = field(default_factory=list)  # the arguments of every call, as written
    documents: list[str] = field(default_factory=list)  # the documents the calls returned (search tools)
    steps: int = 0
    operator: str = "sample"  # how the attempt was made: sample | revision | recombination | refinement
    parents: list[str] = field(default_factory=list)
    analysis: str | None = None  # an LLM's account of why it failed (`analyst.py`), when one was asked

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _argument(args: dict[str, Any]) -> str:
    return str(args["query"]) if set(args) == {"query"} else json.dumps(args, sort_keys=True)


def summarize(traj: Trajectory, *, verdict: float, tools_expected: bool = False) -> AttemptSummary:
    """The structured summary of `traj` judged `verdict` (1.0 correct), with its failure mode (module docstring)."""
    queries = [_argument(s.arguments) for s in traj.steps]
    calls = [(s.action, q) for s, q in zip(traj.steps, queries)]
    lineage = traj.metadata.get("lineage") or {}
    if verdict >= 1.0:
        failure = "correct"
    elif traj.finish_reason not in ("answer", None):
        failure = "unfinished"
    elif not (traj.answer or "").strip():
        failure = "no_answer"
    elif any(s.error for s in traj.steps):
        failure = "tool_error"
    elif len(calls) != len(set(calls)):
        failure = "repeated_action"
    elif tools_expected and not traj.steps:
        failure = "no_tool_call"
    else:
        failure = "wrong_answer"
    return AttemptSummary(
        id=traj.id, answer=traj.answer, verdict=verdict, failure=failure,
        tools=dict(Counter(s.action for s in traj.steps)), queries=queries,
        documents=[str(d) for s in traj.steps for d in s.metadata.get("doc_ids", [])], steps=len(traj.steps),
        operator=lineage.get("operator", "sample"), parents=list(lineage.get("parents", [])))
