"""The 16 retail tools on real database records: each success and each refusal reason of each write tool.

Expected values are worked out by hand from orders.json / users.json / products.json and tau-bench's rules
(e.g. #W8955613 is pending, paid 585.97 by gift_card_6682391 whose balance is 35).
"""

import json

import pytest

from agentic_infer.envs.base import state_digest
from agentic_infer.envs.retail import TOOLS, WRITE_TOOLS

OLIVIA = "olivia_lopez_9494"  # #W8955613 pending: Smart Watch 2554056026 367.38, Backpack 6309044598 218.59
OLIVIA_GC, OLIVIA_CC = "gift_card_6682391", "credit_card_6044108"
PROCESSED = "#W2611340"
ADDRESS = {"address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "state": "TX", "country": "USA",
           "zip": "78701"}


def touched_digest(env):
    """Digest of the records this env wrote (the rest is the shared base): unchanged after a refusal."""
    return state_digest(env.db.changes())


def refused(env, tool, **kwargs):
    before = (touched_digest(env), json.dumps(env.db.changes(), sort_keys=True))
    out = env.call(tool, kwargs)
    assert out.startswith("Error: "), out
    assert env.calls[-1].error
    assert (touched_digest(env), json.dumps(env.db.changes(), sort_keys=True)) == before
    return out.removeprefix("Error: ")


def test_tool_set_matches_the_shipped_schemas(retail_env):
    env = retail_env()
    names = [t["function"]["name"] for t in env.tools()]
    assert len(names) == 16 and set(names) == set(TOOLS)
    assert WRITE_TOOLS == {"cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
                           "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
                           "return_delivered_order_items"}
    shipped = json.loads((env.data_dir / "tools/tau_retail_db/retail_tools.json").read_text())
    assert env.tools() == shipped


def test_reads(retail_env):
    env = retail_env()
    assert env.call("find_user_id_by_email", {"email": "Olivia.Lopez8783@EXAMPLE.com"}) == OLIVIA
    assert refused(env, "find_user_id_by_email", email="nobody@example.com") == "user not found"
    assert env.call("find_user_id_by_name_zip", {"first_name": "olivia", "last_name": "LOPEZ", "zip": "92107"}) == OLIVIA
    assert refused(env, "find_user_id_by_name_zip", first_name="Olivia", last_name="Lopez", zip="00000") == "user not found"
    order = json.loads(env.call("get_order_details", {"order_id": "#W8955613"}))
    assert order["status"] == "pending" and order["payment_history"][0]["amount"] == 585.97
    assert refused(env, "get_order_details", order_id="#W0000000") == "order not found"
    assert json.loads(env.call("get_product_details", {"product_id": "2524789262"}))["name"] == "Backpack"
    assert refused(env, "get_product_details", product_id="nope") == "product not found"
    assert json.loads(env.call("get_user_details", {"user_id": OLIVIA}))["orders"] == ["#W8955613"]
    assert refused(env, "get_user_details", user_id="nope") == "user not found"
    types = json.loads(env.call("list_all_product_types", {}))
    assert len(types) == 50 and list(types) == sorted(types) and types["Backpack"] == "2524789262"
    assert env.db.touched() == set()


def test_calculate_think_transfer(retail_env):
    env = retail_env()
    assert env.call("calculate", {"expression": "(2 + 3) * 4 / 3"}) == "6.67"
    assert env.call("calculate", {"expression": "585.97 - 35"}) == "550.97"
    assert refused(env, "calculate", expression="import os") == "invalid characters in expression"
    assert refused(env, "calculate", expression="1 / 0") == "division by zero"
    assert env.call("think", {"thought": "hm"}) == ""
    assert not env.done
    assert env.call("transfer_to_human_agents", {"summary": "needs help"}) == "Transfer successful"
    assert env.done


