"""Parse a TravelPlanner plan out of a model's response: a list of day records.

    parsed = parse_plan('<answer>[{"days": 1, "current_city": "from A to B", ...}]</answer>')
    parsed.plan      # [{'days': 1, 'current_city': 'from A to B', 'transportation': ..., ...}] or None
    parsed.source    # "json" | "literal" | "text" ; parsed.error says why when plan is None

Accepted: JSON, or the Python-literal list of day records TravelPlanner's gold plans use (single quotes), either
bare, inside `<answer>...</answer>`, inside a ``` fence, or after a marker ("Travel Plan:", "Final plan:"); a
{"plan": [...]} object; and TravelPlanner's own text format ("Day 1:" then "Current City: ..." lines). Keys are
normalised ("Current City" -> "current_city"), values become text (`days` an int). `schema_problems` lists what
keeps a parsed plan from TravelPlanner's schema (the eight keys of every non-empty record, days 1, 2, ...).
Not covered: free prose plans (TravelPlanner converts those with an LLM first).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

PLAN_KEYS = ("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
_MARKER = re.compile(r"(?:travel plan|final plan|final answer|plan)\s*:", re.IGNORECASE)


@dataclass
class ParsedPlan:
    plan: list[dict[str, Any]] | None
    source: str | None = None
    error: str = ""


def _normalise(records: Any) -> list[dict[str, Any]] | None:
    if isinstance(records, dict) and isinstance(records.get("plan"), list):
        records = records["plan"]
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        return None
    out = []
    for r in records:
        day: dict[str, Any] = {}
        for k, v in r.items():
            key = re.sub(r"[\s-]+", "_", str(k).strip().lower())
            if key == "day":
                key = "days"
            if key == "days":
                try:
                    day[key] = int(str(v).strip().split()[-1]) if str(v).strip() else v
                except ValueError:
                    day[key] = v
            else:
                day[key] = "-" if v is None else str(v)
        out.append(day)
    return out


def _decode_at(text: str, start: int) -> Any:
    try:
        return json.JSONDecoder().raw_decode(text, start)[0]
    except json.JSONDecodeError:
        pass
    close = "]" if text[start] == "[" else "}"
    end = text.rfind(close)
    while end > start:
        try:
            return ast.literal_eval(text[start:end + 1])
        except (SyntaxError, ValueError, MemoryError, RecursionError, TypeError):
            end = text.rfind(close, start, end)
    raise ValueError("no literal")


def _structured(text: str) -> tuple[list[dict[str, Any]] | None, str | None]:
    for m in re.finditer(r"[\[{]", text):
        try:
            value = _decode_at(text, m.start())
        except ValueError:
            continue
        plan = _normalise(value)
        if plan:
            return plan, ("json" if _is_json(text, m.start()) else "literal")
    return None, None


def _is_json(text: str, start: int) -> bool:
    try:
        json.JSONDecoder().raw_decode(text, start)
        return True
    except json.JSONDecodeError:
        return False


def _day_text(text: str) -> list[dict[str, Any]] | None:
    """TravelPlanner's text format: "Day 1:" then "Current City: ...", "Transportation: ...", ... lines."""
    days: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip().strip("*").strip()
        head = re.match(r"^Day\s+(\d+)\s*:?\s*$", line, re.IGNORECASE)
        if head:
            days.append({"days": int(head.group(1))})
            continue
        kv = re.match(r"^([A-Za-z ]+?)\s*:\s*(.*)$", line)
        if days and kv:
            key = re.sub(r"\s+", "_", kv.group(1).strip().lower())
            if key in PLAN_KEYS[1:]:
                days[-1][key] = kv.group(2).strip()
    return days or None


def parse_plan(response: str) -> ParsedPlan:
    """The plan in `response` (see the module docstring)."""
    text = str(response or "")
    candidates = [m.group(1) for m in re.finditer(r"<answer>(.*?)</answer>", text, re.DOTALL | re.IGNORECASE)]
    candidates += [m.group(1) for m in re.finditer(r"```(?:json|python)?\s*\n?(.*?)```", text, re.DOTALL)]
    markers = list(_MARKER.finditer(text))
    if markers:
        candidates.append(text[markers[-1].end():])
    candidates.append(text)
    for candidate in candidates:
        plan, source = _structured(candidate)
        if plan:
            return ParsedPlan(plan, source)
    for candidate in candidates:
        plan = _day_text(candidate)
        if plan:
            return ParsedPlan(plan, "text")
    return ParsedPlan(None, None, "no plan found: expected a JSON list of day records "
                      f"(keys {', '.join(PLAN_KEYS)}), e.g. inside <answer>...</answer>; got {text[:80]!r}")


def schema_problems(plan: list[dict[str, Any]] | None) -> list[str]:
    """What keeps `plan` from TravelPlanner's schema ([] when it conforms)."""
    if plan is None:
        return ["no plan could be parsed"]
    records = [r for r in plan if r]
    if not records:
        return ["the plan has no day records"]
    problems = []
    for i, r in enumerate(records, start=1):
        missing = [k for k in PLAN_KEYS if k not in r]
        extra = [k for k in r if k not in PLAN_KEYS]
        if missing:
            problems.append(f"day record {i} lacks {missing}")
        if extra:
            problems.append(f"day record {i} has unknown keys {extra}")
        if r.get("days") != i:
            problems.append(f"day record {i} has days={r.get('days')!r}, expected {i}")
    return problems
