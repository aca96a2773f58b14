"""A synth pipeline on a real one-node Slurm cluster (`make slurm-up`): the same records and merged stats as the
local executor, the job's logs in LOGS/slurm_logs/, and a rerun that submits nothing once every task finished."""

import json
from collections import Counter

from synth.pipeline import run_pipeline
from tests.synth.pipeline.test_executor_ray import _steps
from tests.synth.pipeline.test_resume import _cfg, records, write_nq


def test_slurm_executor_gives_the_local_records_and_stats(tmp_path, slurm_cluster):
    data = write_nq(tmp_path / "nq.jsonl", 8)
    run_pipeline(_cfg(tmp_path / "local", data, 1, 1))
    cfg = _cfg(tmp_path / "slurm", data, 2, 2)
    cfg.executor.kind, cfg.executor.slurm_partition, cfg.executor.poll_s = "slurm", slurm_cluster, 0.5
    summary = run_pipeline(cfg)
    a, b = records(tmp_path / "local"), records(tmp_path / "slurm")
    assert len(a) == 6 and Counter(a) == Counter(b)
    assert _steps(tmp_path / "local") == _steps(tmp_path / "slurm") and summary["records"] == 6
    logs = next((tmp_path / "slurm" / "logs").glob("*/slurm_logs"))
    outs = sorted(logs.glob("*_[01].out"))  # one file per array task: <job>_<task>.out
    assert len(outs) >= 2 and all("Processing done for rank" in f.read_text() for f in outs[:2])
    before = sorted(f.name for f in logs.glob("*.out"))
    again = run_pipeline(cfg)  # every rank has its completion marker: no job is submitted
    assert again["records"] == 6 and sorted(f.name for f in logs.glob("*.out")) == before
    assert json.loads(next((tmp_path / "slurm" / "logs").glob("*/executor.json")).read_text())["partition"] == slurm_cluster
