"""`agentic train distill --quick`: the whole recipe on a few questions, then a rerun that skips every stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train.distill import STAGES, DistillSettings, run_distill

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.slow]  # ~45 s alone on 2 cores: make test-all


def test_quick_recipe_runs_every_stage_and_resumes(tmp_path):
    s = DistillSettings(quick=True, out=str(tmp_path / "d"))
    if not Path(s.data_dir).is_dir():
        pytest.skip("shared multihop data not present")
    first: list[str] = []
    result = run_distill(s, echo=first.append)
    out = Path(s.out)
    assert (out / "policy.gguf").stat().st_size > 1_000_000
    assert result["sft"]["steps"] == 2 and result["grpo"]["steps"] == 1
    assert result["data"]["dev_overlap_dropped"] == 0 and result["filter"]["dropped"]["not_plain_prompt"] == 0
    report = (out / "report.md").read_text()
    assert "| sft |" in report and "GRPO curve" in report
    for stage in STAGES:
        assert json.loads((out / stage / "done.json").read_text())["config_hash"]
    assert first[-1].endswith(f"{out / 'policy.gguf'}  report: {out / 'report.md'}")
    mtime = (out / "sft" / "model" / "model.safetensors").stat().st_mtime
    again: list[str] = []
    run_distill(s, echo=again.append)
    skipped = [x for x in again if "skipped" in x]
    assert len(skipped) == len(STAGES) - 1  # the report is rewritten
    assert (out / "sft" / "model" / "model.safetensors").stat().st_mtime == mtime
