"""The `Task` record and the shared loader helpers every benchmark file uses.

A task turns a published file into examples and says how to prompt for and score them:

    task = get_task("hotpotqa")
    examples = task.load("../shared/data/multihop/hotpotqa_dev_distractor_150.jsonl")
    examples[0]  # {"id", "question", "gold": [...], "raw": {...the published record...}, ...}

Every example is a plain dict with `id` (str), `question` (str: the text the model sees), `gold`
(a non-empty list of accepted answers; BFCL and Game of 24 keep their structured gold in `raw`) and
`raw` (the record as published, for corpus recipes and task metrics).

Loader errors name the file, the line (or row), the field that was expected and the format, e.g.
`data.jsonl:3: missing field 'answer' (HotpotQA: {_id, question, answer, context})`.
Copies in the wild rename columns: `task.load(path, fields={"answer": "true_answer"})` (the field the
task expects = the column in the file; CLI `--fields answer=true_answer,problem=question`) renames them
in every record this load reads.
Not covered: downloading data (users point the loader at their own copy).
"""

from __future__ import annotations

import contextvars
import csv
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.corpus import parse_literal
from agentic_infer.verify import short_answer

FAMILIES = ("qa", "multihop", "math", "tools", "puzzle", "env")
# The column renaming of the load in progress (expected field -> column in the file); see `Task.load`.
_FIELDS: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("fields", default=None)

# Prompt templates per engine family; `{question}` is filled in. Tasks may override any of them.
QA_PROMPTS = {
    "direct": "Answer the question with a short phrase (a name, a date, a number or yes/no), no explanation. "
              "Write the answer inside \\boxed{{}}.\n\nQuestion: {question}\nAnswer:",
    "cot": "Answer the question. Think step by step, then write the final short answer inside \\boxed{{}}.\n\n"
           "Question: {question}",
    "search": "{question}",
}
MATH_PROMPTS = {
    "direct": "{question}\nGive only the final answer, within \\boxed{{}}.",
    "cot": "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}.",
    "search": "{question}",
    "tir": "{question}",
}


