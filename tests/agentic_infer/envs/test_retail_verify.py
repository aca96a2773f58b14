"""The retail verdict (state, actions, outputs), the hack probes on the real 520 train+dev tasks, canonical
digests, snapshot/restore, replay and the registry entry."""

import copy
import json

import pytest

from agentic_infer.envs import make_env, state_digest
from agentic_infer.envs.retail import WRITE_TOOLS, RetailEnv, replay
from agentic_infer.errors import ConfigError

ADDRESS = {"address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "state": "TX", "country": "USA",
           "zip": "78701"}


def gold_run(row, data_dir):
    env = RetailEnv(row, data_dir=data_dir)
    for action in row["actions"]:
        env.call(action["name"], action["kwargs"])
    return env


def task_with_writes(rows, data_dir):
    """The tasks where at least one gold write succeeds (the others' gold state is the initial state)."""
    return [r for r in rows.values() if any(not c.error for c in replay(r["actions"], data_dir=data_dir).calls)]


def test_gold_actions_and_outputs_score_one_on_every_task(retail_tasks, retail_data_dir):
    assert len(retail_tasks) == 520
    for row in retail_tasks.values():
        env = gold_run(row, retail_data_dir)
        verdict = env.verify(" ".join(row["outputs"]))
        assert verdict.reward == 1.0, (row["id"], verdict.failed)
        assert [c.name for c in verdict.checks] == ["state", "actions", "outputs"]
        assert verdict.info["checks"] == {"state": True, "actions": True, "outputs": True}


def test_doing_nothing_scores_zero_on_every_task_with_a_write(retail_tasks, retail_data_dir):
    with_writes = task_with_writes(retail_tasks, retail_data_dir)
    # 5 tasks' only gold write is refused (a gift card too small) and retail-dev-17 has no actions
    assert {r["id"] for r in retail_tasks.values()} - {r["id"] for r in with_writes} == {
        "retail-train-161", "retail-train-214", "retail-train-229", "retail-train-288", "retail-train-349",
        "retail-dev-17"}
    for row in with_writes:
        verdict = RetailEnv(row, data_dir=retail_data_dir).verify("Done! Your request is complete.")
        assert verdict.reward == 0.0, row["id"]
        assert set(verdict.failed) == {"state", "actions"}
        assert "gold writes not done" in verdict.failed["actions"]
    idle = RetailEnv(retail_tasks["retail-train-214"], data_dir=retail_data_dir).verify("Sorry, not possible.")
    assert idle.reward == 1.0 and "1 refused gold write(s) not required" in idle.checks[1].detail


def test_a_write_beyond_the_gold_scores_zero_on_every_task(retail_tasks, retail_data_dir):
    for row in retail_tasks.values():
        env = gold_run(row, retail_data_dir)
        assert not env.call("modify_user_address", {"user_id": row["user_id"], **ADDRESS}).startswith("Error")
        verdict = env.verify("")
        assert verdict.reward == 0.0, row["id"]
        assert "writes beyond the gold: modify_user_address" in verdict.failed["actions"]
        assert verdict.failed["state"].startswith("differs from the gold end state")
        assert f"users.{row['user_id']}.address" in verdict.failed["state"]


def test_stating_outputs_without_acting_fails_a_task_with_writes(retail_data_dir):
    # no shipped task has outputs, so give one: the answer to a lookup plus a cancellation
    row = {"id": "o", "user_id": "ethan_kim_8860", "instruction": "", "outputs": ["1476.22"],
           "actions": [{"name": "cancel_pending_order",
                        "kwargs": {"order_id": "#W8296441", "reason": "no longer needed"}}]}
    guessed = RetailEnv(row, data_dir=retail_data_dir).verify("Your order #W8296441 totals 1,476.22 dollars.")
    assert guessed.reward == 0.0 and guessed.info["checks"] == {"state": False, "actions": False, "outputs": True}
    env = gold_run(row, retail_data_dir)
    assert env.verify("It is cancelled.").failed == {"outputs": "not stated: ['1476.22'] (of ['1476.22'])"}
    assert env.verify("It is cancelled; 1,476.22 is refunded.").reward == 1.0  # commas stripped as tau-bench
    assert env.verify("It is cancelled; 1476.2 is refunded.").reward == 0.0


