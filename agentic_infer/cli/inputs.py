"""Reading the questions a command runs on: one `--question`, or a JSONL `--input` file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError


def read_examples(question: str | None, input_file: Path | None) -> list[dict[str, Any]]:
    """Examples as dicts with a 'question' (a 'problem' field is accepted as the question)."""
    if (question is None) == (input_file is None):
        raise ConfigError("give exactly one of --question TEXT or --input FILE.jsonl")
    if question is not None:
        return [{"question": question}]
    if not input_file.is_file():
        raise ConfigError(f"--input {str(input_file)!r}: no such file")
    from agentic_infer.runner import iter_jsonl

    examples = []
    for n, row in iter_jsonl(input_file, "one object per line"):
        if not isinstance(row, dict) or not (row.get("question") or row.get("problem")):
            raise ConfigError(f"{input_file}:{n}: expected an object with a 'question' field")
        row.setdefault("question", row.get("problem"))
        examples.append(row)
    if not examples:
        raise ConfigError(f"--input {str(input_file)!r} holds no questions")
    return examples
