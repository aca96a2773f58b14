"""Exports (synth/export.py) and the `agentic synth demos|export` commands, on real demonstrations."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentic_infer.cli import main
from agentic_infer.errors import ConfigError
from agentic_infer.tasks import get_task
from agentic_infer.testing import FakeLLM
from agentic_infer.types import IGNORE_INDEX, Rollout
from synth.demos import DemoOptions, Vocab, build_demos, write_demos
from synth.export import export, export_rows, read_trajectories
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    examples = get_task("hotpotqa").load(shared_data("multihop/hotpotqa_train_100.json"), limit=3)
    result = asyncio.run(build_demos(examples, Vocab(FakeLLM()), DemoOptions(max_variants=2), task="hotpotqa"))
    out = tmp_path_factory.mktemp("demos")
    write_demos(out, result)
    return out


def test_messages_rows_mark_assistant_turns_trainable_and_tools_not(demo_dir):
    trajs = list(read_trajectories(demo_dir))
    rows = export_rows(trajs, "messages")
    assert len(rows) == len(trajs) == 6
    for row, t in zip(rows, trajs):
        roles = [m["role"] for m in row["messages"]]
        assert roles[0] == "user" and roles.count("tool") == len(t.metadata["demo"]["hops"])
        assert all(m["trainable"] == (m["role"] == "assistant") for m in row["messages"])
        tools = [m["content"] for m in row["messages"] if m["role"] == "tool"]
        assert all("<|begin_search_result|>" in c for c in tools)
        assert "\\boxed{" in row["messages"][-1]["content"]


def test_tokenized_rows_are_the_trajectory_ids_with_observations_masked(demo_dir):
    trajs = list(read_trajectories(demo_dir))
    for row, t in zip(export_rows(trajs, "tokenized", append_eos=None), trajs):
        assert row["input_ids"] == t.token_ids() and len(row["labels"]) == len(row["input_ids"])
        trained = [i for i, lab in zip(row["input_ids"], row["labels"]) if lab != IGNORE_INDEX]
        assert trained == [i for s in t.segments if s.kind == "model" for i in s.token_ids]
        assert row["labels"][: len(t.segments[0].token_ids)] == [IGNORE_INDEX] * len(t.segments[0].token_ids)
    t = trajs[0]
    t.token_exact = False
    with pytest.raises(ConfigError, match="token_exact=False"):
        export_rows([t], "tokenized", append_eos=None)
    assert export_rows([t], "tokenized", allow_inexact=True, append_eos=None)[0]["input_ids"] == t.token_ids()


def test_tokenized_rows_end_finished_answers_with_a_trained_eos_by_default(demo_dir):
    trajs = list(read_trajectories(demo_dir))
    assert {t.finish_reason for t in trajs} == {"answer"}
    for row, t in zip(export_rows(trajs, "tokenized", eos_token_id=255), trajs):  # the policy of `agentic train sft`
        assert row["input_ids"] == t.token_ids() + [255] and row["labels"][-1] == 255
    with pytest.raises(ConfigError, match="needs eos_token_id"):
        export_rows(trajs, "tokenized")


def test_verl_parquet_schemas(demo_dir, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    stats = export(demo_dir, "verl-rl", tmp_path / "rl.parquet")
    table = pq.read_table(tmp_path / "rl.parquet")
    assert stats["rows"] == 3 and table.num_rows == 3  # one row per question
    assert set(table.column_names) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    row = table.to_pylist()[0]
    assert row["prompt"][0]["role"] == "user" and "Question:" in row["prompt"][0]["content"]
    assert row["reward_model"]["style"] == "rule" and row["reward_model"]["ground_truth"]["target"]
    assert row["data_source"] == "hotpotqa" and row["extra_info"]["index"] == 0
    export(demo_dir, "verl-sft", tmp_path / "sft.parquet")
    sft = pq.read_table(tmp_path / "sft.parquet").to_pylist()
    assert len(sft) == 6 and {m["role"] for m in sft[0]["messages"]} == {"user", "assistant", "tool"}
    with pytest.raises(ConfigError, match="exists"):
        export(demo_dir, "verl-sft", tmp_path / "sft.parquet")


def test_rollout_lines_are_read_too(demo_dir, tmp_path):
    trajs = list(read_trajectories(demo_dir))
    path = tmp_path / "rollouts.jsonl"
    path.write_text(Rollout("q", trajectories=trajs[:2]).to_json() + "\n")
    assert [t.id for t in read_trajectories(path)] == [t.id for t in trajs[:2]]
    with pytest.raises(ConfigError, match="choose one of"):
        export_rows(trajs, "alpaca")


def test_cli_demos_then_export(tmp_path, capsys):
    data = shared_data("multihop/musique_train_100.json")
    out = tmp_path / "d"
    with pytest.raises(SystemExit) as e:
        main(["synth", "demos", "--task", "musique", "--data", str(data), "--limit", "3", "--out", str(out),
              "--k", "3", "--variants", "2"])
    assert e.value.code == 0
    stats = json.loads((out / "stats.json").read_text())
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert stats["kept"] == len(lines) >= 4 and stats["demos_per_min"] > 0
    with pytest.raises(SystemExit) as e:  # the old spelling of documents per search names the new one
        main(["synth", "demos", "--task", "musique", "--data", str(data), "--out", str(tmp_path / "o"), "--top-k", "3"])
    assert e.value.code == 2 and "--top-k was removed: use --k" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["synth", "export", "--in", str(out), "--format", "tokenized", "--out", str(out / "sft.jsonl")])
    assert e.value.code == 0 and len((out / "sft.jsonl").read_text().splitlines()) == len(lines)
    exported = json.loads((out / "stats.json").read_text())["exports"][0]
    assert exported["rows"] == len(lines) and exported["append_eos"] == "finished"
    eos = exported["eos_token_id"]  # the default tokenizer's end of turn (<|im_end|>), trained after each answer
    assert all(json.loads(r)["labels"][-1] == eos for r in (out / "sft.jsonl").read_text().splitlines())
    # bad input: one line, exit 2, nothing already written is lost
    before = (out / "trajectories.jsonl").read_text()
    capsys.readouterr()
    for argv in (["synth", "demos", "--task", "musique", "--data", str(data), "--out", str(out)],
                 ["synth", "demos", "--task", "nope", "--data", str(data), "--out", str(tmp_path / "x")],
                 ["synth", "export", "--in", str(out), "--format", "alpaca", "--out", str(tmp_path / "y.jsonl")],
                 ["synth", "export", "--in", str(tmp_path / "missing"), "--format", "messages", "--out",
                  str(tmp_path / "z.jsonl")]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        errors = [ln for ln in err.splitlines() if not ln.startswith("llama_context")]  # llama.cpp's own noise
        assert len(errors) == 1 and errors[0].startswith("error:")
    assert (out / "trajectories.jsonl").read_text() == before


def test_every_exported_row_carries_its_lineage(demo_dir, tmp_path):
    """The demonstration's provenance (source question, engine, operator, verdict) rides on every row a trainer
    reads, and `agentic train sft` summarises it (agentic_infer.lineage.file_lineage)."""
    import json as _json

    from agentic_infer.lineage import file_lineage

    trajs = list(read_trajectories(demo_dir))
    for fmt in ("messages", "tokenized"):
        for row, t in zip(export_rows(trajs, fmt, append_eos=None), trajs):
            lin = row["metadata"]["lineage"]
            assert lin["source"] == t.group_id and lin["operator"] == "gold_demo" and lin["filter"] == "verified"
            assert lin["engine"] == "search-o1/scripted" and lin["variant"] == t.metadata["demo"]["variant"]
    export(demo_dir, "tokenized", tmp_path / "sft.jsonl", eos_token_id=255)
    summary = file_lineage(tmp_path / "sft.jsonl")
    assert summary["rows"] == summary["rows_with_lineage"] == 6 and summary["by_operator"] == {"gold_demo": 6}
    assert summary["sources"] == 3
    pq = pytest.importorskip("pyarrow.parquet")
    export(demo_dir, "verl-sft", tmp_path / "sft.parquet")
    row = pq.read_table(tmp_path / "sft.parquet").to_pylist()[0]
    assert _json.loads(row["extra_info"]["lineage"])["operator"] == "gold_demo"
    export(demo_dir, "verl-rl", tmp_path / "rl.parquet")  # an RL prompt set names its questions' origins too
    rl = pq.read_table(tmp_path / "rl.parquet").to_pylist()
    assert [_json.loads(r["extra_info"]["lineage"])["source"] for r in rl] == list(dict.fromkeys(t.group_id for t in trajs))
