"""`synth demos|coa` on an executor (local processes, Ray, Slurm): the questions in blocks, one per rank, merged into
exactly the one-process trajectories, drops and counts; a rerun of a finished sharded run builds nothing again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_infer.cli import main
from agentic_infer.executors import ExecutorConfig
from agentic_infer.shards import block, sum_stats
from synth.blocks import BuildSpec, run_build
from synth.coa import CoAOptions
from tests.conftest import shared_data

MUSIQUE = str(shared_data("multihop/musique_train_100.json"))
TIMINGS = ("wall_s", "ms_per_row", "demos_per_min")


def _records(path: Path) -> list[dict]:
    """The records of a JSONL output with their timings dropped (the only field a process changes)."""
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec.get("usage", {}).pop("wall_s", None)
        out.append(rec)
    return out


def _counts(out: Path) -> dict:
    s = json.loads((out / "stats.json").read_text())
    return {k: v for k, v in s.items() if k not in (*TIMINGS, "executor")}


def test_blocks_cover_the_items_in_order_and_stats_sum():
    assert [list(block(7, r, 3)) for r in range(3)] == [[0, 1], [2, 3], [4, 5, 6]]
    assert [list(block(2, r, 3)) for r in range(3)] == [[], [0], [1]]
    merged = sum_stats([{"kept": 2, "no_plan": {"a": 1}, "options": {"k": 3}, "task": "m", "calls": None},
                        {"kept": 3, "no_plan": {"a": 2, "b": 1}, "options": {"k": 3}, "task": "m", "calls": 4}],
                       same=("options",))
    assert merged == {"kept": 5, "no_plan": {"a": 3, "b": 1}, "options": {"k": 3}, "task": "m", "calls": 4}


@pytest.mark.parametrize("executor", [{"kind": "local", "tasks": 3, "workers": 2}, {"kind": "ray", "tasks": 2, "workers": 2},
                                      {"kind": "slurm", "tasks": 2, "workers": 2, "poll_s": 0.5}])
def test_coa_on_an_executor_gives_the_one_process_output(tmp_path, executor, request):
    if executor["kind"] == "ray":
        pytest.importorskip("ray")
    if executor["kind"] == "slurm":
        request.getfixturevalue("slurm_cluster")
    spec = BuildSpec("coa", "musique", MUSIQUE, CoAOptions(), limit=12)  # questions 2, 8, 10 reflect; 11 is dropped
    one = run_build(spec, tmp_path / "one")
    out = tmp_path / "sharded"
    stats = run_build(spec, out, ExecutorConfig(**executor))
    for name in ("trajectories.jsonl", "dropped.jsonl"):
        assert _records(out / name) == _records(tmp_path / "one" / name), name
    assert _counts(out) == _counts(tmp_path / "one") and stats["kept"] == one["kept"] == 11
    assert stats["questions"] == 12 and stats["executor"]["tasks"] == executor["tasks"]
    shards = sorted(out.glob("shards/*/0000*/trajectories.jsonl"))
    assert len(shards) == executor["tasks"] and all(p.read_text() for p in shards)  # every rank built its block
    assert len(list(out.glob("shards/*/logs/completions/*"))) == executor["tasks"]


def test_demos_cli_on_local_processes_and_a_rerun_builds_nothing(tmp_path, capsys):
    one, out = tmp_path / "one", tmp_path / "sharded"
    base = ["synth", "demos", "--task", "musique", "--data", MUSIQUE, "--limit", "6", "--corpus", "pooled"]
    for argv in (base + ["--out", str(one)], base + ["--out", str(out), "--tasks", "3", "--workers", "2"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
    assert _records(out / "trajectories.jsonl") == _records(one / "trajectories.jsonl")
    assert _counts(out) == _counts(one) and _counts(one)["kept"] > 6  # several variants per question, pooled corpus
    shard_files = sorted(out.glob("shards/*/0000*/trajectories.jsonl"))
    stamps = [p.stat().st_mtime_ns for p in shard_files]
    with pytest.raises(SystemExit) as e:
        main(base + ["--out", str(out), "--tasks", "3", "--workers", "2", "--overwrite"])
    assert e.value.code == 0
    assert [p.stat().st_mtime_ns for p in shard_files] == stamps  # every rank had finished: none rebuilt
    assert _records(out / "trajectories.jsonl") == _records(one / "trajectories.jsonl")