def test_bad_arguments_are_errors_not_crashes(retail_env):
    env = retail_env()
    assert env.call("cancel_pending_order", {"order_id": "#W8955613"}).startswith("Error: TypeError")
    assert env.call("get_order_details", {"order_id": "#W8955613", "x": 1}).startswith("Error: TypeError")
    assert refused(env, "modify_pending_order_items", order_id="#W8955613", item_ids="6309044598",
                   new_item_ids=["3928046918"], payment_method_id=OLIVIA_GC).startswith("item_ids must be a list")
    assert env.db.touched() == set()


def test_cancel_refunds_a_gift_card_at_once(retail_env):
    env = retail_env()
    assert refused(env, "cancel_pending_order", order_id="#W0000000", reason="no longer needed") == "order not found"
    assert refused(env, "cancel_pending_order", order_id=PROCESSED, reason="no longer needed") == \
        "non-pending order cannot be cancelled"
    assert refused(env, "cancel_pending_order", order_id="#W8955613", reason="too expensive") == "invalid reason"
    out = json.loads(env.call("cancel_pending_order", {"order_id": "#W8955613", "reason": "ordered by mistake"}))
    order = env.state()["orders"]["#W8955613"]
    assert out == order
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 585.97,
                                            "payment_method_id": OLIVIA_GC}
    assert env.state()["users"][OLIVIA]["payment_methods"][OLIVIA_GC]["balance"] == 620.97  # 35 + 585.97
    assert refused(env, "cancel_pending_order", order_id="#W8955613", reason="no longer needed") == \
        "non-pending order cannot be cancelled"


def test_cancel_to_paypal_only_records_the_refund(retail_env):
    env = retail_env()
    env.call("cancel_pending_order", {"order_id": "#W5765741", "reason": "no longer needed"})
    order = env.state()["orders"]["#W5765741"]
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 298.39,
                                            "payment_method_id": "paypal_6840891"}
    assert env.db.touched() == {("orders", "#W5765741")}


def test_modify_address(retail_env):
    env = retail_env()
    assert refused(env, "modify_pending_order_address", order_id=PROCESSED, **ADDRESS) == \
        "non-pending order cannot be modified"
    assert refused(env, "modify_pending_order_address", order_id="#W0", **ADDRESS) == "order not found"
    env.call("modify_pending_order_address", {"order_id": "#W8955613", **ADDRESS})
    assert env.state()["orders"]["#W8955613"]["address"] == ADDRESS
    assert env.state()["orders"]["#W8955613"]["status"] == "pending"
    assert refused(env, "modify_user_address", user_id="nobody", **ADDRESS) == "user not found"
    env.call("modify_user_address", {"user_id": OLIVIA, **ADDRESS})
    assert env.state()["users"][OLIVIA]["address"] == ADDRESS


def test_modify_payment(retail_env):
    env = retail_env()
    # omar_kim_3528: #W1080318 pending, 53.43 by credit_card_3577130; gift_card_3749819 holds 91
    assert refused(env, "modify_pending_order_payment", order_id=PROCESSED, payment_method_id="x") == \
        "non-pending order cannot be modified"
    assert refused(env, "modify_pending_order_payment", order_id="#W1080318", payment_method_id=OLIVIA_GC) == \
        "payment method not found"
    assert refused(env, "modify_pending_order_payment", order_id="#W1080318",
                   payment_method_id="credit_card_3577130") == \
        "the new payment method should be different from the current one"
    # juan_rossi_6696: #W7602708 costs 97.35; gift_card_8893815 holds 18 (gold task retail-train-24)
    assert refused(env, "modify_pending_order_payment", order_id="#W7602708",
                   payment_method_id="gift_card_8893815") == "insufficient gift card balance to pay for the order"
    env.call("modify_pending_order_payment", {"order_id": "#W1080318", "payment_method_id": "gift_card_3749819"})
    order = env.state()["orders"]["#W1080318"]
    assert order["status"] == "pending"
    assert order["payment_history"][1:] == [
        {"transaction_type": "payment", "amount": 53.43, "payment_method_id": "gift_card_3749819"},
        {"transaction_type": "refund", "amount": 53.43, "payment_method_id": "credit_card_3577130"}]
    assert env.state()["users"]["omar_kim_3528"]["payment_methods"]["gift_card_3749819"]["balance"] == 37.57
    assert refused(env, "modify_pending_order_payment", order_id="#W1080318",
                   payment_method_id="credit_card_3577130") == "there should be exactly one payment for a pending order"


