"""The pipeline's writers (datatrove writers with our adapters): `TrajectoryWriter` (one Trajectory record a
line), `parquet_writer` (flat columns + the whole record as JSON) and `exclusion_writer` (a filter's dropped
records with their reason).

Not covered: `save_to_disk` and the dataset card (`synth.pipeline.run`, `synth.pipeline.card`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from datatrove.data import Document
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.jsonl import JsonlWriter


def _drop_adapter(step: str) -> Callable[[Any, Document], dict]:
    def adapt(self: Any, doc: Document) -> dict:
        rec = doc.metadata.get("trajectory") if doc.metadata.get("kind") == "trajectory" else doc.metadata.get("example")
        return {"reason": doc.metadata.get("filter_reason"), "step": step, "id": doc.id, "record": rec}

    return adapt


def exclusion_writer(folder: str | Path, step: str) -> JsonlWriter:
    """datatrove's exclusion writer for one filter: `FOLDER/<step>/<rank>.jsonl`, `{reason, step, id, record}`."""
    return JsonlWriter(str(folder), output_filename=f"{step}/${{rank}}.jsonl", compression=None,
                       adapter=_drop_adapter(step))


def _trajectory_adapter(self: Any, doc: Document) -> dict:
    return doc.metadata["trajectory"] if doc.metadata.get("kind") == "trajectory" else doc.metadata.get("example", {})


class TrajectoryWriter(JsonlWriter):
    """datatrove's JsonlWriter writing one Trajectory record a line (`Trajectory.to_json`'s shape) to
    `FOLDER/trajectories/<rank>.jsonl` (input items, when no rollout ran, as their example dicts)."""

    name = "💾 trajectories.jsonl"

    def __init__(self, folder: str | Path, *, filename: str = "trajectories/${rank}.jsonl"):
        super().__init__(str(folder), output_filename=filename, compression=None, adapter=_trajectory_adapter)


def _parquet_adapter(self: Any, doc: Document) -> dict:
    t = doc.metadata.get("trajectory") or {}
    text = "".join(s.get("text", "") for s in t.get("segments", ()))
    return {"id": doc.id, "group_id": t.get("group_id"), "engine": t.get("engine"), "answer": t.get("answer"),
            "finish_reason": t.get("finish_reason"), "text": text,
            "record": json.dumps(t or doc.metadata.get("example"), ensure_ascii=False, default=str)}


def parquet_writer(folder: str | Path) -> PipelineStep:
    """datatrove's ParquetWriter: one row per trajectory in `trajectories_to_dataset`'s schema (flat columns +
    the whole record as JSON in `record`), `FOLDER/parquet/<rank>.parquet`."""
    from datatrove.pipeline.writers.parquet import ParquetWriter

    return ParquetWriter(str(folder), output_filename="parquet/${rank}.parquet", adapter=_parquet_adapter)


__all__ = ["TrajectoryWriter", "exclusion_writer", "parquet_writer"]
