"""Intents: every template wording names every argument its write needs; a broken intent is dropped with its reason."""

from __future__ import annotations

import pytest

from synth.envtasks.facts import Need, describe_payment, missing, write_needs
from synth.envtasks.sampler import WRITE_KINDS, SampledTask, SamplerConfig, sample_task, task_seed
from synth.envtasks.templates import TEMPLATES, render_intent, template_coverage
from synth.envtasks.verify import check_task, gold_db, task_row, written_digest


@pytest.mark.parametrize("kind", WRITE_KINDS)
def test_each_kind_s_every_wording_names_every_needed_argument(tables, kind):
    for i in range(8):
        task, _ = sample_task(tables, task_seed(21, i), SamplerConfig(kinds=(kind,), max_writes=1))
        coverage = template_coverage(task, tables)
        assert len(coverage) == len(TEMPLATES[f"auth/{task.auth}"]) + len(TEMPLATES[kind])
        assert all(v == [] for v in coverage.values()), coverage


def test_the_needs_of_a_known_exchange_name_each_argument(tables):
    # retail-train-3's exchange, by hand: order #W7736983 of sofia_kovacs_7075, Coffee Maker 5952720925 -> 1323134954
    user = tables["users"]["sofia_kovacs_7075"]
    order = tables["orders"]["#W7736983"]
    item = next(i for i in order["items"] if i["item_id"] == "5952720925")
    target = tables["products"][item["product_id"]]["variants"]["1323134954"]["options"]
    write = {"kind": "exchange", "order_id": "#W7736983", "items": [item], "targets": [target],
             "new_item_ids": ["1323134954"], "payment_method_id": "paypal_6840891"}
    needs = {n.arg: n.phrases for n in write_needs(write, user)}
    assert needs["order_id"] == ("#W7736983",)
    assert needs["item[0]"] == ("Coffee Maker", "black", "4 cups", "espresso", "timer")
    assert needs["new_item[0]"] == ("stainless steel", "drip", "built-in grinder")  # capacity stays 4 cups
    assert needs["payment_method"] == ("paypal",)
    task = SampledTask(seed=0, user_id="sofia_kovacs_7075", auth="name_zip", writes=[write])
    text, ids = render_intent(task, tables)
    assert "#W7736983" in text and "Sofia" in text and user["address"]["zip"] in text and "PayPal" in text
    assert ids[0].startswith("auth/name_zip:") and ids[1].startswith("exchange:")


def test_missing_matches_ids_and_numbers_as_whole_tokens():
    needs = [Need("order_id", ("#W123",)), Need("zip", ("19031",)), Need("reason", ("no longer needed",))]
    assert [n.arg for n in missing("order #W1234, zip 190312, because No  Longer\nNeeded", needs)] == \
        ["order_id", "zip"]
    assert missing("Order #W123 (zip 19031): no longer needed.", needs) == []


def test_a_card_is_named_by_brand_and_last_four(tables):
    user = tables["users"]["omar_silva_7446"]
    card = next(mid for mid, m in user["payment_methods"].items() if m["source"] == "credit_card")
    m = user["payment_methods"][card]
    assert describe_payment(user, card) == f"{m['brand']} credit card ending in {m['last_four']}"


def _row(tables, kind="cancel", seed=3):
    task, _ = sample_task(tables, task_seed(seed, 0), SamplerConfig(kinds=(kind,), max_writes=1))
    text, ids = render_intent(task, tables)
    return task_row(task, text, digest=written_digest(gold_db(task.actions)), index=0, run_seed=seed, template=ids)


def test_an_intent_without_the_order_id_is_dropped_with_the_reason(tables):
    row = _row(tables)
    oid = row["provenance"]["writes"][0]["order_id"]
    assert check_task(row, tables) is None
    broken = {**row, "instruction": row["instruction"].replace(oid, "my latest order")}
    assert check_task(broken, tables) == "intent_missing:order_id"


def test_an_intent_without_the_reason_or_the_auth_is_dropped(tables):
    row = _row(tables)
    reason = row["provenance"]["writes"][0]["reason"]
    assert check_task({**row, "instruction": row["instruction"].replace(reason, "reasons")}, tables) == \
        "intent_missing:reason"
    user = tables["users"][row["user_id"]]
    who = user["email"] if row["provenance"]["auth"] == "email" else user["name"]["first_name"]
    assert check_task({**row, "instruction": row["instruction"].replace(who, "someone")}, tables).startswith(
        "intent_missing:")


def test_an_intent_naming_the_wrong_target_option_is_dropped(tables):
    row = _row(tables, "modify_items", 4)
    write = row["provenance"]["writes"][0]
    changed = [v for k, v in write["targets"][0].items() if write["items"][0]["options"].get(k) != v]
    text = row["instruction"]
    for v in changed:
        text = text.replace(f": {v}", ": something else")
    assert check_task({**row, "instruction": text}, tables) == "intent_missing:new_item[0]"
