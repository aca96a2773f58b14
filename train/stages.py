"""Resumable recipes by stage (`make distill`, `make rl`): each stage a folder, skipped when done with the same settings.

    summaries = run_stages(out, ["data", "sft", "report"], keys, runners, settings, echo=print, tag="rl")

A stage's config hash covers its own settings (`keys[stage]`, attributes of `settings`) and the hash of the
stage before it (a chain), so a changed setting reruns that stage and every later one. A finished stage writes
`<out>/<stage>/done.json` (hash, summary, settings); a rerun with the same hash skips it (the `always` stages,
e.g. the report, run every time). A stage stopped midway keeps its folder when rerun with the same hash
(`started.json`), so a trainer inside it can resume its last checkpoint; a changed hash empties the folder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any


def stage_hashes(settings: Any, stages: Sequence[str], keys: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Each stage's config hash: its own settings and the hash of the stage before (a chain)."""
    out, prev = {}, ""
    for stage in stages:
        blob = json.dumps([prev, stage, {k: getattr(settings, k) for k in keys.get(stage, ())}], sort_keys=True,
                          default=str)
        prev = out[stage] = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return out


def finished(folder: Path, h: str) -> dict[str, Any] | None:
    """The stage's done.json when it finished with config hash `h`, else None."""
    marker = folder / "done.json"
    if marker.is_file():
        d = json.loads(marker.read_text())
        if d.get("config_hash") == h:
            return d
    return None


def prepare_stage(folder: Path, h: str) -> bool:
    """Make `folder` ready for a stage with config hash `h`; True when it holds a stopped run of the same settings
    (kept, so a trainer resumes its checkpoint), False when it was emptied."""
    started = folder / "started.json"
    resuming = started.is_file() and json.loads(started.read_text()).get("config_hash") == h
    if not resuming:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    started.write_text(json.dumps({"config_hash": h}))
    return resuming


def run_stages(out: Path, stages: Sequence[str], keys: Mapping[str, Sequence[str]],
               runners: Mapping[str, Callable[[Path], dict[str, Any]]], settings: Any, *,
               echo: Callable[[str], None] = print, tag: str = "recipe", always: Sequence[str] = ("report",),
               summaries: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Run (or skip) every stage in order under `out`; returns {stage: summary} (`summaries`, filled in place, so
    later runners can read earlier summaries)."""
    summaries = {} if summaries is None else summaries
    out.mkdir(parents=True, exist_ok=True)
    hashes = stage_hashes(settings, stages, keys)
    for stage in stages:
        d = out / stage
        done = finished(d, hashes[stage])
        if done is not None and stage not in always:
            summaries[stage] = {**done["summary"], "skipped": True}
            echo(f"[{tag}] {stage}: done earlier ({hashes[stage]}), skipped")
            continue
        echo(f"[{tag}] {stage}: {'resuming' if prepare_stage(d, hashes[stage]) else 'running'}")
        t0 = time.perf_counter()
        summary = runners[stage](d)
        summary["seconds"] = round(time.perf_counter() - t0, 1)
        summaries[stage] = summary
        (d / "done.json").write_text(json.dumps({"config_hash": hashes[stage], "summary": summary,
                                                 "settings": asdict(settings)}, indent=2, default=str))
        echo(f"[{tag}] {stage}: done in {summary['seconds']} s")
    return summaries


__all__ = ["finished", "prepare_stage", "run_stages", "stage_hashes"]
