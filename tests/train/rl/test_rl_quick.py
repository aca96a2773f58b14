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
    heldout_runs_with_the_trained_agent(s)
    arpo_stage_branches_env_episodes(s)


def heldout_runs_with_the_trained_agent(s: RLSettings) -> None:
    """`make rl-eval`'s script on the quick policies: each eval run's env agent has the settings the recipe
    trained with (the eval defaults differ: 512 tokens a turn, 15 turns, JSON schemas), two policies at once."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    command = [sys.executable, str(root / "bench" / "rl_heldout.py"), "--out", s.out, "--seeds", "2",
               "--policies", "sft,grpo", "--jobs", "2"]
    subprocess.run(command, check=True, cwd=root)
    folder = Path(s.out) / "frozenlake" / "heldout"
    first = json.loads((folder / "summary.json").read_text())["policies"]
    subprocess.run(command, check=True, cwd=root)  # a rerun resumes finished evals: per-episode figures stay
    again = json.loads((folder / "summary.json").read_text())["policies"]
    for name in ("sft", "grpo"):
        assert again[name]["s_per_episode"] == first[name]["s_per_episode"] > 0
        assert again[name]["calls_per_episode"] == first[name]["calls_per_episode"]
    quick = s.effective()
    for name in ("sft", "grpo"):
        cfg = json.loads((folder / name / "run.json").read_text())["engine_config"]
        assert (cfg["max_calls"], cfg["max_tokens_per_turn"], cfg["max_turns"], cfg["tool_schemas"]) == \
            (quick.max_calls, quick.turn_tokens, quick.max_calls + 2, "compact")
        assert len((folder / name / "results.jsonl").read_text().splitlines()) == 2
        rollout = json.loads((folder / name / "rollouts.jsonl").read_text().splitlines()[0])
        prompt = rollout["trajectories"][0]["segments"][0]
        assert prompt["kind"] == "prompt" and "\nGoal: " in prompt["text"]  # the board view the recipe trained on
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["jobs"] == 2 and set(summary["policies"]) == {"sft", "grpo"} and "grpo - sft" in summary["paired"]



def arpo_stage_branches_env_episodes(s: RLSettings) -> None:
    """`estimators=arpo` on the same SFT stage (skipped): each group is ARPO's branched rollout over the game
    (branches fork the env), trained with the arpo estimator; the curve logs the share of branch episodes,
    which only a branched rollout writes."""
    from dataclasses import replace

    log: list[str] = []
    result = run_rl(replace(s, estimators=("arpo",)), echo=log.append)
    assert sum("skipped" in x for x in log) == 2  # demos, sft
    r = result["arpo"]
    assert r["estimator"] == "arpo" and r["steps"] == 1 and r["episodes_per_step"] == 2
    assert [c["diag/branch_share"] for c in r["curve"]] and all(0 <= c["diag/branch_share"] <= 0.5 for c in r["curve"])
    assert (Path(s.out) / "frozenlake" / "arpo" / "policy.gguf").stat().st_size > 1_000_000
    assert "### arpo per step" in (Path(s.out) / "report.md").read_text()
