"""Small helpers shared by the LATS and RAP search configs: chat rendering, parsing, voting.

Not covered: prompt templates per model family beyond the backend's own chat template.
"""

from __future__ import annotations

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
