"""AgentScaler-style task sampling: a valid tool-call sequence over the retail tool graph and the REAL database.

    from agentic_infer.envs.retail.db import load_tables
    task, reason = sample_task(load_tables(), seed=task_seed(0, 7))     # (SampledTask, None) or (None, reason)
    task.actions      # [{"name": "find_user_id_by_email", "kwargs": {...}}, {"name": "get_user_details", ...}, ...]
    task.writes       # the facts of each write (kind, order id, items, targets, payment method, reason, address)

One sequence is: authenticate (`find_user_id_by_email`, or `find_user_id_by_name_zip`) -> look up
(`get_user_details`, then `get_order_details` of each order acted on, `get_product_details` of each product
whose item changes) -> act: one or more writes whose preconditions hold on the state so far (tau-bench's
semantics, `agentic_infer.envs.retail.tools`):

| kind | tool | precondition (what the sampler picks) |
|---|---|---|
| cancel | cancel_pending_order | a pending order; one of the two allowed reasons |
| modify_order_address | modify_pending_order_address | a pending order; another real user's address |
| modify_payment | modify_pending_order_payment | a pending order paid once; another of the user's methods |
| modify_items | modify_pending_order_items | a pending order; 1..max_items items, each to another available |
| | | variant of its product; a payment method |
| return | return_delivered_order_items | a delivered order; 1..max_items items; the original method or a gift card |
| exchange | exchange_delivered_order_items | a delivered order; as modify_items |
| modify_user_address | modify_user_address | another real user's address |

A gift card is chosen only when its balance covers the amount (the order's total, or the price difference).
Each write is executed by the real tool on this task's copy of the database (`RetailDB`) before the next is
picked, so later writes see earlier ones (a gift card's balance, an order already acted on: at most one write
per order, as the policy allows modify/exchange once). A refused write (a sampler bug) makes the task fail
with reason `gold_refused:<tool>`. Everything is drawn from `random.Random(seed)`: one seed, one task.
Not covered: info requests with required outputs, transfers to a human, refused-on-purpose gold calls.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.envs.base import Refusal
from agentic_infer.envs.retail.db import RetailDB
from agentic_infer.envs.retail.tools import CANCEL_REASONS, TOOLS
from agentic_infer.errors import ConfigError
from synth.envtasks.facts import ADDRESS_FIELDS

WRITE_KINDS = ("cancel", "modify_order_address", "modify_payment", "modify_items", "return", "exchange",
               "modify_user_address")
TOOL_OF = {"cancel": "cancel_pending_order", "modify_order_address": "modify_pending_order_address",
           "modify_payment": "modify_pending_order_payment", "modify_items": "modify_pending_order_items",
           "return": "return_delivered_order_items", "exchange": "exchange_delivered_order_items",
           "modify_user_address": "modify_user_address"}
KIND_OF = {tool: kind for kind, tool in TOOL_OF.items()}
AUTH_METHODS = ("email", "name_zip")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SamplerConfig:
    """`kinds`: write kinds to draw the first write from (uniformly); `max_writes`: writes per task (1..this,
    `p_extra` the chance of each further one); `max_items`: items per item-level write; `auth`: methods."""

    kinds: tuple[str, ...] = WRITE_KINDS
    max_writes: int = 2
    p_extra: float = 0.35
    max_items: int = 2
    auth: tuple[str, ...] = AUTH_METHODS

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", tuple(self.kinds))
        object.__setattr__(self, "auth", tuple(self.auth))
        bad = [k for k in self.kinds if k not in WRITE_KINDS]
        if not self.kinds or bad:
            raise ConfigError(f"SamplerConfig.kinds={self.kinds!r}: choose from {', '.join(WRITE_KINDS)}")
        if not self.auth or any(a not in AUTH_METHODS for a in self.auth):
            raise ConfigError(f"SamplerConfig.auth={self.auth!r}: choose from {AUTH_METHODS}")
        for name in ("max_writes", "max_items"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"SamplerConfig.{name}={v!r}: must be an integer >= 1")
        if not 0.0 <= self.p_extra <= 1.0:
            raise ConfigError(f"SamplerConfig.p_extra={self.p_extra!r}: must be a probability in [0, 1]")


@dataclass
class SampledTask:
    """A sampled sequence: who, how they authenticate, the writes' facts and the whole gold action list."""

    seed: int
    user_id: str
    auth: str
    writes: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def kinds(self) -> list[str]:
        return [w["kind"] for w in self.writes]