def test_outputs_count_in_earlier_messages_too(retail_data_dir):
    import asyncio

    env = RetailEnv({"id": "o", "instruction": "", "actions": [], "outputs": ["Backpack"]}, data_dir=retail_data_dir)
    assert asyncio.run(env.reply("You ordered a BACKPACK and a watch. Anything else?")) is None
    assert env.verify("Bye.").reward == 1.0


def test_the_action_check_catches_what_the_state_check_misses(retail_tasks, retail_data_dir):
    # tau2-bench #224: writing and undoing leaves the gold state, but writes were made that no one asked for
    row = retail_tasks["retail-train-214"]
    env = RetailEnv(row, data_dir=retail_data_dir)
    original = {k: v for k, v in env.state()["users"][row["user_id"]]["address"].items()}
    env.call("modify_user_address", {"user_id": row["user_id"], **ADDRESS})
    env.call("modify_user_address", {"user_id": row["user_id"], **original})
    verdict = env.verify("")
    assert verdict.checks[0].passed and not verdict.checks[1].passed and verdict.reward == 0.0
    # the same gold write done twice (the second succeeds too: an address can be set again)
    row = {"id": "a", "instruction": "", "outputs": [],
           "actions": [{"name": "modify_user_address", "kwargs": {"user_id": "ethan_kim_8860", **ADDRESS}}]}
    twice = gold_run(row, retail_data_dir)
    twice.call("modify_user_address", {"user_id": "ethan_kim_8860", **ADDRESS})
    assert twice.verify("").failed.keys() == {"actions"}


def test_refused_gold_writes_are_optional_and_refused_agent_writes_free(retail_tasks, retail_data_dir):
    row = retail_tasks["retail-train-24"]  # [0] is refused (gift card 18 < 97.35), [1] cancels the order
    assert row["actions"][0]["name"] == "modify_pending_order_payment"
    skipped = RetailEnv(row, data_dir=retail_data_dir)
    skipped.call(row["actions"][1]["name"], row["actions"][1]["kwargs"])
    assert skipped.verify("").reward == 1.0
    tried = gold_run(row, retail_data_dir)
    tried.call("cancel_pending_order", {"order_id": "#W0", "reason": "no longer needed"})  # refused: free
    assert tried.verify("").reward == 1.0


def test_arguments_compare_as_data(retail_tasks, retail_data_dir):
    # retail-train-161 modifies three items of #W6151519 (refused); find a successful multi-item modification
    row = next(r for r in retail_tasks.values() if len(r["actions"]) == 1
               and r["actions"][0]["name"] == "modify_pending_order_items" and len(r["actions"][0]["kwargs"]["item_ids"]) > 1
               and not replay(r["actions"], data_dir=retail_data_dir).calls[0].error)
    kwargs = copy.deepcopy(row["actions"][0]["kwargs"])
    kwargs["item_ids"].reverse()
    kwargs["new_item_ids"].reverse()  # the same pairs in another order
    env = RetailEnv(row, data_dir=retail_data_dir)
    env.call("modify_pending_order_items", dict(reversed(list(kwargs.items()))))
    assert env.verify("").reward == 1.0, env.verify("").failed


