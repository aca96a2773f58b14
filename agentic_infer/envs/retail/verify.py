"""The retail verdict: the end state, the write actions and the required outputs, each a named check.

    verdict = verify_episode(env.db, env.calls, gold.db, gold.calls, outputs, said=[*messages, response])
    verdict.reward            # 1.0 iff "state", "actions" and "outputs" all pass (tau-bench's reward is binary)
    verdict.failed            # {"state": "orders.#W1.status: ...", ...}

- "state": the env's database equals, as canonical data (lists as multisets, floats rounded: not tau-bench's
  ordered string hash, tau2-bench #514), the one that replaying the gold actions on a fresh copy gives; the
  detail lists the differing paths. Both databases share one base, so only the records either of them
  wrote are compared: equal to comparing the whole tables, without canonicalising 2 MB per verdict.
- "actions" (tau2-bench #224: a state check alone passes tasks whose expected actions were never taken): the
  agent's SUCCESSFUL write calls equal, as a multiset of (tool, canonical arguments), the gold write calls
  that succeed when the gold actions are replayed. A gold write that the tools refuse (some tasks refuse on
  purpose: e.g. cancelling an order that is no longer pending) is not required: a careful agent checks the
  order first and does not call it, and calling it anyway is harmless because it is refused again. Refused
  calls of the agent and read-only calls (lookups, think, calculate, transfer) are free.
- "outputs": every required output, lower-cased, occurs in something the agent said (the final response or
  an earlier message to the user), with commas removed from what was said, as tau-bench checks it.
Not covered: the policy's conversational rules (authentication before acting, confirmation before writes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentic_infer.envs.base import CallRecord, Check, EnvVerdict, canonical, canonical_text, state_diff
from agentic_infer.envs.retail.db import RetailDB
from agentic_infer.envs.retail.tools import WRITE_TOOLS


def successful_writes(calls: Sequence[CallRecord]) -> list[CallRecord]:
    """The write calls that were not refused."""
    return [c for c in calls if c.name in WRITE_TOOLS and not c.error]


def _key(call: CallRecord) -> tuple[str, str]:
    return call.name, canonical_text(call.arguments)


def check_state(db: RetailDB, gold_db: RetailDB) -> Check:
    keys = db.touched() | gold_db.touched()
    mine, gold = db.sub_state(keys), gold_db.sub_state(keys)
    if canonical(mine) == canonical(gold):
        return Check("state", True, f"equal to the gold end state ({len(keys)} records written)", "state")
    diff = state_diff(mine, gold)
    return Check("state", False, "differs from the gold end state (this env != gold): " + "; ".join(diff), "state")


def check_actions(calls: Sequence[CallRecord], gold_calls: Sequence[CallRecord]) -> Check:
    mine, gold = Counter(map(_key, successful_writes(calls))), Counter(map(_key, successful_writes(gold_calls)))
    missing, extra = gold - mine, mine - gold
    refused_gold = sum(1 for c in gold_calls if c.name in WRITE_TOOLS and c.error)
    note = f" ({refused_gold} refused gold write(s) not required)" if refused_gold else ""
    if not missing and not extra:
        return Check("actions", True, f"{sum(gold.values())} gold write(s) done, none beyond them{note}", "actions")
    parts = []
    if missing:
        parts.append("gold writes not done: " + "; ".join(f"{n}({a})" for (n, a) in missing.elements()))
    if extra:
        parts.append("writes beyond the gold: " + "; ".join(f"{n}({a})" for (n, a) in extra.elements()))
    return Check("actions", False, " | ".join(parts) + note, "actions")


def check_outputs(outputs: Sequence[str], said: Sequence[str]) -> Check:
    texts = [s.lower().replace(",", "") for s in said if s]
    missing = [o for o in outputs if not any(o.lower() in t for t in texts)]
    if not outputs:
        return Check("outputs", True, "no outputs required", "outputs")
    if missing:
        return Check("outputs", False, f"not stated: {missing!r} (of {list(outputs)!r})", "outputs")
    return Check("outputs", True, f"all {len(outputs)} stated", "outputs")


def verify_episode(db: RetailDB, calls: Sequence[CallRecord], gold_db: RetailDB, gold_calls: Sequence[CallRecord],
                   outputs: Sequence[str], *, said: Sequence[str]) -> EnvVerdict:
    """The three checks and the binary reward (per-check results also in `info["checks"]`)."""
    checks = [check_state(db, gold_db), check_actions(calls, gold_calls), check_outputs(outputs, said)]
    reward = 1.0 if all(c.passed for c in checks) else 0.0
    info: dict[str, Any] = {"checks": {c.name: c.passed for c in checks},
                            "gold_writes": len(successful_writes(gold_calls)),
                            "writes": len(successful_writes(calls))}
    return EnvVerdict(reward, checks, info)
