"""Core records: validation messages, loss masks, lossless JSON round-trip, datasets conversion."""

import json
import math

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.types import (
    IGNORE_INDEX,
    Completion,
    Message,
    Rollout,
    SamplingParams,
    Segment,
    Step,
    TokenLogprob,
    TopLogprob,
    Trajectory,
    Usage,
    dataset_to_trajectories,
    trajectories_to_dataset,
)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"temperature": -1}, "SamplingParams.temperature=-1"),
        ({"temperature": math.nan}, "temperature=nan"),
        ({"max_tokens": 0}, "max_tokens=0"),
        ({"top_p": 0}, "top_p=0"),
        ({"top_p": 1.5}, "top_p=1.5"),
        ({"top_k": -2}, "top_k=-2"),
        ({"n": 0}, "n=0"),
        ({"logprobs": 21}, "logprobs=21"),
        ({"logprobs": -1}, "logprobs=-1"),
        ({"stop": ["ok", ""]}, "stop="),
        ({"seed": 1.5}, "seed=1.5"),
        ({"repetition_penalty": 0}, "repetition_penalty=0"),
    ],
)
def test_sampling_params_validation_names_parameter_value_and_fix(kwargs, needle):
    with pytest.raises(ConfigError) as e:
        SamplingParams(**kwargs)
    msg = str(e.value)
    assert needle in msg
    assert ";" in msg  # the fix follows the rule


def test_sampling_params_normalises_stop_and_replace_revalidates():
    p = SamplingParams(stop="</q>")
    assert p.stop == ("</q>",)
    assert p.replace(n=3).n == 3
    with pytest.raises(ConfigError):
        p.replace(n=0)
    assert SamplingParams(temperature=0).greedy


def test_other_records_validate():
    with pytest.raises(ConfigError, match="Segment.kind='tool'"):
        Segment("tool", "x")
    with pytest.raises(ConfigError, match="Message.role='bot'"):
        Message("bot", "x")
    with pytest.raises(ConfigError, match="finish_reason='eos'"):
        Completion("x", finish_reason="eos")
    with pytest.raises(ConfigError, match="one entry per token id"):
        Segment("model", "ab", token_ids=[1, 2], logprobs=[TokenLogprob(1, "a", -0.1)])


def _trajectory() -> Trajectory:
    t = Trajectory(engine="search-o1", config={"top_k": 10}, example={"question": "q?"})
    t.add("prompt", "<|im_start|>user\nq?<|im_end|>\n", token_ids=[1, 2, 3])
    lp = [TokenLogprob(7, "I", -0.25, (TopLogprob("I", -0.25, 7), TopLogprob("We", -1.5, 8))),
          TokenLogprob(9, " search", -0.5)]
    t.add("model", "I search", token_ids=[7, 9], logprobs=lp)
    t.add("observation", "\n<docs>\n", token_ids=[4, 5, 6], source="retriever")
    t.add("model", " done", token_ids=[10])
    t.steps.append(Step("search", {"query": "q"}, observation="docs", state="h1", reward=0.5, segment=1))
    t.answer = "42"
    t.rewards = {"em": 1.0}
    t.usage = Usage(prompt_tokens=3, completion_tokens=3, llm_calls=2, tool_calls=1, wall_s=0.5)
    t.finish("answer")
    t.token_exact, t.group_id = True, "ex1"
    t.parent_id, t.branch_token = "p0", 4
    return t


def test_loss_mask_follows_segment_kinds():
    t = _trajectory()
    assert t.token_ids() == [1, 2, 3, 7, 9, 4, 5, 6, 10]
    assert t.loss_mask() == [0, 0, 0, 1, 1, 0, 0, 0, 1]
    assert [s.trainable for s in t.segments] == [False, True, False, True]


def test_loss_mask_needs_token_ids_and_tokenize_fills_them():
    t = Trajectory()
    t.add("prompt", "ab")
    t.add("model", "c")
    with pytest.raises(ConfigError, match="tokenize"):
        t.loss_mask()

    class Bytes:
        def encode(self, text):
            return list(text.encode())

    t.token_exact = True
    assert t.tokenize(Bytes()).loss_mask() == [0, 0, 1]
    assert t.token_exact is False  # re-encoded ids are not what the model saw


