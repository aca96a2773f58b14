"""The pipeline's readers: `Reader` gives the input items as datatrove Documents (a benchmark via its task
loader, JSONL/JSON, parquet, a `datasets` folder or file, a passage corpus, or the Trajectory JSONL of an
earlier run), sharded over datatrove tasks (item i goes to rank i % world_size).

    Reader(kind="task", task="hotpotqa", path="hotpotqa_train_100.json", limit=20)

Records are datatrove Documents carrying our examples and Trajectory records (`synth.pipeline.records`).
Not covered: a streaming reader for corpora larger than memory (a corpus is read once per task).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl
from agentic_infer.types import Trajectory
from synth.pipeline.records import example_doc, trajectory_doc

log = logging.getLogger(__name__)
READER_KINDS = ("task", "jsonl", "parquet", "hf", "corpus", "trajectories")


def _load_examples(kind: str, path: Path, task: str | None, limit: int | None,
                   fields: Mapping[str, str]) -> list[dict[str, Any]]:
    if kind == "task":
        if not task:
            raise ConfigError("reader.kind=task needs reader.task (a benchmark name, see `agentic eval tasks`)")
        from agentic_infer.tasks import get_task

        return get_task(task).load(path, limit=limit, fields=dict(fields) or None)
    if kind == "parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
    elif kind == "hf":
        import datasets

        if path.is_dir():
            rows = list(datasets.load_from_disk(str(path)))
        else:
            fmt = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}.get(path.suffix)
            if fmt is None:
                raise ConfigError(f"reader.path={str(path)!r}: kind=hf reads a `save_to_disk` folder or a local "
                                  ".jsonl/.json/.csv/.parquet file")
            rows = list(datasets.load_dataset(fmt, data_files=str(path), split="train"))
    else:
        from agentic_infer.tasks.base import read_rows

        rows = [r for _, r in read_rows(path, "JSONL/JSON records with a 'question' field")]
    out = []
    for n, rec in enumerate(rows[:limit] if limit else rows):
        rec = dict(rec)
        for want, col in fields.items():  # the field we expect = the column in this file
            if col in rec:
                rec[want] = rec.pop(col)
        if "question" not in rec and "problem" in rec:
            rec["question"] = rec["problem"]
        if "question" not in rec:
            raise ConfigError(f"{path}: record {n} has no 'question' field (found: {', '.join(sorted(rec))[:200]}); "
                              "rename a column with reader.fields={question: COLUMN} or read it with kind=task")
        if "gold" not in rec and rec.get("answer") is not None:
            rec["gold"] = rec["answer"] if isinstance(rec["answer"], list) else [rec["answer"]]
        out.append(rec)
    return out


def trajectory_files(path: Path) -> list[Path]:
    """The trajectory JSONL files of an output directory (`trajectories.jsonl`, `trajectories/*.jsonl`) or a file."""
    if path.is_file():
        return [path]
    files = ([path / "trajectories.jsonl"] if (path / "trajectories.jsonl").is_file() else []) + sorted(
        (path / "trajectories").glob("*.jsonl"))
    if not files:
        raise ConfigError(f"--in {str(path)!r}: no trajectories.jsonl nor trajectories/*.jsonl there; point it at "
                          "the output directory of `agentic synth rollouts` / `run` or at a trajectories JSONL file")
    return files


class Reader(PipelineStep):
    """Input items as Documents: `kind` = task (an eval task's loader: any benchmark file), jsonl (JSONL or
    JSON records with `question`), parquet, hf (`datasets.load_from_disk` folder or a local data file),
    corpus (passages via `agentic_infer.tools.retrieval.corpus.read_corpus`, for QA synthesis) or
    trajectories (Trajectory JSONL written by a previous run, for `synth filter`)."""

    name = "read"
    type = "📖 - READER"

    def __init__(self, *, kind: str, path: str, task: str | None = None, limit: int | None = None,
                 fields: Mapping[str, str] | None = None, progress: Any = None):
        self.name = f"read:{kind}"
        super().__init__()
        if kind not in READER_KINDS:
            raise ConfigError(f"reader.kind={kind!r}: choose one of {', '.join(READER_KINDS)}")
        p = Path(path).expanduser()
        if not p.exists():
            raise ConfigError(f"reader.path={path!r}: no such file or directory; give the input file "
                              f"({'a folder of trajectories' if kind == 'trajectories' else 'the data file'})")
        if kind == "trajectories":
            trajectory_files(p)
        self.kind, self.path, self.task, self.limit, self.fields = kind, p, task, limit, dict(fields or {})
        self.progress = progress  # a shared synth.pipeline.progress.ItemProgress, or None

    def _count(self) -> int | None:
        """How many items this reader gives (trajectories: the files' non-empty lines; corpus: `limit`)."""
        if self.kind == "corpus":
            return self.limit
        n = 0
        for f in trajectory_files(self.path):
            with open(f, "rb") as fh:
                n += sum(1 for line in fh if line.strip())
        return min(n, self.limit) if self.limit else n

    def _docs(self) -> Iterator[Document]:
        if self.kind == "trajectories":
            n = 0
            for f in trajectory_files(self.path):
                for _, traj in iter_jsonl(f, "one Trajectory a line", parse=Trajectory.from_json, skip_bad=True):
                    yield trajectory_doc(traj)
                    n += 1
                    if self.limit and n >= self.limit:
                        return
        elif self.kind == "corpus":
            from itertools import islice

            from agentic_infer.tools.retrieval.corpus import read_corpus

            for d in islice(read_corpus(self.path), self.limit):
                yield Document(text=d.text, id=d.id, metadata={"kind": "example", "example": {
                    "id": d.id, "title": d.title, "text": d.text, "question": "", **d.metadata}})
        else:
            examples = _load_examples(self.kind, self.path, self.task, self.limit, self.fields)
            self._loaded = len(examples)
            for ex in examples:
                yield example_doc(ex)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        bar = self.progress
        counting = bar is not None and bar.counter == "reader"
        docs = self._docs()
        try:
            for i, doc in enumerate(docs):
                if i == 0 and bar is not None:  # the total is known once the items are loaded
                    n = getattr(self, "_loaded", None) if self.kind not in ("trajectories", "corpus") else self._count()
                    bar.start(None if n is None else len(range(rank, n, world_size)), rank, world_size)
                if i % world_size != rank:
                    continue
                with self.track_time():
                    self.stat_update("forwarded")
                yield doc
                if counting:
                    bar.advance()
        finally:
            if counting:
                bar.close()


__all__ = ["READER_KINDS", "Reader", "trajectory_files"]
