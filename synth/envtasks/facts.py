"""What a synthesized task's intent must say, as data: the phrases that name each argument of its actions.

    describe_payment(user, "credit_card_7815826")     # 'mastercard credit card ending in 9212'
    describe_item({"name": "Water Bottle", "options": {...}})   # 'Water Bottle (capacity: 1000ml, ...)'
    needs = write_needs(write, user)                   # [Need("order_id", ("#W2611340",)), ...]
    missing(instruction, needs)                        # the needs whose phrases the text does not contain

A `Need` is one argument an action needs and the phrases (case-folded, whitespace collapsed) the intent must
contain for a reader to recover it: the order id; each item's product name and option values; each target
item's option values; the payment method's kind (plus the card's last four digits, or the id when the user
holds two methods of one description); the cancel reason; every non-empty address field; and how to
authenticate (the email, or first name, last name and zip). The needs come from the sampled facts, never from
a template's text, so a template or an LLM rewording is checked against what the actions need.
Not covered: paraphrases (a reworded intent that writes "1 litre" for "1L" fails the check by design).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ADDRESS_FIELDS = ("address1", "address2", "city", "state", "country", "zip")


@dataclass(frozen=True)
class Need:
    """One argument the actions need (`arg`, e.g. "order_id" or "item[0]") and the phrases naming it."""

    arg: str
    phrases: tuple[str, ...]


def fold(text: str) -> str:
    """Case-folded text with whitespace collapsed (what the checks compare)."""
    return " ".join(str(text).casefold().split())


def options_text(options: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in options.items())


def describe_item(item: Mapping[str, Any]) -> str:
    """'Water Bottle (capacity: 1000ml, material: glass)': a product by its name and options."""
    return f"{item['name']} ({options_text(item['options'])})"


def describe_address(address: Mapping[str, Any]) -> str:
    parts = [address["address1"], address.get("address2") or "", address["city"],
             f"{address['state']} {address['zip']}", address["country"]]
    return ", ".join(p for p in parts if p)


def _payment_base(method: Mapping[str, Any]) -> str:
    source = method.get("source")
    if source == "credit_card":
        return f"{method.get('brand', '')} credit card ending in {method.get('last_four', '')}".strip()
    if source == "paypal":
        return "PayPal account"
    if source == "gift_card":
        return "gift card"
    return str(method.get("id", source))


def describe_payment(user: Mapping[str, Any], method_id: str) -> str:
    """The method as a customer would name it; with the id appended when another of the user's methods reads
    the same (two gift cards, two PayPal accounts)."""
    methods = user["payment_methods"]
    base = _payment_base(methods[method_id])
    twins = [m for mid, m in methods.items() if mid != method_id and _payment_base(m) == base]
    return f"{base} ({method_id})" if twins else base


def payment_need(user: Mapping[str, Any], method_id: str, arg: str = "payment_method") -> Need:
    method = user["payment_methods"][method_id]
    kind = {"credit_card": "credit card", "paypal": "paypal", "gift_card": "gift card"}.get(method["source"],
                                                                                            method_id)
    phrases = [kind]
    if method["source"] == "credit_card" and method.get("last_four"):
        phrases.append(str(method["last_four"]))
    if describe_payment(user, method_id).endswith(f"({method_id})"):
        phrases.append(method_id)
    return Need(arg, tuple(phrases))


def item_need(item: Mapping[str, Any], arg: str) -> Need:
    return Need(arg, (str(item["name"]), *(str(v) for v in item["options"].values())))


def target_need(old: Mapping[str, Any], new_options: Mapping[str, Any], arg: str) -> Need:
    """The target variant's option values that differ from the item's (the rest stay as they are)."""
    changed = [str(v) for k, v in new_options.items() if old["options"].get(k) != v]
    return Need(arg, tuple(changed or (str(v) for v in new_options.values())))


def address_need(address: Mapping[str, Any], arg: str = "address") -> Need:
    return Need(arg, tuple(str(address[f]) for f in ADDRESS_FIELDS if str(address.get(f) or "")))


def auth_needs(user: Mapping[str, Any], method: str) -> list[Need]:
    if method == "email":
        return [Need("email", (user["email"],))]
    return [Need("first_name", (user["name"]["first_name"],)), Need("last_name", (user["name"]["last_name"],)),
            Need("zip", (user["address"]["zip"],))]


def write_needs(write: Mapping[str, Any], user: Mapping[str, Any]) -> list[Need]:
    """The needs of one sampled write (`Write.facts` shape, see `synth.envtasks.sampler`)."""
    kind, f = write["kind"], write
    needs: list[Need] = []
    if kind != "modify_user_address":
        needs.append(Need("order_id", (f["order_id"],)))
    for i, item in enumerate(f.get("items", ())):
        needs.append(item_need(item, f"item[{i}]"))
    for i, (item, target) in enumerate(zip(f.get("items", ()), f.get("targets", ()))):
        needs.append(target_need(item, target, f"new_item[{i}]"))
    if f.get("payment_method_id"):
        needs.append(payment_need(user, f["payment_method_id"]))
    if f.get("reason"):
        needs.append(Need("reason", (f["reason"],)))
    if f.get("address"):
        needs.append(address_need(f["address"]))
    return needs


def missing(instruction: str, needs: Iterable[Need]) -> list[Need]:
    """The needs some of whose phrases `instruction` does not contain (case-folded; ids and numbers as whole
    tokens, so '#W123' does not match inside '#W1234')."""
    text = fold(instruction)
    return [n for n in needs if not all(_contains(text, fold(p)) for p in n.phrases)]


def _contains(text: str, phrase: str) -> bool:
    if not phrase:
        return True
    left = r"(?<![\w#])" if re.match(r"[\w#]", phrase) else ""
    right = r"(?!\w)" if re.search(r"\w$", phrase) else ""
    return re.search(left + re.escape(phrase) + right, text) is not None


def need_names(needs: Sequence[Need]) -> list[str]:
    return [n.arg for n in needs]


__all__ = ["ADDRESS_FIELDS", "Need", "address_need", "auth_needs", "describe_address", "describe_item",
           "describe_payment", "fold", "item_need", "missing", "need_names", "options_text", "payment_need",
           "target_need", "write_needs"]