def test_trainer_views():
    t = _trajectory()
    assert t.trl_rollout() == {"prompt_ids": [1, 2, 3], "completion_ids": [7, 9, 4, 5, 6, 10],
                               "logprobs": [-0.25, -0.5, 0.0, 0.0, 0.0, 0.0], "env_mask": [1, 1, 0, 0, 0, 1]}
    row = t.sft_row()
    assert row["input_ids"] == [1, 2, 3, 7, 9, 4, 5, 6, 10]
    assert row["labels"] == [IGNORE_INDEX] * 3 + [7, 9] + [IGNORE_INDEX] * 3 + [10]
    assert row["attention_mask"] == [1] * 9
    assert t.sft_row(max_length=4)["labels"] == [IGNORE_INDEX] * 3 + [7]
    assert t.token_span(t.steps[0].segment) == (3, 5)  # the step's action tokens
    assert t.chat_messages() == [{"role": "user", "content": "<|im_start|>user\nq?<|im_end|>\n"},
                                 {"role": "assistant", "content": "I search"},
                                 {"role": "tool", "content": "\n<docs>\n"},
                                 {"role": "assistant", "content": " done"}]
    t.segments[0].metadata["messages"] = [{"role": "system", "content": "s"}, {"role": "user", "content": "q?"}]
    t.segments.insert(1, Segment("prompt", "Let me ", [11], metadata={"forced": True}))
    assert t.chat_messages()[:3] == [{"role": "system", "content": "s"}, {"role": "user", "content": "q?"},
                                     {"role": "assistant", "content": "Let me I search"}]
    assert t.trl_rollout()["prompt_ids"] == [1, 2, 3, 11]  # forced text is prompt: never trained
    t.token_exact = False
    with pytest.raises(ConfigError, match="token_exact=False.*allow_inexact=True"):
        t.trl_rollout()
    with pytest.raises(ConfigError, match="token_exact=False"):
        t.sft_row()
    assert t.sft_row(allow_inexact=True)["input_ids"][:3] == [1, 2, 3]


def test_entropies_from_top_k():
    seg = _trajectory().segments[1]
    assert seg.entropies() is None  # the second token has no alternatives
    seg.logprobs[1] = TokenLogprob(9, " search", -0.5, (TopLogprob("a", -0.6931, 9), TopLogprob("b", -0.6931, 3)))
    h = seg.entropies()
    assert abs(h[1] - 0.6931) < 1e-3 and 0 < h[0] < h[1]


def test_finish_vocabulary_and_rollout_round_trip():
    with pytest.raises(ConfigError, match="finish_reason='stop'"):
        Trajectory(finish_reason="stop")
    with pytest.raises(ConfigError, match="finish_reason='done'"):
        Trajectory().finish("done")
    r = Rollout(example_id="ex1", trajectories=[_trajectory(), Trajectory()], answer="42", rewards={"em": 1.0},
                engine="x", chosen=0, metadata={"k": [1]})
    assert [t.group_id for t in r.trajectories] == ["ex1", "ex1"]
    back = Rollout.from_json(r.to_json())
    assert back == r and back.trajectory == r.trajectories[0] and back.text == "I search\n<docs>\n done"
    assert Rollout("v", trajectories=[Trajectory()], chosen=None).trajectory is None
    with pytest.raises(ConfigError, match="Rollout.chosen=2"):
        Rollout("e", trajectories=[Trajectory()], chosen=2)


def test_json_round_trip_is_lossless():
    t = _trajectory()
    back = Trajectory.from_json(t.to_json())
    assert back == t
    assert back.to_dict() == json.loads(t.to_json())
    assert back.segments[1].logprobs[0].top[1] == TopLogprob("We", -1.5, 8)


def test_completion_round_trip():
    c = Completion("hi", [1, 2], [TokenLogprob(1, "h", -0.1), TokenLogprob(2, "i", -0.2)], "stop", "</q>", 5)
    assert Completion.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert c.num_tokens == 2


def test_dataset_conversion_round_trips():
    trajs = [_trajectory(), _trajectory()]
    trajs[1].answer = None
    ds = trajectories_to_dataset(trajs)
    assert ds.num_rows == 2
    assert ds["answer"] == ["42", None]
    assert dataset_to_trajectories(ds) == trajs
