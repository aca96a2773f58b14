"""Robust parsers for LLM-judge outputs (used by `agentic_infer.engines.judge`).

- `parse_equivalence(text) -> (bool, reason) | None`: a JSON verdict such as
  `{"reason": "...", "equivalent": true}`, tolerating code fences, prose around it, single quotes,
  Python literals, trailing commas, string booleans, or a bare yes/no answer.
- `parse_simpleqa_grade(text) -> "CORRECT" | "INCORRECT" | "NOT_ATTEMPTED" | None`: anchored, unlike
  the reference parser that takes the first A/B/C anywhere: the final line (or the last
  `Grade: X`) decides; a label mentioned in passing or negated ("not CORRECT") never counts, so a
  grader that writes NOT_ATTEMPTED is never scored CORRECT.
- `parse_rubric_score(text) -> float | None`: the last `Score: N` (or `N/10`, or `{"score": N}`)
  with 1 <= N <= 10.
- `yes_probability(completion) -> float | None`: P(yes) / (P(yes) + P(no)) from the first generated
  token's top logprobs (the yes/no judge, RAP's self-evaluation).
- `strip_thinking`, `truncate_middle`: helpers.

All return None when the text does not hold a verdict; none of them raises on model output.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)


def strip_thinking(text: str) -> str:
    """Drop `<think>...</think>` blocks (and an unclosed trailing one's opening tag onwards is kept)."""
    return _THINK.sub(" ", text or "")


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and the tail of an over-long text, marking the cut: the answer is often at the end."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    half = max_chars // 2
    return f"{text[:half]}\n...[{len(text) - 2 * half} characters cut]...\n{text[len(text) - half:]}"


def _json_objects(text: str) -> list[str]:
    """Balanced `{...}` substrings, outermost first, in order of appearance (strings respected)."""
    out, depth, start, in_str, esc, quote = [], 0, -1, False, False, ""
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                in_str = False
            continue
        if ch in "\"'" and depth > 0:
            in_str, quote = True, ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(text[start:i + 1])
    return out


def _loads_lenient(blob: str) -> dict[str, Any] | None:
    candidates = [blob]
    fixed = re.sub(r",\s*([}\]])", r"\1", blob)
    fixed = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"\bNone\b", "null", fixed)))
    candidates.append(fixed)
    candidates.append(re.sub(r"(?<![A-Za-z])'|'(?![A-Za-z])", '"', fixed))  # single-quoted keys/strings
    for c in candidates:
        try:
            obj = json.loads(c)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


_TRUE = {"true", "yes", "y", "correct", "equivalent", "1", "same", "match"}
_FALSE = {"false", "no", "n", "incorrect", "not equivalent", "not_equivalent", "0", "different", "wrong"}
_EQ_KEYS = ("equivalent", "is_equivalent", "equivalence", "correct", "is_correct", "judgement", "judgment",
            "verdict", "answer", "result")


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().strip(".!*\"'` ").lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


def parse_equivalence(text: str) -> tuple[bool, str] | None:
    """(equivalent, reason) from a judge's reply, or None when it holds no verdict."""
    body = strip_thinking(text)
    for blob in reversed(_json_objects(body)):
        obj = _loads_lenient(blob)
        if not obj:
            continue
        lowered = {str(k).strip().lower(): v for k, v in obj.items()}
        for key in _EQ_KEYS:
            if key in lowered and (b := _as_bool(lowered[key])) is not None:
                reason = lowered.get("reason", lowered.get("reasoning", lowered.get("explanation", "")))
                return b, str(reason or "")
    hits = re.findall(r"[\"']?(?:is_)?equivalent[\"']?\s*[:=]\s*[\"']?(true|false|yes|no)\b", body, re.I)
    if hits:
        return hits[-1].lower() in ("true", "yes"), ""
    last = body.strip().splitlines()[-1] if body.strip() else ""
    last = re.sub(r"^(final\s+)?(answer|verdict|judgement|judgment)\s*[:\-]\s*", "", last.strip(), flags=re.I)
    b = _as_bool(last)
    return (b, "") if b is not None else None


