r"""Answer extraction: where a model's output states its answer, one function per answer format.

    extract_answer("boxed", r"so \boxed{\text{Paris}}")      # "Paris"
    extract_answer("answer_tag", "<answer>42</answer>")       # "42"

| format | function | what it reads |
|---|---|---|
| boxed | `boxed_answer` | the last `\boxed{}` with `\text{...}` unwrapped (Search-o1's QA extraction) |
| answer_tag | `answer_tag` | the last `<answer>...</answer>` (Search-R1, R1-Searcher, ASearcher, ARTIST) |
| short | `short_answer` | `\boxed{}`, else `<answer>`, else an "answer is/:" line, else the first line |
| yes_no | `yes_no_answer` | yes/no from a box, else the last standalone yes/no/true/false |
| last_number | `last_number` | the last number of the text (lm-eval-harness's flexible extraction) |

`extract_boxed` is the raw last `\boxed{}` (math answers keep their LaTeX). Every function returns
None when the text states no answer. `tag_sequence` reads a text as the ordered names of its tagged
spans (what format rewards and ToolRL's format check judge).
Not covered: Game-of-24 expressions (`verify.game24`), tool calls (`verify.toolrl`, `envs.bfcl.checker`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from agentic_infer.errors import ConfigError
from agentic_infer.verify.maths import last_number

_BOXED = re.compile(r"\\(?:boxed|fbox)")


def extract_boxed(text: str | None) -> str | None:
    r"""The content of the last `\boxed{...}` (or `\fbox{...}`, or `\boxed 5`) in `text`, stripped.

    Nested braces are balanced; an unclosed last box yields None (it was cut off), as does a text
    without any box.
    """
    if not text:
        return None
    matches = list(_BOXED.finditer(text))
    if not matches:
        return None
    i = matches[-1].end()
    if text.startswith(" ", i) and not text[i:].lstrip(" ").startswith("{"):  # "\boxed 5"
        m = re.match(r" +([^\s$]+)", text[i:])
        return m.group(1).strip() if m else None
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text) or text[i] != "{":
        return None
    depth, start = 0, i + 1
    for j in range(i, len(text)):
        if text[j] == "{" and text[j - 1] != "\\":
            depth += 1
        elif text[j] == "}" and text[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[start:j].strip()
    return None


_TEXT = re.compile(r"\\text\s*\{(.*)\}", flags=re.DOTALL)


def boxed_answer(text: str | None) -> str | None:
    r"""The last `\boxed{}` with a `\text{...}` wrapper removed, stripped; None without a box."""
    boxed = extract_boxed(text)
    if boxed is None:
        return None
    inner = _TEXT.fullmatch(boxed)
    return (inner.group(1) if inner else boxed).strip()


def answer_tag(text: str | None) -> str | None:
    """The last `<answer>...</answer>` of the text, stripped, or None."""
    found = re.findall(r"<answer>(.*?)</answer>", text or "", flags=re.DOTALL)
    return found[-1].strip() if found else None


def short_answer(text: str | None) -> str | None:
    r"""A short answer from free text: the last `\boxed{}` (`\text{}` unwrapped), else `<answer>`, else an
    `Answer:` / "answer is" line, else the first non-empty line (small models often answer plainly)."""
    if text is None:
        return None
    for found in (boxed_answer(text), answer_tag(text)):
        if found is not None:
            return found
    m = re.findall(r"(?:final answer|answer)\s*(?:is|:)\s*(.+)", text, flags=re.IGNORECASE)
    if m:
        return m[-1].strip().rstrip(".").strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip().rstrip(".")
    return None


def yes_no_answer(text: str | None) -> str | None:
    """`yes`/`no` from a boxed answer (its first yes/no word), else the last standalone yes/no/true/false word;
    a box without one is returned as is."""
    if text is None:
        return None
    boxed = extract_boxed(text)
    source = boxed if boxed is not None else text
    words = re.findall(r"\b(yes|no|true|false)\b", source, flags=re.IGNORECASE)
    if not words:
        return boxed
    w = words[-1].lower() if boxed is None else words[0].lower()
    return {"true": "yes", "false": "no"}.get(w, w)


def tag_sequence(text: str, tags: Mapping[str, tuple[str, str]]) -> list[str] | None:
    """The names of the tagged spans of `text` in order (text outside tags is free), or None when a span is
    unclosed, unopened or nested. `tags`: {name: (opening tag, closing tag)}; one closing tag may end several
    spans (TIR's code fences)."""
    opens = {o: n for n, (o, _) in tags.items()}
    closes: dict[str, set[str]] = {}
    for n, (_, c) in tags.items():
        closes.setdefault(c, set()).add(n)
    pattern = "|".join(re.escape(t) for t in sorted({*opens, *closes}, key=len, reverse=True))
    out: list[str] = []
    current: str | None = None
    for m in re.finditer(pattern, text):
        tok = m.group(0)
        if tok in opens and current is None:
            current = opens[tok]
        elif tok in closes and current in closes[tok]:
            out.append(current)
            current = None
        else:
            return None
    return None if current is not None else out


ANSWER_FORMATS: dict[str, Callable[[str | None], str | None]] = {
    "boxed": boxed_answer,
    "answer_tag": answer_tag,
    "short": short_answer,
    "yes_no": yes_no_answer,
    "last_number": last_number,
}


def extract_answer(answer_format: str, text: str | None) -> str | None:
    """The answer `text` states in `answer_format` (a key of `ANSWER_FORMATS`), or None."""
    fn = ANSWER_FORMATS.get(answer_format)
    if fn is None:
        raise ConfigError(f"answer format {answer_format!r}: unknown; choose one of {sorted(ANSWER_FORMATS)}")
    return fn(text)


__all__ = ["ANSWER_FORMATS", "answer_tag", "boxed_answer", "extract_answer", "extract_boxed", "short_answer",
           "tag_sequence", "yes_no_answer"]
