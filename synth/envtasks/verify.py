"""A synthesized task as a retail task row, and the two checks that keep it: it replays, and its intent says enough.

    row = task_row(task, instruction, tables, template=ids, index=7, run_seed=0)
    reason = check_task(row, tables)          # None: keep; else "replay_mismatch", "intent_missing:order_id", ...

The row is in the retail task format (`make_env("retail", row)` runs it, the retail verifier scores it):
`{id, user_id, instruction, actions: [{name, kwargs}], outputs: [], annotator: "synth", provenance}`, with
`provenance = {kinds, seed, run_seed, index, template (ids) or prompt, digest, writes (the sampled facts)}`.

`digest` is `written_digest` of the sampler's database after the gold actions: the SHA-256 of the canonical
records the actions wrote (every env shares one base database, so two end states are equal iff these records
agree: the retail verifier's own argument). `check_task` replays the gold actions through the real env
(`agentic_infer.envs.retail.replay`) and drops the task, with the first reason that applies, when:
- `gold_refused:<tool>`: a gold call is refused on replay;
- `no_change`: the actions wrote nothing;
- `replay_mismatch`: the fresh replay's digest differs from the row's;
- `intent_missing:<arg>`: the instruction does not name what an action needs (`synth.envtasks.facts`:
  how to authenticate, the order id, the items, the target options, the payment method, the reason, the address).
Not covered: whether an LLM could solve it (the demos check the gold path only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentic_infer.envs.base import state_digest
from agentic_infer.envs.retail import replay
from agentic_infer.envs.retail.db import RetailDB
from synth.envtasks.facts import Need, auth_needs, missing, write_needs
from synth.envtasks.sampler import SampledTask

ANNOTATOR = "synth"


def written_digest(db: RetailDB) -> str:
    """The digest of the records `db` wrote over the shared base (see the module docstring)."""
    return state_digest(db.sub_state(db.touched()))


def gold_db(actions: Sequence[Mapping[str, Any]]) -> RetailDB:
    """The database after the gold actions, executed by the sampler's tools on a fresh copy."""
    from agentic_infer.envs.retail.db import load_tables
    from agentic_infer.envs.retail.tools import TOOLS

    db = RetailDB(load_tables())
    for a in actions:
        TOOLS[a["name"]](db, **a["kwargs"])
    return db


def task_needs(row: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]]) -> list[Need]:
    """Every argument the row's actions need from its intent (authentication first, then each write)."""
    prov = row.get("provenance") or {}
    user = tables["users"][row["user_id"]]
    needs = auth_needs(user, prov.get("auth", "email"))
    for write in prov.get("writes", ()):
        needs += write_needs(write, user)
    return needs


def task_row(task: SampledTask, instruction: str, *, digest: str, index: int, run_seed: int,
             template: Sequence[str] = (), prompt: str | None = None, env: str = "retail") -> dict[str, Any]:
    """The retail task row of a sampled task (see the module docstring)."""
    writes = [{k: v for k, v in w.items() if k != "action"} for w in task.writes]
    provenance: dict[str, Any] = {"kinds": task.kinds, "seed": task.seed, "run_seed": run_seed, "index": index,
                                  "auth": task.auth, "template": list(template), "digest": digest,
                                  "writes": writes}
    if prompt is not None:
        provenance["prompt"] = prompt
    return {"id": f"{env}-synth-{run_seed}-{index}", "user_id": task.user_id, "instruction": instruction,
            "actions": [dict(a) for a in task.actions], "outputs": [], "annotator": ANNOTATOR,
            "provenance": provenance}


def check_task(row: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]]) -> str | None:
    """None when the row replays to its digest and its intent names every needed argument; else the reason."""
    env = replay(row["actions"])
    refused = next((c for c in env.calls if c.error), None)
    if refused is not None:
        return f"gold_refused:{refused.name}"
    if not env.db.touched():
        return "no_change"
    if written_digest(env.db) != (row.get("provenance") or {}).get("digest"):
        return "replay_mismatch"
    gaps = missing(row["instruction"], task_needs(row, tables))
    if gaps:
        return f"intent_missing:{gaps[0].arg}"
    return None


__all__ = ["ANNOTATOR", "check_task", "gold_db", "task_needs", "task_row", "written_digest"]
