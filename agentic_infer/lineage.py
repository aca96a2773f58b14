"""Lineage: where a training row came from, carried from synthesis through export and training into eval.

    lineage_of(traj)                        # the trajectory's metadata["lineage"], or one derived from it
    summarize_lineage(lineages, path=...)   # a dataset's origins: rows by operator and engine, distinct sources
    file_lineage("sft.jsonl")               # the same for a data file's records (with its sha256)
    write_policy_lineage(model_dir, [...], base_model=m)  # MODEL_DIR/lineage.json beside the checkpoint and GGUF
    read_policy_lineage("runs/x/policy.gguf")   # what an eval run records about the policy it scored

A lineage is a flat dict: `source` (the item it was made from: the example id), `engine` (what produced it),
`backend` (which model, when one was sampled), `operator` (how: `gold_demo`, `rejection_sampling`, `coa_linearise`,
`tree_path`, `tree_sibling`, `expert_iteration`, ...), `parents` (the trajectories or calls it was derived from),
and the verdicts that let it through (`filter`, `gates`). Synth steps write it on `Trajectory.metadata["lineage"]`;
exports copy it onto every row (`metadata["lineage"]`; verl rows as JSON in `extra_info["lineage"]`); `agentic
train sft` and `agentic train grpo` summarise the lineages of their data (`file_lineage`) into their result files
and `lineage.json` beside the policy, GRPO with the lineage of the policy it started from (`base_lineage`), so a
chain SFT -> GRPO stays readable; `agentic eval run` records the scored policy's `lineage.json` in `summary.json`
(`model.lineage`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.types import Trajectory

POLICY_LINEAGE = "lineage.json"


def lineage_of(traj: Trajectory) -> dict[str, Any]:
    """`traj.metadata["lineage"]`, else what the trajectory itself says: its example, engine, whether it was
    scripted (a demonstration) or sampled, the trajectory it branched from."""
    recorded = traj.metadata.get("lineage")
    if isinstance(recorded, Mapping):
        return dict(recorded)
    return {"source": traj.group_id or traj.example.get("id"), "engine": traj.engine,
            "operator": "demonstration" if traj.metadata.get("demonstration") else "rollout",
            "parents": [traj.parent_id] if traj.parent_id else []}


def record_lineage(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The lineage of one JSONL record a trainer reads: a row's `metadata["lineage"]`, a Trajectory's (derived when
    absent), a Rollout's chosen trajectory's; None for a row that carries none."""
    if "segments" in record:
        return lineage_of(Trajectory.from_dict(dict(record)))
    if "trajectories" in record:
        trajs = record.get("trajectories") or []
        chosen = record.get("chosen")
        pick = trajs[chosen] if isinstance(chosen, int) and 0 <= chosen < len(trajs) else (trajs[0] if trajs else None)
        return lineage_of(Trajectory.from_dict(pick)) if pick else None
    meta = record.get("metadata")
    found = meta.get("lineage") if isinstance(meta, Mapping) else None
    found = found if isinstance(found, Mapping) else record.get("lineage")  # a fuzzqa QA row keeps it on top
    return dict(found) if isinstance(found, Mapping) else None


def file_lineage(path: str | Path) -> dict[str, Any]:
    """The origins of a training data file (SFT rows, GRPO prompts): `summarize_lineage` over its JSONL records
    (`record_lineage` of each), with the file's path and sha256."""
    import hashlib

    from agentic_infer.runner import iter_jsonl

    p = Path(path).expanduser().resolve()
    lineages = [record_lineage(d) for _, d in iter_jsonl(p, "one record a line")]
    return summarize_lineage(lineages, path=str(p), sha256=hashlib.sha256(p.read_bytes()).hexdigest())


def summarize_lineage(lineages: Sequence[Mapping[str, Any] | None], *, path: str | None = None,
                      sha256: str | None = None) -> dict[str, Any]:
    """A dataset's origins (one entry per row, None for a row without lineage): rows, rows with a lineage, rows by
    operator, engine and backend, distinct sources."""
    known = [x for x in lineages if x is not None]
    return {"data": path, "sha256": sha256, "rows": len(lineages), "rows_with_lineage": len(known),
            "by_operator": dict(Counter(str(x.get("operator")) for x in known).most_common()),
            "by_engine": dict(Counter(str(x.get("engine")) for x in known).most_common()),
            "by_backend": dict(Counter(str(x.get("backend")) for x in known if x.get("backend")).most_common()),
            "sources": len({str(x.get("source")) for x in known})}


def write_policy_lineage(model_dir: str | Path, datasets: list[dict[str, Any]], *, base_model: str,
                         **extra: Any) -> Path:
    """`model_dir/lineage.json`: the datasets (their `summarize_lineage`) a policy was trained on, the policy it
    started from and that one's own lineage (`base_lineage`, None for a model of no run of ours)."""
    path = Path(model_dir) / POLICY_LINEAGE
    record = {"datasets": datasets, "base_model": base_model, "base_lineage": read_policy_lineage(base_model), **extra}
    path.write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
    return path


def read_policy_lineage(model_path: str | Path) -> dict[str, Any] | None:
    """The `lineage.json` of a policy (a GGUF file or a checkpoint folder: the one beside it / in it; a backend URI
    `hf://PATH` / `llamacpp://PATH` names one), or None."""
    p = Path(str(model_path).split("://", 1)[-1])
    if not p.exists():  # e.g. llamacpp://default, a hub name: no policy file of ours
        return None
    path = p / POLICY_LINEAGE if p.is_dir() else p.parent / POLICY_LINEAGE
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None
