"""StrategyQA: yes/no questions needing implicit multi-step reasoning.

Format: JSON array (the original) of `{qid, question, answer: bool, facts, decomposition,
evidence}`. Corpus: `strategyqa_evidence_paragraphs.jsonl` (`{title, section, headers, para_index,
contents}`, id `title-para_index`) next to the data file; the per-question corpus is the paragraphs its
`evidence` annotations cite, the pooled corpus is the whole file. Metric: yes/no accuracy (`em`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_infer.runner import iter_jsonl
from agentic_infer.tasks.base import QA_PROMPTS, Task, as_answers, need, read_rows, record_id
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.verify import yes_no_answer

FORMAT = "StrategyQA records {qid, question, answer: true|false, evidence} (JSON array)"
EVIDENCE_FILE = "strategyqa_evidence_paragraphs.jsonl"


def load(path: Path) -> list[dict[str, Any]]:
    out = []
    for where, rec in read_rows(path, FORMAT):
        q = need(rec, "question", path, where, FORMAT)
        ans = need(rec, "answer", path, where, FORMAT) if rec.get("answer") is not False else False
        gold = as_answers(ans, path, where, FORMAT)
        if gold[0].lower() in ("true", "false"):
            gold = ["yes" if gold[0].lower() == "true" else "no"]
        if gold[0].lower() not in ("yes", "no"):
            raise ValueError(f"{path}:{where}: StrategyQA answer must be true/false, got {ans!r}")
        ex = {"id": record_id(rec, where, "strategyqa"), "question": str(q).strip(), "gold": gold, "raw": rec,
              "evidence_file": str(path.resolve().parent / EVIDENCE_FILE)}
        out.append(ex)
    return out


@lru_cache(maxsize=4)
def _paragraphs(file: str) -> dict[str, Document]:
    docs = {}
    for _, r in iter_jsonl(file, "StrategyQA paragraphs, one {title, para_index, contents} a line"):
        pid = f"{r['title']}-{r['para_index']}"
        docs[pid] = Document(id=pid, title=str(r["title"]), text=str(r.get("contents", "")))
    return docs


def _ids(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, (list, tuple)):
        for x in node:
            yield from _ids(x)


def question_corpus(example: Mapping[str, Any]) -> list[Document]:
    file = example.get("evidence_file")
    if not file or not Path(file).is_file():
        raise ValueError(f"StrategyQA per-question corpus needs {EVIDENCE_FILE} next to the data file ({file})")
    paras = _paragraphs(file)
    seen: dict[str, Document] = {}
    for pid in _ids(example["raw"].get("evidence", [])):
        if pid in paras and pid not in seen:
            seen[pid] = paras[pid]
    return list(seen.values())


def pooled(path: Path) -> Iterator[Document]:
    file = path.resolve().parent / EVIDENCE_FILE
    if not file.is_file():
        raise ValueError(f"StrategyQA pooled corpus: {file} not found")
    yield from _paragraphs(str(file)).values()


PROMPTS = dict(QA_PROMPTS, direct="Answer the yes/no question with yes or no inside \\boxed{{}}.\n\nQuestion: {question}\nAnswer:",
               cot="Answer the yes/no question. Think step by step, then write yes or no inside \\boxed{{}}.\n\n"
                   "Question: {question}")

TASKS = [Task(
    name="strategyqa", family="multihop", description="StrategyQA (yes/no, implicit multi-step)",
    data_format=FORMAT, loader=load, metrics=("em", "judge_acc"), primary="em",
    default_files=("multihop/strategyqa_dev.json",), prompts=PROMPTS, extract=yes_no_answer,
    question_corpus=question_corpus, pooled_corpus=pooled,
)]
