"""Masks from trajectories: ids as recorded, trainable EOS option, truncation cutting the tool mask."""

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.types import IGNORE_INDEX, TokenLogprob, Trajectory
from train.core.masks import completion_view, pad_completions, sft_row


def _lp(ids, base=-0.1):
    return [TokenLogprob(i, str(i), base * (k + 1)) for k, i in enumerate(ids)]


def make_traj(finish="answer", stop_reason=None, exact=True):
    t = Trajectory(token_exact=exact)
    t.add("prompt", "P", token_ids=[1, 2])
    t.add("model", "ab", token_ids=[3, 4], logprobs=_lp([3, 4]))
    t.add("observation", "obs", token_ids=[5, 6])
    t.add("model", "c", token_ids=[7], logprobs=_lp([7], -0.5), stop_reason=stop_reason)
    t.finish(finish)
    return t


def test_view_reads_recorded_ids_and_masks_observations():
    v = completion_view(make_traj())
    assert v.prompt_ids == [1, 2]
    assert v.completion_ids == [3, 4, 5, 6, 7]
    assert v.env_mask == [1, 1, 0, 0, 1]
    assert v.logprobs == pytest.approx([-0.1, -0.2, 0.0, 0.0, -0.5])
    assert v.segment_index == [1, 1, 2, 2, 3]
    assert not v.eos_appended and not v.truncated


def test_eos_appended_as_trainable_token_only_when_asked_and_finished():
    assert completion_view(make_traj(), eos_token_id=99).completion_ids[-1] == 7  # default: never
    v = completion_view(make_traj(), eos_token_id=99, append_eos="eos")
    assert v.completion_ids[-1] == 99 and v.env_mask[-1] == 1 and v.logprobs[-1] == 0.0 and v.eos_appended
    # stopped on a stop string: "eos" leaves it, "finished" appends
    assert not completion_view(make_traj(stop_reason="</answer>"), eos_token_id=99, append_eos="eos").eos_appended
    assert completion_view(make_traj(stop_reason="</answer>"), eos_token_id=99, append_eos="finished").eos_appended
    # a truncated generation did not end its turn
    assert not completion_view(make_traj(finish="length"), eos_token_id=99, append_eos="finished").eos_appended
    with pytest.raises(ConfigError, match="eos_token_id"):
        completion_view(make_traj(), append_eos="eos")


def test_truncation_cuts_ids_logprobs_and_tool_mask_together():
    v = completion_view(make_traj(), eos_token_id=99, append_eos="eos", max_completion_length=3)
    assert v.completion_ids == [3, 4, 5] and v.env_mask == [1, 1, 0] and len(v.logprobs) == 3
    assert v.truncated and not v.eos_appended
    assert completion_view(make_traj(), max_completion_length=5).truncated is False


def test_sft_row_labels_and_eos():
    row = sft_row(make_traj(), eos_token_id=99, append_eos="eos")
    assert row["input_ids"] == [1, 2, 3, 4, 5, 6, 7, 99]
    assert row["labels"] == [IGNORE_INDEX, IGNORE_INDEX, 3, 4, IGNORE_INDEX, IGNORE_INDEX, 7, 99]
    assert sft_row(make_traj(), max_length=4)["labels"] == [IGNORE_INDEX, IGNORE_INDEX, 3, 4]


def test_inexact_refused_unless_allowed():
    with pytest.raises(ConfigError, match="token_exact"):
        completion_view(make_traj(exact=False))
    assert completion_view(make_traj(exact=False), allow_inexact=True).completion_ids


def test_pad_completions():
    a = completion_view(make_traj())
    b = completion_view(make_traj(), max_completion_length=2)
    batch = pad_completions([a, b], pad_token_id=0, advantages=[[1.0] * 5, [2.0] * 2])
    assert batch["completion_ids"].tolist() == [[3, 4, 5, 6, 7], [3, 4, 0, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1] * 5, [1, 1, 0, 0, 0]]
    assert batch["loss_mask"].tolist() == [[1, 1, 0, 0, 1], [1, 1, 0, 0, 0]]
    assert batch["advantages"][1].tolist() == [2.0, 2.0, 0, 0, 0]
