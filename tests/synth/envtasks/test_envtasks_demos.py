"""Teacher-free env demonstrations: token-exact for SmolLM2's tokenizer, observations masked, verified to reward 1."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentic_infer.backends.base import encode_continuation, encode_prompt
from agentic_infer.types import IGNORE_INDEX
from synth.envtasks.demos import build_env_demo, demo_script
from synth.envtasks.sampler import SamplerConfig, sample_task, task_seed
from synth.envtasks.templates import render_intent
from synth.envtasks.verify import gold_db, task_row, written_digest
from synth.export import export_rows
from tests.conftest import shared_data


def _train(n: int) -> dict:
    path = shared_data("tools/tau_retail_db/retail_tasks_train.jsonl")
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row["id"] == f"retail-train-{n}":
                return row
    raise AssertionError(n)


def _synth(tables):
    task, _ = sample_task(tables, task_seed(9, 0), SamplerConfig(kinds=("modify_items",), max_writes=2, p_extra=1.0))
    text, ids = render_intent(task, tables)
    return task_row(task, text, digest=written_digest(gold_db(task.actions)), index=0, run_seed=9, template=ids)


@pytest.fixture(scope="module")
def synth_demo(tables, vocab):
    return asyncio.run(build_env_demo(_synth(tables), vocab, tables=tables))


def test_a_synthesized_demo_verifies_to_reward_1(synth_demo, tables):
    traj, reason = synth_demo
    assert reason is None
    assert traj.rewards["env_reward"] == 1.0 and traj.finish_reason == "answer"
    assert traj.metadata["demonstration"] and traj.metadata["demo"]["confirmations"] == 2
    executed = [s.action for s in traj.steps if s.metadata.get("status") == "executed"]
    assert executed == [a["name"] for a in _synth(tables)["actions"]]
    assert all(not s.metadata.get("refused") for s in traj.steps)


def test_a_demo_is_token_exact_for_the_target_tokenizer_with_observations_masked(synth_demo, vocab):
    traj, _ = synth_demo
    assert traj.token_exact
    head = traj.segments[0]
    assert head.kind == "prompt" and head.token_ids == encode_prompt(vocab, head.text)
    ids, mask = [], []
    for seg in traj.segments:
        if seg.kind != "prompt":  # model turns and observations are the canonical ids of their text
            assert seg.token_ids == encode_continuation(vocab, seg.text)
        ids += seg.token_ids
        mask += [int(seg.kind == "model")] * len(seg.token_ids)
    assert traj.token_ids() == ids and traj.loss_mask() == mask
    kinds = {s.kind for s in traj.segments}
    assert kinds == {"prompt", "model", "observation"}
    user_yes = [s for s in traj.segments if s.kind == "observation" and s.metadata.get("status") == "user"]
    assert len(user_yes) == 2 and all("yes" in s.text for s in user_yes)
    [row] = export_rows([traj], "tokenized", eos_token_id=vocab.tokenizer.encode("<|im_end|>", add_special=False)[0])
    labels = row["labels"]
    pos = 0
    for seg in traj.segments:
        span = labels[pos:pos + len(seg.token_ids)]
        assert span == (seg.token_ids if seg.kind == "model" else [IGNORE_INDEX] * len(seg.token_ids))
        pos += len(seg.token_ids)
    assert row["input_ids"][:pos] == ids


def test_demos_export_to_every_synth_format(synth_demo):
    traj, _ = synth_demo
    msgs = export_rows([traj], "messages")[0]["messages"]
    assert msgs[0]["role"] == "system" and msgs[1]["role"] == "user" and msgs[-1]["role"] == "assistant"
    assert any('"name": "modify_pending_order_items"' in m["content"] for m in msgs if m["trainable"])
    assert export_rows([traj], "verl-sft")[0]["extra_info"]["id"] == traj.id


def test_a_train_task_demo_authenticates_and_skips_the_refused_gold_write(tables, vocab):
    row = _train(24)  # its gold modify_pending_order_payment is refused (insufficient gift card balance)
    turns, info = demo_script(row, tables)
    user = tables["users"][row["user_id"]]
    assert '"find_user_id_by_' in turns[0] and '"get_user_details"' in turns[1]
    assert len(info["skipped_writes"]) == 1 and "insufficient gift card balance" in info["skipped_writes"][0]
    assert not any('"modify_pending_order_payment"' in t for t in turns)
    traj, reason = asyncio.run(build_env_demo(row, vocab, tables=tables))
    assert reason is None and traj.rewards["env_reward"] == 1.0
    assert user["email"] in traj.segments[0].text or user["name"]["first_name"] in traj.segments[0].text


def test_a_demo_that_misses_a_gold_write_is_rejected(tables, vocab):
    row = _train(4)  # cancel #W7602708
    turns, info = demo_script(row, tables)
    from synth.envtasks.demos import play_script

    traj, reason = asyncio.run(play_script(row, [turns[0], turns[-1]], vocab, env="retail", calls=1))
    assert reason is not None and reason.startswith("reward_0:") and "actions" in reason and "state" in reason
    assert traj.rewards["env_reward"] == 0.0


def test_agent_settings_reach_the_demos_prompt(tables, vocab):
    """`agent=` (the CLI's --set) builds demos with the prompt the policy will run with: compact tool schemas give
    a system message of signature lines, not JSON schemas, and the demo still verifies."""
    row = _synth(tables)
    full, _ = asyncio.run(build_env_demo(row, vocab, tables=tables))
    compact, reason = asyncio.run(build_env_demo(row, vocab, tables=tables, agent={"tool_schemas": "compact"}))
    assert reason is None and compact.rewards["env_reward"] == 1.0
    system_full, system_compact = (t.segments[0].metadata["messages"][0]["content"] for t in (full, compact))
    assert '"parameters"' in system_full and '"parameters"' not in system_compact
    assert "\ncancel_pending_order(order_id: string, reason: string): Cancel a pending order." in system_compact
    assert len(compact.segments[0].token_ids) < len(full.segments[0].token_ids) // 2
