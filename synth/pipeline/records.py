"""How our records ride through a datatrove pipeline: a datatrove `Document` per item or per trajectory.

- an input item (a question, a corpus passage): `Document(text=question, id=example id,
  metadata={"kind": "example", "example": {...the example dict...}})`;
- a trajectory: `Document(text=question + completion, id=trajectory id, metadata={"kind": "trajectory",
  "trajectory": Trajectory.to_dict(), "sample": i, "group_size": k})`, the trajectories of one Rollout
  (one group, `group_id` = the example id) consecutive in the stream, so group filters see a whole group.

`Document.text` is what text filters (dedup, decontamination) read; the trajectory dict is the record,
and writers write it (one `Trajectory` record a line, exactly as eval and `run_many` write them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from datatrove.data import Document

from agentic_infer.engines.base import example_id
from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory


def example_doc(example: Mapping[str, Any]) -> Document:
    ex = dict(example)
    ex.setdefault("id", example_id(ex))
    return Document(text=str(ex.get("question", "")), id=str(ex["id"]), metadata={"kind": "example", "example": ex})


def trajectory_doc(traj: Trajectory, *, sample: int = 0, group_size: int = 1) -> Document:
    question = str(traj.example.get("question", "")) if traj.example else ""
    return Document(text=question + "\n" + traj.completion_text, id=traj.id,
                    metadata={"kind": "trajectory", "trajectory": traj.to_dict(), "sample": sample,
                              "group_size": group_size})


def doc_example(doc: Document) -> dict[str, Any]:
    """The example an input Document carries (a trajectory Document gives its trajectory's example)."""
    if doc.metadata.get("kind") == "trajectory":
        return dict(doc.metadata["trajectory"].get("example") or {})
    ex = doc.metadata.get("example")
    if ex is None:  # a Document from a datatrove reader: its text is the question
        ex = {"id": doc.id, "question": doc.text, **{k: v for k, v in doc.metadata.items() if k != "kind"}}
    return dict(ex)


def doc_trajectory(doc: Document) -> Trajectory:
    """The Trajectory a Document carries (a ConfigError names the step order when it carries an example)."""
    if doc.metadata.get("kind") != "trajectory":
        raise ConfigError(f"record {doc.id!r} is an input item, not a trajectory: put a `rollout` step (or a "
                          "trajectories reader) before judges, filters and trajectory writers")
    return Trajectory.from_dict(doc.metadata["trajectory"])


def groups(docs: Iterable[Document]) -> Iterator[list[Document]]:
    """Consecutive Documents of one group (trajectories sharing a `group_id`; each input item alone)."""
    batch: list[Document] = []
    key = None
    for doc in docs:
        k = doc.metadata["trajectory"].get("group_id") if doc.metadata.get("kind") == "trajectory" else None
        k = k if k is not None else ("item", doc.id)
        if batch and k != key:
            yield batch
            batch = []
        key = k
        batch.append(doc)
    if batch:
        yield batch
