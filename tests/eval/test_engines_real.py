"""Every eval engine through the runner on the embedded model (SmolLM2-135M, llama.cpp): one item each,
tiny budgets. Checks that a real backend's completions flow through each engine into rollouts (trajectories
with model segments and token ids, verdicts in rewards), results and the summary; the answers of a 135M
model are not asserted (bench/eval_engines.py measures them)."""

import json

import pytest

from eval.runner import RunConfig, run_eval
from eval.summary import read_results
from tests.conftest import shared_data

GSM8K = "math/gsm8k_test.jsonl"
GAME24 = "puzzles/game24_ranked_1_900.csv"
CASES = {
    "cot": ("gsm8k", GSM8K, dict(settings={"sampling": {"max_tokens": 48}})),
    "tir": ("gsm8k", GSM8K, dict(settings={"sampling": {"max_tokens": 48}})),
    "deepconf": ("gsm8k", GSM8K, dict(settings={"sampling": {"max_tokens": 32}}, samples=2)),
    "lats": ("game24", GAME24, dict(settings={"sampling": {"max_tokens": 32}, "budget": {"tokens": 600, "iterations": 2}})),
    "rap": ("game24", GAME24, dict(settings={"sampling": {"max_tokens": 32}, "iterations": 1, "n_actions": 2})),
}


@pytest.mark.parametrize("engine", list(CASES))
async def test_engine_runs_on_the_embedded_model(embedded_llm, tmp_path, engine):
    task, data, settings = CASES[engine]
    out = tmp_path / engine
    s = await run_eval(RunConfig(task=task, data=str(shared_data(data)), engine=engine, out=str(out), limit=1,
                                 **settings), llm=embedded_llm, progress=False)
    [row] = read_results(out / "results.jsonl")
    assert s["n"] == 1 and s["model"]["class"] == "LlamaCppLLM"
    assert row["completion_tokens"] > 0 and row["prompt_tokens"] > 0 and row["llm_calls"] >= 1
    [rollout] = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    trajs = rollout["trajectories"]
    assert [t["id"] for t in trajs] == row["trajectory_ids"] and rollout["example_id"] == row["id"]
    assert all(t["group_id"] == row["id"] for t in trajs)
    model = [s for t in trajs for s in t["segments"] if s["kind"] == "model"]
    assert model and all(s["token_ids"] for s in model)  # trainable records: every model segment has its ids
    assert {k: rollout["rewards"][k] for k in row["metrics"]} == row["metrics"]  # the row reads the verdicts
    if engine == "deepconf":
        assert len(row["predictions"]) == 2 and "deepconf" in row
        assert all("math_equal" in t["rewards"] for t in trajs)  # each trace's verdict on its own answer
    if engine in ("lats", "rap"):
        assert row["tree"]["feedback"] == "judge" and row["tree"]["nodes"] >= 1
        assert len(rollout["metadata"]["tree"]["nodes"]) == row["tree"]["nodes"]
