"""Small helpers shared by the LATS and RAP search configs: chat rendering, parsing, voting.

Not covered: prompt templates per model family beyond the backend's own chat template.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.types import Message


def as_chat(llm: Any, text: str, *, system: str | None = None) -> str:
    """Render `text` as one user turn with the backend's chat template; raw text when it has none."""
    msgs = ([Message("system", system)] if system else []) + [Message("user", text)]
    try:
        return llm.render(msgs)
    except (ConfigError, AttributeError, NotImplementedError):
        return (system + "\n\n" if system else "") + text + "\n"


def first_line(text: str) -> str:
    for line in (text or "").strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


_LAST_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")


def last_number(text: str | None) -> str | None:
    """The last number in a text (commas removed), e.g. 'The answer is 1,234.' -> '1234'."""
    found = _LAST_NUMBER.findall(text or "")
    return found[-1].replace(",", "").rstrip(".") if found else None


def vote_share(keys: list[str | None]) -> tuple[str | None, float]:
    """Majority key among non-None keys and its share of ALL keys (0 when none)."""
    real = [k for k in keys if k is not None]
    if not real:
        return None, 0.0
    key, count = Counter(real).most_common(1)[0]
    return key, count / len(keys)


def mean_logprob(comp: Any) -> float | None:
    """Mean per-token logprob of a completion, None when the backend gave none."""
    lps = getattr(comp, "logprobs", None)
    if not lps:
        return None
    return sum(t.logprob for t in lps) / len(lps)


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
        if tok and yes.startswith(tok) and len(tok) >= 1 and tok[0] == yes[0]:
            py = max(py, math.exp(c.logprob))
        elif tok and no.startswith(tok) and tok[0] == no[0]:
            pn = max(pn, math.exp(c.logprob))
    if py + pn == 0:
        return None
    return py / (py + pn)