def test_modify_payment_away_from_a_gift_card_refunds_it(retail_env):
    env = retail_env()
    env.call("modify_pending_order_payment", {"order_id": "#W8955613", "payment_method_id": OLIVIA_CC})
    assert env.state()["users"][OLIVIA]["payment_methods"][OLIVIA_GC]["balance"] == 620.97


def test_modify_items(retail_env):
    env = retail_env()
    kw = {"order_id": "#W8955613", "payment_method_id": OLIVIA_GC}
    assert refused(env, "modify_pending_order_items", **{**kw, "order_id": PROCESSED}, item_ids=[],
                   new_item_ids=[]) == "non-pending order cannot be modified"
    assert refused(env, "modify_pending_order_items", **kw, item_ids=["123"], new_item_ids=["3928046918"]) == \
        "123 not found"
    assert refused(env, "modify_pending_order_items", **kw, item_ids=["6309044598", "6309044598"],
                   new_item_ids=["3928046918", "3928046918"]) == "6309044598 not found"
    assert refused(env, "modify_pending_order_items", **kw, item_ids=["6309044598"], new_item_ids=[]) == \
        "the number of items to be exchanged should match"
    assert refused(env, "modify_pending_order_items", **kw, item_ids=["6309044598"],
                   new_item_ids=["8030558068"]) == "new item 8030558068 not found or available"  # unavailable
    assert refused(env, "modify_pending_order_items", **kw, item_ids=["6309044598"],
                   new_item_ids=["2860956907"]) == "new item 2860956907 not found or available"  # a watch
    assert refused(env, "modify_pending_order_items", **{**kw, "payment_method_id": "paypal_1"},
                   item_ids=["6309044598"], new_item_ids=["3928046918"]) == "payment method not found"
    # watch 367.38 -> 1007724142 at 382.41 (+15.03), backpack 218.59 -> 8084436579 at 219.43 (+0.84): +15.87
    env2 = retail_env()
    env2.call("modify_pending_order_items", {**kw, "item_ids": ["2554056026", "6309044598"],
                                             "new_item_ids": ["1007724142", "8084436579"]})
    order = env2.state()["orders"]["#W8955613"]
    assert order["status"] == "pending (item modified)"
    # recorded unrounded, as tau-bench does (15.870000000000033)
    assert order["payment_history"][-1] == {"transaction_type": "payment", "amount": pytest.approx(15.87, abs=1e-9),
                                            "payment_method_id": OLIVIA_GC}
    assert env2.state()["users"][OLIVIA]["payment_methods"][OLIVIA_GC]["balance"] == 19.13  # 35 - 15.87
    assert [(i["item_id"], i["price"]) for i in order["items"]] == [("1007724142", 382.41), ("8084436579", 219.43)]
    assert order["items"][0]["options"] == {"color": "black", "band material": "leather", "display": "LCD"}
    assert refused(env2, "modify_pending_order_items", **kw, item_ids=["1007724142"],
                   new_item_ids=["2860956907"]) == "non-pending order cannot be modified"
    # a cheaper backpack (218.59 -> 198.0) refunds 20.59 onto the gift card
    env.call("modify_pending_order_items", {**kw, "item_ids": ["6309044598"], "new_item_ids": ["3928046918"]})
    order = env.state()["orders"]["#W8955613"]
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": pytest.approx(20.59, abs=1e-9),
                                            "payment_method_id": OLIVIA_GC}
    assert env.state()["users"][OLIVIA]["payment_methods"][OLIVIA_GC]["balance"] == 55.59


def test_modify_items_gift_card_too_small(retail_env):
    env = retail_env()
    # ethan_kim_8860: #W8296441 action camera 6117189161 at 481.5 -> 7523669277 at 523.66 is +42.16; the gift
    # card holds 37 (gold task retail-train-441 is refused for this)
    assert refused(env, "modify_pending_order_items", order_id="#W8296441", item_ids=["6117189161"],
                   new_item_ids=["7523669277"], payment_method_id="gift_card_5701566") == \
        "insufficient gift card balance to pay for the new item"


