"""The 16 retail tools, written from retail_tools.json and policy.md with tau-bench's semantics.

    from agentic_infer.envs.retail.tools import TOOLS, WRITE_TOOLS
    TOOLS["cancel_pending_order"](db, order_id="#W5765741", reason="ordered by mistake")   # the order as JSON text

Each tool is `fn(db: RetailDB, **arguments) -> str`. A refused call raises `Refusal(reason)` before changing
anything (the env shows it as "Error: <reason>", tau-bench's wording); a call with missing or unknown arguments
raises TypeError (the env shows that as "Error: TypeError: ..."). Writes (WRITE_TOOLS) return the changed
record as JSON, as tau-bench does; refunds to a gift card credit its balance at once, other methods are only
recorded in the order's payment_history. Gift-card balances and the exchange difference are rounded to cents;
the item-modification difference is recorded unrounded (e.g. 15.870000000000005), as tau-bench records it, so
the JSON text matches tau-bench's byte for byte (the canonical state comparison rounds floats to 1e-9).
`transfer_to_human_agents` only answers; the env marks the episode done. Not covered: the policy's
conversational rules (authentication, confirmation), which no tool enforces in tau-bench either.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from typing import Any

from agentic_infer.envs.base import Refusal
from agentic_infer.envs.retail.db import RetailDB

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def _dump(record: Any) -> str:
    return json.dumps(record)


def _ids(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Refusal(f"{name} must be a list of item id strings, got {value!r}")
    return value


def _order(db: RetailDB, order_id: str) -> dict[str, Any]:
    order = db.order(order_id)
    if order is None:
        raise Refusal("order not found")
    return order


def _payment_method(db: RetailDB, order: dict[str, Any], payment_method_id: str) -> dict[str, Any]:
    method = db.user(order["user_id"])["payment_methods"].get(payment_method_id)
    if method is None:
        raise Refusal("payment method not found")
    return method


def _missing_item(order: dict[str, Any], item_ids: list[str]) -> str | None:
    """The first id asked for more often than the order holds it (ids may repeat in both lists)."""
    held = [item["item_id"] for item in order["items"]]
    return next((i for i in item_ids if item_ids.count(i) > held.count(i)), None)


def _price_difference(db: RetailDB, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str]) -> float:
    """New minus old price over the pairs (unrounded), refusing a new item that is not an available variant."""
    if len(item_ids) != len(new_item_ids):
        raise Refusal("the number of items to be exchanged should match")
    diff: float = 0  # an int 0 when nothing is exchanged, as tau-bench writes it
    for item_id, new_id in zip(item_ids, new_item_ids):
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        variant = db.product(item["product_id"])["variants"].get(new_id)
        if variant is None or not variant["available"]:
            raise Refusal(f"new item {new_id} not found or available")
        diff += variant["price"] - item["price"]
    return diff


def _credit_gift_card(db: RetailDB, user_id: str, payment_method_id: str, amount: float) -> None:
    card = db.user_for_write(user_id)["payment_methods"][payment_method_id]
    card["balance"] = round(card["balance"] + amount, 2)


# -- reads ----------------------------------------------------------------------------------------------
def find_user_id_by_email(db: RetailDB, *, email: str) -> str:
    for user_id, profile in db.tables["users"].items():
        if profile["email"].lower() == email.lower():
            return user_id
    raise Refusal("user not found")


def find_user_id_by_name_zip(db: RetailDB, *, first_name: str, last_name: str, zip: str) -> str:
    for user_id, profile in db.tables["users"].items():
        name = profile["name"]
        if (name["first_name"].lower() == first_name.lower() and name["last_name"].lower() == last_name.lower()
                and profile["address"]["zip"] == zip):
            return user_id
    raise Refusal("user not found")


def get_order_details(db: RetailDB, *, order_id: str) -> str:
    return _dump(_order(db, order_id))


def get_product_details(db: RetailDB, *, product_id: str) -> str:
    product = db.product(product_id)
    if product is None:
        raise Refusal("product not found")
    return _dump(product)


def get_user_details(db: RetailDB, *, user_id: str) -> str:
    user = db.user(user_id)
    if user is None:
        raise Refusal("user not found")
    return _dump(user)


def list_all_product_types(db: RetailDB) -> str:
    names = {p["name"]: p["product_id"] for p in db.tables["products"].values()}
    return _dump(dict(sorted(names.items())))


# -- writes -----------------------------------------------------------------------------------------------
def cancel_pending_order(db: RetailDB, *, order_id: str, reason: str) -> str:
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise Refusal("non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise Refusal("invalid reason")
    order = db.order_for_write(order_id)
    refunds = [{"transaction_type": "refund", "amount": p["amount"], "payment_method_id": p["payment_method_id"]}
               for p in order["payment_history"]]
    for refund in refunds:
        if "gift_card" in refund["payment_method_id"]:  # a gift card is refunded at once
            _credit_gift_card(db, order["user_id"], refund["payment_method_id"], refund["amount"])
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return _dump(order)


def modify_pending_order_address(db: RetailDB, *, order_id: str, address1: str, address2: str, city: str,
                                 state: str, country: str, zip: str) -> str:
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise Refusal("non-pending order cannot be modified")
    order = db.order_for_write(order_id)
    order["address"] = {"address1": address1, "address2": address2, "city": city, "state": state,
                        "country": country, "zip": zip}
    return _dump(order)


def modify_pending_order_payment(db: RetailDB, *, order_id: str, payment_method_id: str) -> str:
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise Refusal("non-pending order cannot be modified")
    method = _payment_method(db, order, payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise Refusal("there should be exactly one payment for a pending order")
    old_id, amount = history[0]["payment_method_id"], history[0]["amount"]
    if old_id == payment_method_id:
        raise Refusal("the new payment method should be different from the current one")
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise Refusal("insufficient gift card balance to pay for the order")
    order = db.order_for_write(order_id)
    order["payment_history"].extend([
        {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
        {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id},
    ])
    if method["source"] == "gift_card":
        _credit_gift_card(db, order["user_id"], payment_method_id, -amount)
    if "gift_card" in old_id:
        _credit_gift_card(db, order["user_id"], old_id, amount)
    return _dump(order)


def _item_change(db: RetailDB, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str,
                 *, status: str, verb: str) -> tuple[dict[str, Any], list[str], list[str], float, dict[str, Any]]:
    """The checks an item modification and an exchange share, in tau-bench's order (the order's status, the
    ids, every old item in the order, the new items, the payment method), and the unrounded price difference."""
    order = _order(db, order_id)
    if order["status"] != status:
        raise Refusal(f"non-{status} order cannot be {verb}")
    item_ids, new_item_ids = _ids("item_ids", item_ids), _ids("new_item_ids", new_item_ids)
    missing = _missing_item(order, item_ids)
    if missing is not None:
        raise Refusal(f"{missing} not found")
    diff = _price_difference(db, order, item_ids, new_item_ids)
    return order, item_ids, new_item_ids, diff, _payment_method(db, order, payment_method_id)


def modify_pending_order_items(db: RetailDB, *, order_id: str, item_ids: list[str], new_item_ids: list[str],
                               payment_method_id: str) -> str:
    order, item_ids, new_item_ids, diff, method = _item_change(db, order_id, item_ids, new_item_ids,
                                                               payment_method_id, status="pending", verb="modified")
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise Refusal("insufficient gift card balance to pay for the new item")
    order = db.order_for_write(order_id)
    order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund",
                                     "amount": abs(diff), "payment_method_id": payment_method_id})
    if method["source"] == "gift_card":
        _credit_gift_card(db, order["user_id"], payment_method_id, -diff)
    for item_id, new_id in zip(item_ids, new_item_ids):
        # the first item still holding the old id (a repeated id changes one item per occurrence)
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        variant = db.product(item["product_id"])["variants"][new_id]
        item["item_id"], item["price"], item["options"] = new_id, variant["price"], variant["options"]
    order["status"] = "pending (item modified)"
    return _dump(order)


def return_delivered_order_items(db: RetailDB, *, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise Refusal("non-delivered order cannot be returned")
    _payment_method(db, order, payment_method_id)
    if "gift_card" not in payment_method_id and payment_method_id != order["payment_history"][0]["payment_method_id"]:
        raise Refusal("payment method should be either the original payment method or a gift card")
    item_ids = _ids("item_ids", item_ids)
    if _missing_item(order, item_ids) is not None:
        raise Refusal("some item not found")
    order = db.order_for_write(order_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return _dump(order)


def exchange_delivered_order_items(db: RetailDB, *, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                   payment_method_id: str) -> str:
    order, item_ids, new_item_ids, diff, method = _item_change(db, order_id, item_ids, new_item_ids,
                                                               payment_method_id, status="delivered", verb="exchanged")
    diff = round(diff, 2)
    if method["source"] == "gift_card" and method["balance"] < diff:
        raise Refusal("insufficient gift card balance to pay for the price difference")
    order = db.order_for_write(order_id)
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff
    return _dump(order)


def modify_user_address(db: RetailDB, *, user_id: str, address1: str, address2: str, city: str, state: str,
                        country: str, zip: str) -> str:
    if db.user(user_id) is None:
        raise Refusal("user not found")
    user = db.user_for_write(user_id)
    user["address"] = {"address1": address1, "address2": address2, "city": city, "state": state,
                       "country": country, "zip": zip}
    return _dump(user)


# -- no database -------------------------------------------------------------------------------------------
_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.UAdd: operator.pos, ast.USub: operator.neg,
}
CALC_CHARS = set("0123456789+-*/(). ")
MAX_EXPONENT = 100


def _arith(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arith(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _arith(node.left), _arith(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise Refusal(f"exponent {right} is too large (at most {MAX_EXPONENT})")
        return _OPS[type(node.op)](left, right)
    raise Refusal(f"unsupported expression part {ast.dump(node)[:60]}")


def calculate(db: RetailDB, *, expression: str) -> str:
    if not isinstance(expression, str) or not set(expression) <= CALC_CHARS:
        raise Refusal("invalid characters in expression")
    try:
        value = _arith(ast.parse(expression.strip(), mode="eval"))
    except SyntaxError as e:
        raise Refusal(f"invalid syntax in {expression!r}: {e.msg}") from None
    except ZeroDivisionError as e:
        raise Refusal(str(e)) from None
    return str(round(float(value), 2))


def think(db: RetailDB, *, thought: str) -> str:
    return ""


def transfer_to_human_agents(db: RetailDB, *, summary: str) -> str:
    return "Transfer successful"


TOOLS: dict[str, Callable[..., str]] = {fn.__name__: fn for fn in (
    calculate, cancel_pending_order, exchange_delivered_order_items, find_user_id_by_email, find_user_id_by_name_zip,
    get_order_details, get_product_details, get_user_details, list_all_product_types, modify_pending_order_address,
    modify_pending_order_items, modify_pending_order_payment, modify_user_address, return_delivered_order_items,
    think, transfer_to_human_agents)}
WRITE_TOOLS: frozenset[str] = frozenset({
    "cancel_pending_order", "exchange_delivered_order_items", "modify_pending_order_address",
    "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
    "return_delivered_order_items"})
TERMINAL_TOOLS: frozenset[str] = frozenset({"transfer_to_human_agents"})
