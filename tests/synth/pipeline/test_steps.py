"""Each step alone (readers, rollout, judge, filter + exclusion file, writers), the config, and stats.json."""

import json

import pytest

from agentic_infer.config import build_config
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Trajectory
from synth.pipeline import FilterStep, JudgeStep, PipelineConfig, Reader, RolloutStep, run_pipeline
from synth.pipeline.records import doc_trajectory, trajectory_doc


def test_readers_task_jsonl_parquet_hf_and_sharding(tmp_path, nq_file):
    docs = list(Reader(kind="task", task="nq-open", path=str(nq_file))())
    assert len(docs) == 6 and docs[0].metadata["example"]["gold"] == ["a0"]
    assert [d.text for d in Reader(kind="jsonl", path=str(nq_file))()] == [d.text for d in docs]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"problem": ["1+1?", "2+2?"], "answer": ["2", "4"]}), tmp_path / "m.parquet")
    rows = [d.metadata["example"] for d in Reader(kind="parquet", path=str(tmp_path / "m.parquet"))()]
    assert rows[1]["question"] == "2+2?" and rows[1]["gold"] == ["4"]
    assert len(list(Reader(kind="hf", path=str(nq_file), limit=2)())) == 2
    shards = [[d.id for d in Reader(kind="task", task="nq-open", path=str(nq_file)).run(None, r, 2)] for r in (0, 1)]
    assert sorted(shards[0] + shards[1]) == sorted(d.id for d in docs) and not set(shards[0]) & set(shards[1])


def test_reader_errors_name_the_field(tmp_path, nq_file):
    with pytest.raises(ConfigError, match="reader.path="):
        Reader(kind="jsonl", path=str(tmp_path / "missing.jsonl"))
    with pytest.raises(ConfigError, match="reader.kind="):
        Reader(kind="csvv", path=str(nq_file))
    (tmp_path / "bad.jsonl").write_text('{"prompt": "x"}\n')
    with pytest.raises(ConfigError, match="no 'question' field.*reader.fields"):
        list(Reader(kind="jsonl", path=str(tmp_path / "bad.jsonl"))())


def test_rollout_judge_filter_steps(tmp_path, nq_file):
    docs = Reader(kind="task", task="nq-open", path=str(nq_file), limit=2)()
    step = RolloutStep(engine="direct", backend="fake://", task="nq-open", samples=3, settings={"sampling": {"max_tokens": 16, "temperature": 0.7}},
                       make_llm=lambda: FakeLLM(lambda p: "\\boxed{a0}"), cache_path=str(tmp_path / "c.sqlite3"))
    out = list(JudgeStep(metrics=("em",))(step(docs)))
    assert len(out) == 6
    trajs = [doc_trajectory(d) for d in out]
    assert {t.group_id for t in trajs} == {"nq-open-1", "nq-open-2"}
    assert sorted(t.rewards["em"] for t in trajs) == [0, 0, 0, 1, 1, 1]
    assert step.stats["backend_calls"].total == 6 and step.stats["forwarded"].total == 6
    f = FilterStep("correct", exclusion_folder=str(tmp_path / "dropped"), label="f:correct")
    kept = list(f(iter(out)))
    assert len(kept) == 3 and f.stats["dropped_incorrect:em"].total == 3
    dropped = [json.loads(x) for x in (tmp_path / "dropped" / "f_correct" / "00000.jsonl").read_text().splitlines()]
    assert [d["reason"] for d in dropped] == ["incorrect:em"] * 3
    assert Trajectory.from_dict(dropped[0]["record"]).rewards["em"] == 0


def test_group_filter_sees_whole_groups(tmp_path):
    docs = []
    for g, rs in (("g1", (1, 1)), ("g2", (1, 0))):
        for i, r in enumerate(rs):
            docs.append(trajectory_doc(Trajectory(group_id=g, rewards={"em": r}), sample=i, group_size=2))
    kept = list(FilterStep("all_equal")(iter(docs)))
    assert [doc_trajectory(d).group_id for d in kept] == ["g2", "g2"]


def test_config_errors_and_unknown_fields(tmp_path, nq_file):
    with pytest.raises(ConfigError, match="unknown setting 'rollout.sampels'"):
        build_config(PipelineConfig, overrides={"out": "x", "rollout": {"sampels": 2}})
    with pytest.raises(ConfigError, match="has no option"):
        build_config(PipelineConfig, overrides={"out": "x", "filters": ["length:max=3"]})
    with pytest.raises(ConfigError, match="out: missing"):
        build_config(PipelineConfig)
    with pytest.raises(ConfigError, match="unknown engine"):
        RolloutStep(engine="nope", backend="fake://", task="nq-open")
    cfg = build_config(PipelineConfig, overrides={"out": str(tmp_path / "o"), "reader": {"kind": "jsonl",
                                                  "path": str(nq_file)}, "filters": ["correct"]})
    with pytest.raises(ConfigError, match="add a rollout step"):
        run_pipeline(cfg)
    assert not (tmp_path / "o").exists()  # nothing written before validation passed


def test_run_writes_stats_card_parquet_dataset(tmp_path, nq_file):
    out = tmp_path / "o"
    cfg = build_config(PipelineConfig, overrides={
        "out": str(out), "reader": {"kind": "task", "task": "nq-open", "path": str(nq_file)},
        "rollout": {"engine": "direct", "backend": "fake://?reply=\\boxed{a1}", "samples": 2, "settings": {"sampling": {"max_tokens": 16}}},
        "judge": {"metrics": ["em"]}, "filters": ["correct", "exact_dedup"],
        "writer": {"parquet": True, "save_to_disk": True}})
    stats = run_pipeline(cfg)
    saved = json.loads((out / "stats.json").read_text())
    assert saved == stats
    by = {s["step"]: s for s in saved["steps"]}
    assert by["rollout:direct"]["in"] == 6 and by["rollout:direct"]["out"] == 12
    assert by["rollout:direct"]["llm_calls"] == 12 and by["rollout:direct"]["completion_tokens"] > 0
    assert by["filter0:correct"]["dropped"] == {"incorrect:em": 8}
    assert by["filter1:exact_dedup"]["dropped"] == {"exact_duplicate": 2}
    assert saved["records"] == 2
    card = (out / "README.md").read_text()
    assert "filter0:correct" in card and '"group_id"' in card.split("## Sample", 1)[1]  # a record as the sample
    import datasets

    assert len(datasets.load_from_disk(str(out / "dataset"))) == 2
    assert list((out / "parquet").glob("*.parquet"))
