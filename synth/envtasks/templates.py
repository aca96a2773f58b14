"""Intent templates: a sampled task's facts as the user's instruction, one sentence per part.

    text, ids = render_intent(task, tables, rng=random.Random(task.seed))
    # "Your name is Omar Anderson and your zip code is 19031. Cancel order #W7602708 because no longer needed."
    # ids == ["auth/name_zip:0", "cancel:1"]

Each part has a few wordings (`TEMPLATES[part]`), drawn per task from the task's own rng, so one seed always
gives one text. Every wording names everything its write needs (`synth.envtasks.facts.write_needs`): the
order id, each item by its product name and options, the target options, the payment method by kind (and the
card's last four digits), the reason, every address field; the opener says who the user is and how to
authenticate (the email, or the name and zip). `template_coverage()` checks that claim for every wording
(the tests call it). Not covered: LLM rewording (`synth.envtasks.reword`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from synth.envtasks.facts import describe_address, describe_item, describe_payment, options_text
from synth.envtasks.sampler import SampledTask

TEMPLATES: dict[str, tuple[str, ...]] = {
    "auth/email": (
        "Your name is {first} {last} and your email is {email}.",
        "You are {first} {last}; the store knows you by your email {email}.",
    ),
    "auth/name_zip": (
        "Your name is {first} {last} and your zip code is {zip}.",
        "You are {first} {last}, living in zip code {zip}; you do not remember your email.",
    ),
    "cancel": (
        "Cancel order {order_id} because {reason}.",
        "You want to cancel your pending order {order_id}; the reason is '{reason}'.",
    ),
    "modify_order_address": (
        "Change the shipping address of your pending order {order_id} to {address}.",
        "Order {order_id} should ship to {address} instead.",
    ),
    "modify_payment": (
        "For your pending order {order_id}, switch the payment to your {payment}.",
        "You want to pay for order {order_id} with your {payment} instead.",
    ),
    "modify_items": (
        "For your pending order {order_id}, change {changes}; use your {payment} for any price difference.",
        "In order {order_id} (still pending), you want {changes}. Settle the price difference with your "
        "{payment}.",
    ),
    "return": (
        "Return {items} from your delivered order {order_id}; the refund goes to your {payment}.",
        "You received order {order_id} and want to send back {items}, refunded to your {payment}.",
    ),
    "exchange": (
        "For your delivered order {order_id}, exchange {changes}; use your {payment} for the price difference.",
        "You want to exchange items of the delivered order {order_id}: {changes}. Pay or get refunded the "
        "difference with your {payment}.",
    ),
    "modify_user_address": (
        "Update your default address to {address}.",
        "You moved: your new default address is {address}.",
    ),
}


def _join(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def part_values(write: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, str]:
    """The placeholders of a write's templates, filled from its facts."""
    values = {"order_id": str(write.get("order_id", ""))}
    if write.get("reason"):
        values["reason"] = write["reason"]
    if write.get("address"):
        values["address"] = describe_address(write["address"])
    if write.get("payment_method_id"):
        values["payment"] = describe_payment(user, write["payment_method_id"])
    items = write.get("items") or ()
    values["items"] = _join([f"the {describe_item(i)}" for i in items]) if items else ""
    if write.get("targets"):
        values["changes"] = _join([f"the {describe_item(i)} to the one with {options_text(t)}"
                                   for i, t in zip(items, write["targets"])])
    return values


def opener_values(user: Mapping[str, Any]) -> dict[str, str]:
    return {"first": user["name"]["first_name"], "last": user["name"]["last_name"], "email": user["email"],
            "zip": user["address"]["zip"]}


def render_intent(task: SampledTask, tables: Mapping[str, Mapping[str, Any]], *,
                  rng: random.Random | None = None) -> tuple[str, list[str]]:
    """The instruction and the template ids used (`part:wording index`)."""
    rng = rng if rng is not None else random.Random(task.seed)
    user = tables["users"][task.user_id]
    key = f"auth/{task.auth}"
    n = rng.randrange(len(TEMPLATES[key]))
    sentences, ids = [TEMPLATES[key][n].format(**opener_values(user))], [f"{key}:{n}"]
    for write in task.writes:
        n = rng.randrange(len(TEMPLATES[write["kind"]]))
        sentences.append(TEMPLATES[write["kind"]][n].format(**part_values(write, user)))
        ids.append(f"{write['kind']}:{n}")
    return " ".join(sentences), ids


def template_coverage(task: SampledTask, tables: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """For every wording of every part of `task`: the needs it fails to name (`{template id: [arg, ...]}`;
    empty lists everywhere when every wording names every argument)."""
    from synth.envtasks.facts import auth_needs, missing, write_needs

    user = tables["users"][task.user_id]
    out: dict[str, list[str]] = {}
    key = f"auth/{task.auth}"
    for n, text in enumerate(TEMPLATES[key]):
        out[f"{key}:{n}"] = [m.arg for m in missing(text.format(**opener_values(user)), auth_needs(user, task.auth))]
    for w, write in enumerate(task.writes):
        for n, text in enumerate(TEMPLATES[write["kind"]]):
            out[f"{write['kind']}:{n}@{w}"] = [m.arg for m in missing(text.format(**part_values(write, user)),
                                                                    write_needs(write, user))]
    return out


__all__ = ["TEMPLATES", "opener_values", "part_values", "render_intent", "template_coverage"]
