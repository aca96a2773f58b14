"""`agentic train rl --quick`: every stage of the RL recipe on FrozenLake, then a rerun that skips them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train.rl import RLSettings, run_rl

pytestmark = [pytest.mark.filterwarnings("ignore")]


def test_quick_rl_recipe_runs_every_stage_and_resumes(tmp_path):
    s = RLSettings(quick=True, out=str(tmp_path / "rl"))
    first: list[str] = []
    result = run_rl(s, echo=first.append)
    game = Path(s.out) / "frozenlake"
    for stage in ("sft", "grpo", "gigpo"):  # one GGUF policy per stage, where the issue asks for them
        assert (game / stage / "policy.gguf").stat().st_size > 1_000_000
    assert result["demos"]["demos"] == 2 and result["demos"]["rejected"] == 0
    assert result["sft"]["validation"]["step"] == 0 and len(result["sft"]["validation"]["successes"]) == 2
    for est in ("grpo", "gigpo"):
        r = result[est]
        assert r["estimator"] == est and r["steps"] == 1 and r["episodes_per_step"] == 2
        assert [p["step"] for p in r["validation"]] == [0, 1]  # before and after its step, on the same 2 seeds
        assert [json.loads(x)["step"] for x in (game / est / "validation.jsonl").read_text().splitlines()] == [0, 1]
        assert not (game / est / "trainer").exists()  # resume checkpoints removed once done
    report = (Path(s.out) / "report.md").read_text()
    assert "## frozenlake" in report and "### grpo per step" in report and "### gigpo per step" in report
    assert "### Validation success" in report and "![reward](frozenlake/report/reward.png)" in report
    assert (game / "report" / "validation.png").stat().st_size > 1000
    assert first[0].startswith("[rl] frozenlake: training with precision=")
    again: list[str] = []
    run_rl(s, echo=again.append)
    assert sum("skipped" in x for x in again) == 4  # demos, sft, grpo, gigpo; the report is rewritten
