"""Lineage of RL prompt data: a QA row's origin is read wherever a synth step put it, a policy's lineage file is found
from a backend URI, and verl RL rows carry it."""

from __future__ import annotations

import json

from agentic_infer.lineage import file_lineage, read_policy_lineage, record_lineage

FUZZED = {"source": "seed-3", "engine": "fuzzqa", "operator": "add_hop", "gates": {"leak": True, "solvable": True}}


def test_a_fuzzqa_row_keeps_its_lineage_on_top_and_a_file_summary_counts_it(tmp_path):
    data = tmp_path / "qa.jsonl"
    rows = [{"question": "q1", "answer": "a", "lineage": FUZZED},
            {"question": "q2", "answer": "b", "metadata": {"lineage": {"source": "q2", "operator": "gold_demo"}}},
            {"question": "q3", "answer": "c"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert record_lineage(rows[0]) == FUZZED and record_lineage(rows[2]) is None
    summary = file_lineage(data)
    assert summary["rows"] == 3 and summary["rows_with_lineage"] == 2 and summary["sources"] == 2
    assert summary["by_operator"] == {"add_hop": 1, "gold_demo": 1} and len(summary["sha256"]) == 64


def test_a_policys_lineage_is_found_from_its_backend_uri(tmp_path, monkeypatch):
    (tmp_path / "policy.gguf").write_bytes(b"GGUF")
    (tmp_path / "lineage.json").write_text(json.dumps({"trained_by": "agentic train sft"}))
    for name in (tmp_path, tmp_path / "policy.gguf", f"hf://{tmp_path}", f"llamacpp://{tmp_path / 'policy.gguf'}"):
        assert read_policy_lineage(name) == {"trained_by": "agentic train sft"}
    monkeypatch.chdir(tmp_path)  # a lineage.json in the working directory is no one's for a name that is no file
    assert read_policy_lineage("llamacpp://default") is None


def test_verl_rl_rows_carry_the_questions_lineage():
    from train.verl_export import verl_rows

    rows = verl_rows([{"question": "q1", "answer": "a", "lineage": FUZZED}, {"question": "q2", "answer": "b"}],
                     data_source="fuzzqa")
    assert json.loads(rows[0]["extra_info"]["lineage"]) == FUZZED and "lineage" not in rows[1]["extra_info"]