@dataclass(frozen=True)
class Task:
    """One benchmark: its loader, prompts, answer extraction, metrics and corpus recipes."""

    name: str
    family: str
    description: str
    data_format: str  # what the loader expects, shown in `agentic eval tasks` and in errors
    loader: Callable[[Path], list[dict[str, Any]]]
    metrics: tuple[str, ...]
    primary: str
    default_files: tuple[str, ...] = ()  # paths under the shared data folder
    prompts: Mapping[str, str] = field(default_factory=lambda: dict(QA_PROMPTS))
    extract: Callable[[str | None], str | None] = short_answer  # answer extraction (`agentic_infer.verify`)
    question_corpus: Callable[[Mapping[str, Any]], list[Document]] | None = None
    pooled_corpus: Callable[[Path], Iterable[Document]] | None = None  # given the data file
    engines: tuple[str, ...] = ("direct", "cot", "search-o1", "deepconf", "lats", "rap")

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ConfigError(f"Task {self.name!r}: family={self.family!r}, choose one of {FAMILIES}")
        if self.primary not in self.metrics:
            raise ConfigError(f"Task {self.name!r}: primary metric {self.primary!r} is not in {self.metrics}")

    def load(self, path: str | Path, *, limit: int | None = None,
             fields: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """The examples of a file in this task's published format (the first `limit` of them).

        `fields` maps a field this task expects to the column that holds it in this file (renamed copies).
        """
        p = Path(path).expanduser()
        if not p.exists():
            raise ConfigError(f"task {self.name!r}: data file {str(p)!r} does not exist; expected {self.data_format}")
        token = _FIELDS.set(dict(fields or {}))
        try:
            examples = self.loader(p)
        finally:
            _FIELDS.reset(token)
        if not examples:
            raise ConfigError(f"task {self.name!r}: {p} holds no examples; expected {self.data_format}")
        seen: set[str] = set()
        for ex in examples:
            ex["task"] = self.name
            if ex["id"] in seen:  # duplicate ids would break resuming: make them unique and stable
                n = 1
                while f"{ex['id']}#{n}" in seen:
                    n += 1
                ex["id"] = f"{ex['id']}#{n}"
            seen.add(ex["id"])
        return examples[:limit] if limit else examples

    def prompt(self, family: str, example: Mapping[str, Any]) -> str:
        template = self.prompts.get(family) or self.prompts.get("cot") or "{question}"
        return template.format(question=example["question"])


# ----------------------------------------------------------------------------------- readers


def fail(path: Path, where: str | int | None, msg: str, fmt: str) -> ConfigError:
    loc = f"{path}:{where}" if where is not None else str(path)
    return ConfigError(f"{loc}: {msg}; expected {fmt}")


def read_rows(path: Path, fmt: str) -> list[tuple[int, dict[str, Any]]]:
    """(line or row number, record) of a .jsonl, .json (list, or a dict of lists) or .csv/.tsv file,
    with the columns of the current `Task.load(fields=...)` renamed to the fields the task expects."""
    rows = _read_rows(path, fmt)
    fields = _FIELDS.get() or {}
    for where, rec in rows if fields else ():
        if not isinstance(rec, dict):
            continue
        for want, column in fields.items():
            if column not in rec:
                raise fail(path, where, f"--fields {want}={column}: no column {column!r} here (columns: "
                           f"{', '.join(sorted(map(str, rec))[:12])})", fmt)
            rec[want] = rec.pop(column)
    return rows


def parse_fields(spec: str | None) -> dict[str, str]:
    """`"problem=question,answer=true_answer"` -> {"problem": "question", "answer": "true_answer"}."""
    out: dict[str, str] = {}
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        want, sep, column = part.partition("=")
        if not sep or not want.strip() or not column.strip():
            raise ConfigError(f"--fields {spec!r}: expected FIELD=COLUMN pairs separated by commas, "
                              "e.g. answer=true_answer,problem=question")
        out[want.strip()] = column.strip()
    return out


def _read_rows(path: Path, fmt: str) -> list[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise fail(path, None, f"not UTF-8 text ({e.reason})", fmt) from None
    if suffix in (".csv", ".tsv"):
        dialect = "excel-tab" if suffix == ".tsv" or (text.split("\n", 1)[0].count("\t") >
                                                      text.split("\n", 1)[0].count(",")) else "excel"
        reader = csv.DictReader(text.splitlines(), dialect=dialect)
        return [(i + 2, dict(r)) for i, r in enumerate(reader)]
    stripped = text.lstrip()
    if suffix == ".json" or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            if suffix == ".json" and stripped.startswith("{"):  # JSON Lines named .json (BFCL does this)
                return list(iter_jsonl(path, fmt))
            raise fail(path, e.lineno, f"not valid JSON ({e.msg})", fmt) from None
        if isinstance(data, dict):  # a wrapper {"data": [...]} or one record
            data = next((data[k] for k in ("data", "examples", "questions") if isinstance(data.get(k), list)), [data])
        if not isinstance(data, list):
            raise fail(path, None, f"a JSON {type(data).__name__} instead of a list of records", fmt)
        return [(i, r) for i, r in enumerate(data)]
    return list(iter_jsonl(path, fmt))


def need(rec: Any, names: str | Sequence[str], path: Path, where: Any, fmt: str) -> Any:
    """The value of the first present field of `names` (a tuple means alternatives), else a clear error."""
    if not isinstance(rec, Mapping):
        raise fail(path, where, f"a {type(rec).__name__} instead of a record", fmt)
    options = (names,) if isinstance(names, str) else tuple(names)
    for n in options:
        if n in rec and rec[n] is not None and rec[n] != "":
            return rec[n]
    fields = ", ".join(sorted(map(str, rec))[:12])
    want = " or ".join(repr(n) for n in options)
    raise fail(path, where, f"missing field {want} (found: {fields})", fmt)


def as_answers(value: Any, path: Path, where: Any, fmt: str) -> list[str]:
    """A gold answer or list of answers (JSON / Python-literal strings accepted) as a list of strings."""
    value = parse_literal(value, what=f"{path}:{where} answer")
    if isinstance(value, bool):
        return ["yes" if value else "no"]
    if isinstance(value, float) and value.is_integer():
        return [str(int(value))]
    if isinstance(value, (str, int, float)):
        return [str(value)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    raise fail(path, where, f"answer {str(value)[:60]!r} is not a string or a list of strings", fmt)


def record_id(rec: Mapping[str, Any], where: Any, task: str) -> str:
    for key in ("id", "_id", "qid", "unique_id", "question_id"):
        if rec.get(key) not in (None, ""):
            return str(rec[key])
    return f"{task}-{where}"


def simple_qa_loader(task: str, fmt: str, *, question: Sequence[str], answer: Sequence[str],
                     aliases: Sequence[str] = ()) -> Callable[[Path], list[dict[str, Any]]]:
    """A loader for flat QA files: question field(s), answer field(s), optional alias fields."""

    def load(path: Path) -> list[dict[str, Any]]:
        out = []
        for where, rec in read_rows(path, fmt):
            q = need(rec, question, path, where, fmt)
            gold = as_answers(need(rec, answer, path, where, fmt), path, where, fmt)
            for a in aliases:
                if rec.get(a):
                    gold += [g for g in as_answers(rec[a], path, where, fmt) if g not in gold]
            out.append({"id": record_id(rec, where, task), "question": str(q).strip(), "gold": gold, "raw": rec})
        return out

    return load