def test_digest_is_canonical(retail_data_dir):
    env = replay([{"name": "cancel_pending_order", "kwargs": {"order_id": "#W8955613", "reason": "no longer needed"}}],
                 data_dir=retail_data_dir)
    order = env.state()["orders"]["#W8955613"]
    permuted = copy.deepcopy(order)
    permuted["payment_history"].reverse()
    permuted["items"].reverse()
    permuted = dict(reversed(list(permuted.items())))
    assert state_digest({"o": order}) == state_digest({"o": permuted})
    changed = copy.deepcopy(order)
    changed["payment_history"][1]["amount"] = 585.96
    assert state_digest({"o": order}) != state_digest({"o": changed})
    # the env's digest: the shipped database's digest plus the records that differ from it
    fresh = RetailEnv({"id": "f", "instruction": "", "actions": []}, data_dir=retail_data_dir)
    shipped = {t: json.loads((retail_data_dir / "tools/tau_retail_db" / f"{t}.json").read_text())
               for t in ("orders", "products", "users")}
    assert fresh.canonical_state() == {"base": state_digest(shipped)}
    assert env.canonical_state()["orders"]["#W8955613"]["status"] == "cancelled"
    assert env.digest() != fresh.digest()
    # equal databases, equal digests: written and undone; the same writes in another order
    undone = RetailEnv({"id": "u", "instruction": "", "actions": []}, data_dir=retail_data_dir)
    address = dict(undone.state()["users"]["olivia_lopez_9494"]["address"])
    undone.call("modify_user_address", {"user_id": "olivia_lopez_9494", **{**address, "city": "Reno"}})
    assert undone.digest() != fresh.digest()
    undone.call("modify_user_address", {"user_id": "olivia_lopez_9494", **address})
    assert undone.digest() == fresh.digest()
    cancel = {"name": "cancel_pending_order", "kwargs": {"order_id": "#W8955613", "reason": "no longer needed"}}
    ret = {"name": "return_delivered_order_items", "kwargs": {"order_id": "#W9077205", "item_ids": ["9370300555"],
                                                              "payment_method_id": "gift_card_7108145"}}
    assert replay([cancel, ret], data_dir=retail_data_dir).digest() == \
        replay([ret, cancel], data_dir=retail_data_dir).digest()


def test_snapshot_restore(retail_data_dir):
    env = RetailEnv({"id": "s", "instruction": "", "actions": []}, data_dir=retail_data_dir)
    start = env.snapshot()
    env.call("cancel_pending_order", {"order_id": "#W8955613", "reason": "no longer needed"})
    mid, mid_digest = env.snapshot(), state_digest(env.db.changes())
    env.call("return_delivered_order_items", {"order_id": "#W9077205", "item_ids": ["9370300555"],
                                              "payment_method_id": "gift_card_7108145"})
    env.call("transfer_to_human_agents", {"summary": "x"})
    assert env.done and len(env.calls) == 3
    env.restore(mid)
    assert state_digest(env.db.changes()) == mid_digest and len(env.calls) == 1 and not env.done
    assert env.state()["orders"]["#W9077205"]["status"] == "delivered"
    assert env.state()["orders"]["#W8955613"]["status"] == "cancelled"
    env.restore(start)
    assert env.db.touched() == set() and env.calls == []
    assert env.state()["orders"]["#W8955613"]["status"] == "pending"
    assert env.state()["users"]["olivia_lopez_9494"]["payment_methods"]["gift_card_6682391"]["balance"] == 35
    env.restore(mid)  # a snapshot is a copy: restoring it twice works, changing the env does not change it
    env.state()["orders"]["#W8955613"]["status"] = "tampered"
    env.restore(mid)
    assert env.state()["orders"]["#W8955613"]["status"] == "cancelled"


def test_registry_and_task_validation(retail_tasks, retail_data_dir):
    row = retail_tasks["retail-dev-0"] if "retail-dev-0" in retail_tasks else next(iter(retail_tasks.values()))
    env = make_env("retail", row, data_dir=retail_data_dir)
    assert isinstance(env, RetailEnv) and env.name == "retail"
    assert env.first_observation() == row["instruction"]
    assert env.instructions().startswith("# Retail agent policy")
    assert set(WRITE_TOOLS) < set(env.tool_names())
    with pytest.raises(ConfigError, match="actions must be a list"):
        RetailEnv({"id": "b", "actions": [{"kwargs": {}}]}, data_dir=retail_data_dir)
    with pytest.raises(ConfigError, match="choose one of instruction, llm"):
        RetailEnv(row, data_dir=retail_data_dir, user="human")
    with pytest.raises(ConfigError, match="needs user_backend"):
        RetailEnv(row, data_dir=retail_data_dir, user="llm")


def test_state_check_compares_lists_as_multisets(retail_tasks, retail_data_dir):
    # tau2-bench #514: the same records with a list in another order are the same state
    row = retail_tasks["retail-train-3"]  # an exchange and a cancellation
    env = gold_run(row, retail_data_dir)
    order = env.db.order_for_write("#W5765741")
    order["payment_history"].reverse()
    order["items"].reverse()
    assert env.verify("").reward == 1.0
    order["payment_history"][0]["amount"] += 0.01
    verdict = env.verify("")
    assert verdict.failed.keys() == {"state"}
    assert "orders.#W5765741.payment_history" in verdict.failed["state"]
