"""One SFT view: synth's tokenized export and train's SFT data reader emit the same rows for the same trajectory
and settings (both build them with `agentic_infer.views.sft_row`), with the end-of-turn token trained when the
policy (`append_eos`) says so."""

from __future__ import annotations

import json

import pytest

from agentic_infer.types import IGNORE_INDEX


@pytest.mark.parametrize("append_eos", ["finished", "eos", None])
def test_synth_export_and_train_sft_emit_identical_rows(tmp_path, tokenizer, traj_factory, append_eos):
    from synth.export import export
    from train.sft import SFTSettings, read_sft_data

    finished = traj_factory("Capital of France?", [("model", "Let me search."), ("observation", " <r>Paris</r> "),
                                                   ("model", "\\boxed{Paris}")])
    finished.segments[-1].metadata["stop_reason"] = "</answer>"  # stopped on a stop string, not on EOS
    cut = traj_factory("Capital of Italy?", [("model", "Let me think about it")], finish="length")
    src = tmp_path / "trajectories.jsonl"
    src.write_text("".join(t.to_json() + "\n" for t in (finished, cut)), encoding="utf-8")
    max_length = SFTSettings().max_length

    export(src, "tokenized", tmp_path / "sft.jsonl", append_eos=append_eos, eos_token_id=tokenizer.eos_token_id,
           max_length=max_length)
    exported = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    trained, kind = read_sft_data(src, tokenizer, max_length=max_length, append_eos=append_eos)
    assert kind == "tokens"
    keys = ("input_ids", "labels", "attention_mask")
    assert [{k: r[k] for k in keys} for r in exported] == [{k: r[k] for k in keys} for r in trained]

    eos = tokenizer.eos_token_id
    ids = finished.token_ids()
    model_ids = [i for s in finished.segments if s.kind == "model" for i in s.token_ids]
    # "finished": any answer ends with a trained EOS; "eos": only one that stopped on EOS (this one did not)
    tail = [eos] if append_eos == "finished" else []
    assert exported[0]["input_ids"] == ids + tail
    assert [x for x in exported[0]["labels"] if x != IGNORE_INDEX] == model_ids + tail
    assert exported[1]["input_ids"] == cut.token_ids()  # a cut-off generation never gets an EOS


def test_train_sft_default_policy_is_the_exports_default():
    from agentic_infer.views import DEFAULT_APPEND_EOS
    from train.sft import SFTSettings

    assert SFTSettings().append_eos == DEFAULT_APPEND_EOS == "finished"
