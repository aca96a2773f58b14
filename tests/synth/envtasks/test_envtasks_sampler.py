"""The sampler over the real retail database: valid sequences, one per seed, each replaying to its gold digest."""

from __future__ import annotations

import pytest

from agentic_infer.envs import make_env
from agentic_infer.envs.retail import replay
from synth.envtasks.sampler import TOOL_OF, WRITE_KINDS, SamplerConfig, sample_task, task_seed
from synth.envtasks.templates import render_intent
from synth.envtasks.verify import check_task, gold_db, task_row, written_digest


def _tasks(tables, kind, n=6, **cfg):
    out = []
    for i in range(n):
        task, why = sample_task(tables, task_seed(11, i), SamplerConfig(kinds=(kind,), max_writes=1, **cfg))
        assert why is None, why
        out.append(task)
    return out


def _row(task, tables, index=0):
    text, ids = render_intent(task, tables)
    return task_row(task, text, digest=written_digest(gold_db(task.actions)), index=index, run_seed=11, template=ids)


def test_one_seed_one_task_and_seeds_differ(tables):
    a, _ = sample_task(tables, 12345)
    b, _ = sample_task(tables, 12345)
    assert a == b and a.actions == b.actions
    others = [sample_task(tables, task_seed(0, i))[0] for i in range(8)]
    assert len({(t.user_id, str(t.actions)) for t in others}) == 8
    assert task_seed(0, 1) == task_seed(0, 1) != task_seed(1, 1)


def test_a_sequence_authenticates_then_looks_up_then_writes(tables):
    for task in _tasks(tables, "exchange", 4):
        names = [a["name"] for a in task.actions]
        user = tables["users"][task.user_id]
        first = task.actions[0]
        if task.auth == "email":
            assert first == {"name": "find_user_id_by_email", "kwargs": {"email": user["email"]}}
        else:
            assert first["kwargs"] == {"first_name": user["name"]["first_name"],
                                       "last_name": user["name"]["last_name"], "zip": user["address"]["zip"]}
        assert names[1] == "get_user_details" and names[2] == "get_order_details"
        assert names[-1] == "exchange_delivered_order_items"
        assert set(names[3:-1]) == {"get_product_details"}


@pytest.mark.parametrize("kind", WRITE_KINDS)
def test_every_kind_meets_the_tools_preconditions_on_the_shipped_database(tables, kind):
    for task in _tasks(tables, kind, 5):
        [write] = task.writes
        call = write["action"]
        assert call["name"] == TOOL_OF[kind]
        user = tables["users"][task.user_id]
        order = tables["orders"].get(write.get("order_id", ""), {})
        if kind in ("cancel", "modify_order_address", "modify_payment", "modify_items"):
            assert order["status"] == "pending" and order["user_id"] == task.user_id
        if kind in ("return", "exchange"):
            assert order["status"] == "delivered"
        if kind == "cancel":
            assert call["kwargs"]["reason"] in ("no longer needed", "ordered by mistake")
        if kind == "modify_payment":
            assert call["kwargs"]["payment_method_id"] != order["payment_history"][0]["payment_method_id"]
        if kind == "return":
            pm = call["kwargs"]["payment_method_id"]
            assert pm == order["payment_history"][0]["payment_method_id"] or pm.startswith("gift_card")
        if kind in ("modify_items", "exchange"):
            for old, new in zip(call["kwargs"]["item_ids"], call["kwargs"]["new_item_ids"]):
                item = next(i for i in order["items"] if i["item_id"] == old)
                variant = tables["products"][item["product_id"]]["variants"][new]
                assert new != old and variant["available"]
        if "payment_method_id" in call["kwargs"]:
            assert call["kwargs"]["payment_method_id"] in user["payment_methods"]
        if kind in ("modify_user_address", "modify_order_address"):
            current = user["address"] if kind == "modify_user_address" else order["address"]
            assert {k: call["kwargs"][k] for k in current} != current


def test_a_synthesized_task_replays_to_its_gold_digest_and_the_retail_verifier_scores_it(tables):
    task = _tasks(tables, "cancel", 1)[0]
    row = _row(task, tables)
    fresh = replay(row["actions"])
    assert written_digest(fresh.db) == row["provenance"]["digest"]
    assert check_task(row, tables) is None
    oid = task.writes[0]["order_id"]
    assert fresh.state()["orders"][oid]["status"] == "cancelled"  # tau-bench: a cancel sets the status
    assert tables["orders"][oid]["status"] == "pending"  # the shared base is untouched
    env = make_env("retail", row)
    for a in row["actions"]:
        assert not env.call_record(a["name"], a["kwargs"]).error
    assert env.verify("Your order is cancelled.").reward == 1.0
    assert make_env("retail", row).verify("I did nothing.").reward == 0.0


def test_a_tampered_digest_or_a_refused_gold_call_is_dropped(tables):
    row = _row(_tasks(tables, "modify_payment", 1)[0], tables)
    assert check_task({**row, "provenance": {**row["provenance"], "digest": "0" * 64}}, tables) == "replay_mismatch"
    pending = row["actions"][-1]["kwargs"]["order_id"]
    twice = {**row, "actions": row["actions"] + [{"name": "cancel_pending_order",
                                                  "kwargs": {"order_id": pending, "reason": "typo reason"}}]}
    assert check_task(twice, tables) == "gold_refused:cancel_pending_order"


def test_two_writes_never_touch_one_order(tables):
    seen = 0
    for i in range(60):
        task, _ = sample_task(tables, task_seed(5, i), SamplerConfig(max_writes=2, p_extra=1.0))
        orders = [w["order_id"] for w in task.writes if "order_id" in w]
        assert len(orders) == len(set(orders))
        seen += len(task.writes) == 2
    assert seen >= 50
