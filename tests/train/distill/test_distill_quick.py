"""`agentic train distill --quick`: the whole recipe on a few questions, then a rerun that skips every stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train.distill import STAGES, DistillSettings, run_distill

pytestmark = [pytest.mark.filterwarnings("ignore")]


def changed_tensors(a: Path, b: Path) -> list[str]:
    """Names of the tensors that differ between two HF checkpoints."""
    from safetensors.torch import load_file

    x, y = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert x.keys() == y.keys()
    return [k for k in x if not (x[k] == y[k]).all()]


def test_quick_recipe_runs_every_stage_and_resumes(tmp_path):
    s = DistillSettings(quick=True, out=str(tmp_path / "d"))
    if not Path(s.data_dir).is_dir():
        pytest.skip("shared multihop data not present")
    first: list[str] = []
    result = run_distill(s, echo=first.append)
    out = Path(s.out)
    assert (out / "policy.gguf").stat().st_size > 1_000_000
    assert (out / "sft" / "model" / "policy.gguf").stat().st_size > 1_000_000  # the SFT-only policy
    assert result["sft"]["steps"] == 2 and result["grpo"]["steps"] == 1
    assert result["data"]["dev_overlap_dropped"] == 0 and result["filter"]["dropped"]["not_plain_prompt"] == 0
    assert result["data"]["rejection_sampling"]["samples"] == 1  # the base itself was sampled
    expert = result["expert"]  # expert iteration sampled the SFT policy; it retrains only on a correct sample
    assert expert["sampling"]["samples"] == 1 and expert["policy_sampled"].endswith("sft/model/policy.gguf")
    assert expert["trained"] == (expert["rows"] > 0) == (out / "expert" / "model" / "policy.gguf").is_file()
    assert first[0].startswith("[distill] training with precision=")  # resolved once, printed first
    precision = result["sft"]["precision"]
    assert precision == result["grpo"]["precision"] and precision.split()[0] in ("fp32", "bf16")
    report = (out / "report.md").read_text()
    assert f"full, precision {precision}" in report and f"precision {precision}; rollouts" in report
    assert "| sft |" in report and "## GRPO (per step)" in report and "## SFT loss" in report
    assert "| expert |" in report and "sampled the SFT policy 1 times" in report
    assert "![sft_loss](report/sft_loss.png)" in report and (out / "report" / "grpo.png").stat().st_size > 1000
    for stage in STAGES:
        assert json.loads((out / stage / "done.json").read_text())["config_hash"]
    # the GRPO step moves the weights exactly when a group had reward variance (else every advantage is 0,
    # and so is the gradient: Adam without weight decay leaves the weights as they were)
    [step] = result["grpo"]["curve"]
    signal = step["diag/zero_std_share"] < 1.0
    # EM is logged for the collapse watch but not trained on: the reward is format + F1 alone
    assert step["reward"] == pytest.approx(step["rewards/format/mean"] + step["rewards/f1/mean"])
    assert "rewards/em/mean" in step and "| EM |" in report
    assert bool(changed_tensors(out / "sft" / "model", out / "grpo" / "model")) == signal
    assert signal or (step["loss"] == 0.0 and step["grad_norm"] == 0.0)
    assert first[-1].endswith(f"{out / 'policy.gguf'}  report: {out / 'report.md'}")
    mtime = (out / "sft" / "model" / "model.safetensors").stat().st_mtime
    again: list[str] = []
    run_distill(s, echo=again.append)
    skipped = [x for x in again if "skipped" in x]
    assert len(skipped) == len(STAGES) - 1  # the report is rewritten
    assert (out / "sft" / "model" / "model.safetensors").stat().st_mtime == mtime


@pytest.mark.slow
def test_quick_atom_recipe_trains_grpo_on_the_atr_schedule(tmp_path):
    """`demos=atom grpo_atr=atoms`: the policy is trained on atomic-thought demonstrations and its GRPO step's
    reward is format + λ(0)·ATR + (1 − λ(0))·F1 with λ(0) = 0.5 (the ATR and F1 logged alone at weight 0)."""
    s = DistillSettings(quick=True, out=str(tmp_path / "d"), demos="atom", grpo_atr="atoms", expert_questions=0)
    if not Path(s.data_dir).is_dir():
        pytest.skip("shared multihop data not present")
    result = run_distill(s)
    assert result["filter"]["rows"] >= 1 and result["sft"]["steps"] == 2
    [step] = result["grpo"]["curve"]
    mixed = 0.5 * step["rewards/atr/mean"] + 0.5 * step["rewards/f1/mean"]
    assert step["rewards/atr_f1/mean"] == pytest.approx(mixed)
    assert step["reward"] == pytest.approx(step["rewards/format/mean"] + step["rewards/atr_f1/mean"])
    assert "| ATR |" in (Path(s.out) / "report.md").read_text()
