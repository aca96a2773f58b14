"""End to end on the shared HotpotQA train file with the embedded model: rollouts -> judge -> filters -> JSONL."""

import json

import pytest

from agentic_infer.config import build_config
from agentic_infer.types import Trajectory
from synth.pipeline import PipelineConfig, run_pipeline
from tests.conftest import shared_data


@pytest.mark.slow
def test_hotpotqa_embedded_pipeline(tmp_path):
    pytest.importorskip("llama_cpp")
    data = shared_data("multihop/hotpotqa_train_100.json")
    out = tmp_path / "o"
    cfg = build_config(PipelineConfig, overrides={
        "out": str(out), "reader": {"kind": "task", "task": "hotpotqa", "path": str(data), "limit": 2},
        "rollout": {"engine": "direct", "backend": "llamacpp://default", "samples": 2, "settings": {"sampling": {"max_tokens": 12}},
                    "temperature": 0.7, "concurrency": 2},
        "judge": {"metrics": ["em", "f1"]},
        "filters": ["length:max_tokens=12", "format", "exact_dedup"]})
    stats = run_pipeline(cfg)
    by = {s["step"]: s for s in stats["steps"]}
    assert by["rollout:direct"]["in"] == 2 and by["rollout:direct"]["out"] == 4
    assert by["judge"]["in"] == 4
    kept = [Trajectory.from_json(x) for f in (out / "trajectories").glob("*.jsonl") for x in f.read_text().splitlines()]
    dropped = sum(sum(s["dropped"].values()) for s in stats["steps"])
    assert len(kept) + dropped == 4 == stats["steps"][2]["out"]
    for t in kept:
        assert {"em", "f1"} <= set(t.rewards) and t.token_exact and t.group_id
    for f in (out / "dropped").glob("*/*.jsonl"):
        for line in f.read_text().splitlines():
            assert json.loads(line)["reason"]