def test_return(retail_env):
    env = retail_env()
    # amelia_wilson_4614: #W9077205 delivered, paid by gift_card_7108145; she also has paypal_4101143
    kw = {"order_id": "#W9077205", "item_ids": ["9370300555"]}
    assert refused(env, "return_delivered_order_items", **{**kw, "order_id": "#W8955613"},
                   payment_method_id=OLIVIA_GC) == "non-delivered order cannot be returned"
    assert refused(env, "return_delivered_order_items", **kw, payment_method_id=OLIVIA_GC) == \
        "payment method not found"
    assert refused(env, "return_delivered_order_items", **kw, payment_method_id="paypal_4101143") == \
        "payment method should be either the original payment method or a gift card"
    assert refused(env, "return_delivered_order_items", order_id="#W9077205", item_ids=["9370300555"] * 2,
                   payment_method_id="gift_card_7108145") == "some item not found"
    env.call("return_delivered_order_items", {"order_id": "#W9077205", "item_ids": ["9370300555", "3877338112"],
                                              "payment_method_id": "gift_card_7108145"})
    order = env.state()["orders"]["#W9077205"]
    assert order["status"] == "return requested"
    assert order["return_items"] == ["3877338112", "9370300555"]  # sorted
    assert order["return_payment_method_id"] == "gift_card_7108145"
    assert len(order["payment_history"]) == 1  # no refund until the items come back
    assert env.state()["users"]["amelia_wilson_4614"]["payment_methods"]["gift_card_7108145"]["balance"] == 97


def test_exchange(retail_env):
    env = retail_env()
    # sofia_kovacs_7075: #W7736983 delivered, coffee maker 5952720925 at 260.19; 1323134954 costs 236.95
    kw = {"order_id": "#W7736983", "item_ids": ["5952720925"], "new_item_ids": ["1323134954"],
          "payment_method_id": "paypal_6840891"}
    assert refused(env, "exchange_delivered_order_items", **{**kw, "order_id": "#W5765741"}) == \
        "non-delivered order cannot be exchanged"
    assert refused(env, "exchange_delivered_order_items", **{**kw, "item_ids": ["1"]}) == "1 not found"
    assert refused(env, "exchange_delivered_order_items", **{**kw, "new_item_ids": []}) == \
        "the number of items to be exchanged should match"
    assert refused(env, "exchange_delivered_order_items", **{**kw, "new_item_ids": ["3928046918"]}) == \
        "new item 3928046918 not found or available"
    assert refused(env, "exchange_delivered_order_items", **{**kw, "payment_method_id": OLIVIA_GC}) == \
        "payment method not found"
    # mason_johansson_8128: laptop 2520.52 -> 6056040996 at 2609.37 is +88.85; his gift card holds 64
    assert refused(env, "exchange_delivered_order_items", order_id="#W4352605", item_ids=["2216662955"],
                   new_item_ids=["6056040996"], payment_method_id="gift_card_1401311") == \
        "insufficient gift card balance to pay for the price difference"
    env.call("exchange_delivered_order_items", kw)
    order = env.state()["orders"]["#W7736983"]
    assert order["status"] == "exchange requested"
    assert (order["exchange_items"], order["exchange_new_items"]) == (["5952720925"], ["1323134954"])
    assert order["exchange_payment_method_id"] == "paypal_6840891"
    assert order["exchange_price_difference"] == -23.24
    assert order["items"][0]["item_id"] == "5952720925"  # the items stay until the exchange happens


def test_envs_do_not_share_writes(retail_env):
    a, b = retail_env(), retail_env()
    a.call("cancel_pending_order", {"order_id": "#W8955613", "reason": "no longer needed"})
    assert b.state()["orders"]["#W8955613"]["status"] == "pending"
    assert b.state()["users"][OLIVIA]["payment_methods"][OLIVIA_GC]["balance"] == 35
    assert retail_env().state()["orders"]["#W8955613"]["status"] == "pending"