def task_seed(seed: int, index: int) -> int:
    """The seed of task `index` of a run seeded `seed` (stable across Python versions and processes)."""
    return int.from_bytes(hashlib.sha256(f"envtasks:{seed}:{index}".encode()).digest()[:6], "big")


def _call(name: str, **kwargs: Any) -> dict[str, Any]:
    return {"name": name, "kwargs": kwargs}


class _Draw:
    """One task's drawing: the rng, the database copy the writes run on, the orders already acted on."""

    def __init__(self, tables: Mapping[str, Mapping[str, Any]], rng: random.Random, cfg: SamplerConfig):
        self.db, self.rng, self.cfg = RetailDB(tables), rng, cfg
        self.used: set[str] = set()
        self.user_address_done = False

    def user(self, uid: str) -> dict[str, Any]:
        return self.db.user(uid)

    def orders(self, uid: str, status: str) -> list[str]:
        return [o for o in self.user(uid)["orders"]
                if o not in self.used and (self.db.order(o) or {}).get("status") == status]

    def address(self, current: Mapping[str, Any]) -> dict[str, Any]:
        users = self.db.tables["users"]
        for _ in range(20):
            other = users[self.rng.choice(sorted(users))]["address"]
            if dict(other) != dict(current):
                return {f: other.get(f, "") for f in ADDRESS_FIELDS}
        raise ConfigError("the retail users table has no two distinct addresses")

    def methods(self, uid: str, *, cover: float | None = None, exclude: str | None = None,
                only: set[str] | None = None) -> list[str]:
        out = []
        for mid, m in sorted(self.user(uid)["payment_methods"].items()):
            if mid == exclude or (only is not None and mid not in only and m["source"] != "gift_card"):
                continue
            if cover is not None and m["source"] == "gift_card" and m.get("balance", 0) < cover:
                continue
            out.append(mid)
        return out

    def item_changes(self, order: Mapping[str, Any]) -> tuple[list[dict], list[dict], list[str]]:
        """Distinct items of the order (1..max_items) and for each another available variant of its product."""
        seen, choices = set(), []
        for item in order["items"]:
            if item["item_id"] in seen:
                continue
            seen.add(item["item_id"])
            variants = [v for vid, v in sorted(self.db.product(item["product_id"])["variants"].items())
                        if v["available"] and vid != item["item_id"]]
            if variants:
                choices.append((item, variants))
        if not choices:
            return [], [], []
        picked = self.rng.sample(choices, self.rng.randint(1, min(self.cfg.max_items, len(choices))))
        items, targets, new_ids = [], [], []
        for item, variants in picked:
            v = self.rng.choice(variants)
            items.append({k: item[k] for k in ("name", "product_id", "item_id", "options")})
            targets.append(dict(v["options"]))
            new_ids.append(v["item_id"])
        return items, targets, new_ids

    # -- one proposal per kind: the facts of a write whose preconditions hold, or None ------------------
    def propose(self, kind: str, uid: str) -> dict[str, Any] | None:
        rng = self.rng
        if kind == "modify_user_address":
            if self.user_address_done:
                return None
            return {"kind": kind, "user_id": uid, "address": self.address(self.user(uid)["address"])}
        status = "delivered" if kind in ("return", "exchange") else "pending"
        orders = self.orders(uid, status)
        rng.shuffle(orders)
        for oid in orders:
            order = self.db.order(oid)
            facts: dict[str, Any] = {"kind": kind, "order_id": oid}
            if kind == "cancel":
                facts["reason"] = rng.choice(CANCEL_REASONS)
            elif kind == "modify_order_address":
                facts["address"] = self.address(order["address"])
            elif kind == "modify_payment":
                history = order["payment_history"]
                if len(history) != 1 or history[0]["transaction_type"] != "payment":
                    continue
                options = self.methods(uid, cover=history[0]["amount"], exclude=history[0]["payment_method_id"])
                if not options:
                    continue
                facts["payment_method_id"] = rng.choice(options)
            elif kind == "return":
                items = sorted({i["item_id"]: i for i in order["items"]}.values(), key=lambda i: i["item_id"])
                picked = rng.sample(items, rng.randint(1, min(self.cfg.max_items, len(items))))
                options = self.methods(uid, only={order["payment_history"][0]["payment_method_id"]})
                if not options:
                    continue
                facts["items"] = [{k: i[k] for k in ("name", "product_id", "item_id", "options")} for i in picked]
                facts["payment_method_id"] = rng.choice(options)
            else:  # modify_items, exchange
                items, targets, new_ids = self.item_changes(order)
                if not items:
                    continue
                diff = sum(self.db.product(i["product_id"])["variants"][n]["price"] - next(
                    x["price"] for x in order["items"] if x["item_id"] == i["item_id"])
                    for i, n in zip(items, new_ids))
                options = self.methods(uid, cover=round(diff, 2))
                if not options:
                    continue
                facts.update(items=items, targets=targets, new_item_ids=new_ids,
                             payment_method_id=rng.choice(options))
            return facts
        return None

    def write_call(self, facts: Mapping[str, Any]) -> dict[str, Any]:
        kind = facts["kind"]
        if kind == "modify_user_address":
            return _call(TOOL_OF[kind], user_id=facts["user_id"], **facts["address"])
        if kind == "modify_order_address":
            return _call(TOOL_OF[kind], order_id=facts["order_id"], **facts["address"])
        if kind == "cancel":
            return _call(TOOL_OF[kind], order_id=facts["order_id"], reason=facts["reason"])
        if kind == "modify_payment":
            return _call(TOOL_OF[kind], order_id=facts["order_id"], payment_method_id=facts["payment_method_id"])
        if kind == "return":
            return _call(TOOL_OF[kind], order_id=facts["order_id"], item_ids=[i["item_id"] for i in facts["items"]],
                         payment_method_id=facts["payment_method_id"])
        return _call(TOOL_OF[kind], order_id=facts["order_id"], item_ids=[i["item_id"] for i in facts["items"]],
                     new_item_ids=list(facts["new_item_ids"]), payment_method_id=facts["payment_method_id"])

    def execute(self, call: Mapping[str, Any]) -> None:
        TOOLS[call["name"]](self.db, **call["kwargs"])


