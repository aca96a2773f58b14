"""The envtasks pipeline's datatrove steps: seeds -> sample -> phrase -> verify -> write (synth.pipeline's layout).

    steps = [SeedReader(count=200, seed=0), SampleStep(exclusion_folder=...), PhraseStep(exclusion_folder=...),
             VerifyStep(exclusion_folder=...), TaskWriter(folder)]

A record is a datatrove `Document` whose metadata carries the item: `{"kind": "seed", "index", "seed"}` from the
reader, `{"kind": "sampled", "task": SampledTask as a dict}` after sampling, `{"kind": "task", "row": the task
row}` after phrasing (and for rows read with `--from-tasks`). Every step counts what it saw (`total`,
`forwarded`, `dropped_<reason>`, datatrove's stats merged by `synth.pipeline.run.merge_stats`) and sends what
it drops, with the reason, to datatrove's exclusion writer (`synth.pipeline.writers.exclusion_writer`:
`{reason, step, id, record}`). Seeds are sharded over datatrove tasks (item i goes to rank i % world_size).
Not covered: the run's layout, stats.json, resume (`synth.envtasks.run`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.jsonl import JsonlWriter

from synth.envtasks.sampler import SampledTask, SamplerConfig, sample_task, task_seed
from synth.pipeline.writers import exclusion_writer


def _tables(data_dir: str | None) -> Mapping[str, Mapping[str, Any]]:
    from agentic_infer.envs.retail.db import load_tables

    return load_tables(data_dir)


class SeedReader(PipelineStep):
    """`count` seed items (`task_seed(seed, i)`), or the rows of `rows` (tasks read with --from-tasks)."""

    name = "read:seeds"
    type = "📖 - READER"

    def __init__(self, *, count: int, seed: int, rows: list[dict[str, Any]] | None = None, progress: Any = None):
        super().__init__()
        self.count, self.seed, self.rows, self.progress = count, seed, rows, progress

    def _docs(self) -> Iterator[Document]:
        if self.rows is not None:
            for row in self.rows:
                yield Document(text=str(row.get("instruction", "")), id=str(row["id"]),
                               metadata={"kind": "task", "row": row})
            return
        for i in range(self.count):
            yield Document(text="", id=str(i), metadata={"kind": "seed", "index": i,
                                                         "seed": task_seed(self.seed, i)})

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        total = len(self.rows) if self.rows is not None else self.count
        bar = self.progress
        if bar is not None:
            bar.start(len(range(rank, total, world_size)), rank, world_size)
        try:
            for i, doc in enumerate(self._docs()):
                if i % world_size != rank:
                    continue
                self.stat_update("forwarded")
                yield doc
                if bar is not None:
                    bar.advance()
        finally:
            if bar is not None:
                bar.close()


class _Dropping(PipelineStep):
    """A step that drops records with a reason: counted as `dropped_<reason>`, written to the exclusion folder.
    Rows read from a task file pass through unless `checks_rows`."""

    checks_rows = False

    def __init__(self, exclusion_folder: str | None):
        super().__init__()
        self.exclusion_folder = exclusion_folder
        self._writer: JsonlWriter | None = None

    def _drop(self, doc: Document, reason: str, record: Any, rank: int) -> None:
        self.stat_update("dropped", f"dropped_{reason}")
        if self._writer is None and self.exclusion_folder:
            self._writer = exclusion_writer(self.exclusion_folder, self.name.replace(":", "_"))
        if self._writer is not None:
            doc.metadata.update(filter_reason=reason, kind="example", example=record)
            self._writer.write(doc, rank)

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def handle(self, doc: Document, rank: int) -> bool:  # keep?
        raise NotImplementedError

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        try:
            for doc in data or ():
                self.stat_update("total")
                if doc.metadata.get("kind") == "task" and not self.checks_rows:  # rows read as they are
                    self.stat_update("forwarded")
                    yield doc
                    continue
                with self.track_time():
                    keep = self.handle(doc, rank)
                if keep:
                    self.stat_update("forwarded")
                    yield doc
        finally:
            self._close()


class SampleStep(_Dropping):
    """Seed -> `SampledTask` (`synth.envtasks.sampler.sample_task` over the real tables); drops `no_candidate`
    and `gold_refused:<tool>` (a write the tools refused while sampling)."""

    name = "sample"
    type = "🎲 - SAMPLER"

    def __init__(self, *, sampler: SamplerConfig = SamplerConfig(), data_dir: str | None = None,
                 exclusion_folder: str | None = None):
        super().__init__(exclusion_folder)
        self.sampler, self.data_dir = sampler, data_dir

    def handle(self, doc: Document, rank: int) -> bool:
        task, reason = sample_task(_tables(self.data_dir), doc.metadata["seed"], self.sampler)
        if task is None:
            self._drop(doc, reason or "unsampled", {"seed": doc.metadata["seed"], "index": doc.metadata["index"]},
                       rank)
            return False
        doc.metadata.update(kind="sampled", task=dataclasses.asdict(task))
        return True


class PhraseStep(_Dropping):
    """`SampledTask` -> task row: the template intent (`synth.envtasks.templates`), reworded by the LLM at
    `backend` when one is given (`synth.envtasks.reword`, requests cached in `cache_path`)."""

    name = "phrase"
    type = "✍️ - PHRASE"

    def __init__(self, *, run_seed: int, backend: str | None = None, cache_path: str | None = None,
                 data_dir: str | None = None, env: str = "retail", exclusion_folder: str | None = None):
        super().__init__(exclusion_folder)
        self.run_seed, self.backend, self.cache_path, self.data_dir, self.env = run_seed, backend, cache_path, \
            data_dir, env
        self._llm: Any = None

    def _model(self) -> Any:
        if self._llm is None:
            from agentic_infer.backends import load_llm
            from agentic_infer.backends.cache import CachedLLM

            llm = load_llm(self.backend)
            self._llm = CachedLLM(llm, self.cache_path) if self.cache_path else llm
        return self._llm

    def handle(self, doc: Document, rank: int) -> bool:
        from synth.envtasks.reword import reword
        from synth.envtasks.templates import render_intent
        from synth.envtasks.verify import gold_db, task_row, written_digest

        tables = _tables(self.data_dir)
        task = SampledTask(**doc.metadata["task"])
        text, ids = render_intent(task, tables, rng=random.Random(task.seed))
        prompt = None
        if self.backend:
            text, prompt = asyncio.run(reword(self._model(), text, seed=task.seed))
            self.stat_update("llm_calls")
        row = task_row(task, text, digest=written_digest(gold_db(task.actions)), index=doc.metadata["index"],
                       run_seed=self.run_seed, template=ids, prompt=prompt, env=self.env)
        doc.text, doc.id = text, row["id"]
        doc.metadata.update(kind="task", row=row)
        return True


class VerifyStep(_Dropping):
    """Keeps the rows that replay to their digest and whose intent names every needed argument
    (`synth.envtasks.verify.check_task`); rows read with --from-tasks (no provenance writes) are checked
    for replay only."""

    name = "verify"
    type = "🔻 - FILTER"
    checks_rows = True

    def __init__(self, *, data_dir: str | None = None, exclusion_folder: str | None = None):
        super().__init__(exclusion_folder)
        self.data_dir = data_dir

    def handle(self, doc: Document, rank: int) -> bool:
        from synth.envtasks.verify import check_task

        row = doc.metadata["row"]
        if "digest" not in (row.get("provenance") or {}):
            return True  # an existing task file's row: its gold actions are what they are (some refuse on purpose)
        reason = check_task(row, _tables(self.data_dir))
        if reason is not None:
            self._drop(doc, reason, row, rank)
            return False
        return True


def _row_adapter(self: Any, doc: Document) -> dict:
    return doc.metadata["row"]


class TaskWriter(JsonlWriter):
    """datatrove's JsonlWriter writing one task row a line to `FOLDER/tasks/<rank>.jsonl`."""

    name = "💾 tasks.jsonl"

    def __init__(self, folder: str | Path):
        super().__init__(str(folder), output_filename="tasks/${rank}.jsonl", compression=None, adapter=_row_adapter)


__all__ = ["PhraseStep", "SampleStep", "SeedReader", "TaskWriter", "VerifyStep"]
