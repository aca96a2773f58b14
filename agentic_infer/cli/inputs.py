"""Reading the questions a command runs on: one `--question`, or a JSONL `--input` file."""

from __future__ import annotations

import json
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
    examples = []
    with open(input_file, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{input_file}:{n}: not JSON ({e.msg}); expected one object per line") from None
            if not isinstance(row, dict) or not (row.get("question") or row.get("problem")):
                raise ConfigError(f"{input_file}:{n}: expected an object with a 'question' field")
            row.setdefault("question", row.get("problem"))
            examples.append(row)
    if not examples:
        raise ConfigError(f"--input {str(input_file)!r} holds no questions")
    return examples