SIMPLEQA_LABELS = ("CORRECT", "INCORRECT", "NOT_ATTEMPTED")
_LETTER = {"A": "CORRECT", "B": "INCORRECT", "C": "NOT_ATTEMPTED"}
_LABEL_RE = r"(NOT[_ ]ATTEMPTED|INCORRECT|CORRECT)"


def _clean_line(line: str) -> str:
    """Drop markdown emphasis, code ticks, heading marks and quotes; trailing punctuation."""
    s = re.sub(r"[*`#>\"]", "", line).strip().strip("'").rstrip(".!").strip()
    return s


def _label(token: str) -> str | None:
    t = token.strip().upper().replace(" ", "_")
    if t in SIMPLEQA_LABELS:
        return t
    m = re.fullmatch(r"\(?([ABC])\)?", t)
    return _LETTER[m.group(1)] if m else None


def parse_simpleqa_grade(text: str) -> str | None:
    """CORRECT / INCORRECT / NOT_ATTEMPTED from a grader's reply, anchored; None when ambiguous.

    Accepted, in this order: (1) the final non-empty line is just a grade, optionally after a prefix
    such as "Grade:" or "Final grade:", optionally as the letter A/B/C; (2) the last
    "Grade: LABEL" anywhere; (3) exactly one distinct label written in capitals anywhere, never
    preceded by a negation. Anything else is None.
    """
    body = strip_thinking(text).strip()
    if not body:
        return None
    lines = [ln for ln in body.splitlines() if ln.strip()]
    last = _clean_line(lines[-1])
    last = re.sub(r"^(?:final\s+)?(?:grade|answer|verdict|label)\s*[:\-]\s*", "", last, flags=re.I).strip()
    got = _label(_clean_line(last))
    if got:
        return got
    hits = list(re.finditer(r"grade\s*[:\-]\s*[*_`\"']*" + _LABEL_RE + r"(?![A-Z_])", body, re.I))
    if hits:
        return _label(hits[-1].group(1))
    found = set()
    for m in re.finditer(r"(?<![A-Z_])" + _LABEL_RE + r"(?![A-Z_])", body):
        before = body[max(0, m.start() - 12):m.start()].lower()
        if re.search(r"\b(not|isn't|is not|never|no)\s*$", before):
            return None
        found.add(m.group(1).replace(" ", "_"))
    return found.pop() if len(found) == 1 else None


def parse_rubric_score(text: str, *, low: float = 1, high: float = 10) -> float | None:
    """The judge's 1-10 rating: the last `Score: N` / `N/10` / `{"score": N}`; None when absent or out of range."""
    body = strip_thinking(text)
    value = None
    for blob in reversed(_json_objects(body)):
        obj = _loads_lenient(blob)
        if obj and "score" in {str(k).lower() for k in obj}:
            raw = next(v for k, v in obj.items() if str(k).lower() == "score")
            try:
                value = float(raw)
            except (TypeError, ValueError):
                value = None
            break
    if value is None:
        hits = re.findall(r"score\s*(?:of)?\s*[:=]?\s*[*_`]*\s*(\d+(?:\.\d+)?)\s*(?:/\s*10)?", body, re.I)
        hits = hits or re.findall(r"\b(\d+(?:\.\d+)?)\s*/\s*10\b", body)
        if hits:
            value = float(hits[-1])
    if value is None or not low <= value <= high:
        return None
    return value


def yes_probability(comp: Any, *, yes: str = "yes", no: str = "no") -> float | None:
    """P(yes) / (P(yes) + P(no)) from the FIRST generated token's top alternatives; None when unavailable."""
    lps = getattr(comp, "logprobs", None)
    if not lps:
        return None
    first = lps[0]
    cands = list(first.top) or []
    if not any(c.token for c in cands):
        cands = []
    py = pn = 0.0
    for c in cands + [first]:
        tok = (getattr(c, "token", "") or "").strip().lower()
        if tok and yes.startswith(tok):
            py = max(py, math.exp(c.logprob))
        elif tok and no.startswith(tok):
            pn = max(pn, math.exp(c.logprob))
    if py + pn == 0:
        return None
    return py / (py + pn)


__all__ = ["SIMPLEQA_LABELS", "parse_equivalence", "parse_rubric_score", "parse_simpleqa_grade", "strip_thinking",
           "truncate_middle", "yes_probability"]