def auth_call(user: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The authentication call for `user` by `method` ("email" or "name_zip")."""
    if method == "email":
        return _call("find_user_id_by_email", email=user["email"])
    return _call("find_user_id_by_name_zip", first_name=user["name"]["first_name"],
                 last_name=user["name"]["last_name"], zip=user["address"]["zip"])


def lookups(facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The reads before a write: the order's details, then each changed product's details."""
    if "order_id" not in facts:
        return []
    calls = [_call("get_order_details", order_id=facts["order_id"])]
    if "targets" in facts:
        for pid in dict.fromkeys(i["product_id"] for i in facts["items"]):
            calls.append(_call("get_product_details", product_id=pid))
    return calls


def sample_task(tables: Mapping[str, Mapping[str, Any]], seed: int,
                config: SamplerConfig = SamplerConfig()) -> tuple[SampledTask | None, str | None]:
    """One task drawn with `random.Random(seed)` (see the module docstring): `(task, None)` or `(None, reason)`."""
    rng = random.Random(seed)
    draw = _Draw(tables, rng, config)
    first = rng.choice(config.kinds)
    users = sorted(tables["users"])
    rng.shuffle(users)
    uid, facts = next(((u, f) for u in users for f in [draw.propose(first, u)] if f is not None), (None, None))
    if uid is None or facts is None:
        return None, f"no_candidate:{first}"
    task = SampledTask(seed=seed, user_id=uid, auth=rng.choice(config.auth))
    task.actions = [auth_call(draw.user(uid), task.auth), _call("get_user_details", user_id=uid)]
    while facts is not None:
        call = draw.write_call(facts)
        try:
            draw.execute(call)
        except Refusal as e:
            log.warning("seed %d: the tools refused the sampled %s (%s); dropped", seed, call["name"], e)
            return None, f"gold_refused:{call['name']}"
        facts["action"] = call
        task.writes.append(facts)
        task.actions += lookups(facts) + [call]
        if facts.get("order_id"):
            draw.used.add(facts["order_id"])
        draw.user_address_done |= facts["kind"] == "modify_user_address"
        facts = None
        if len(task.writes) < config.max_writes and rng.random() < config.p_extra:
            kinds = list(WRITE_KINDS)
            rng.shuffle(kinds)
            facts = next((f for k in kinds for f in [draw.propose(k, uid)] if f is not None), None)
    return task, None


__all__ = ["AUTH_METHODS", "KIND_OF", "TOOL_OF", "WRITE_KINDS", "SampledTask", "SamplerConfig", "auth_call",
           "lookups", "sample_task", "task_seed"]
