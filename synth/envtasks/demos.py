"""Teacher-free env demonstrations: a task's gold tool calls, scripted, played through the real env engine.

    result = build_env_demos(rows, Vocab(load_tokenizer("default")))     # synth.demos.DemoResult
    write_demos("out/demos", result)     # trajectories.jsonl + stats.json, as `agentic synth demos` writes them

For each task row (a synthesized one, or a line of retail_tasks_train.jsonl) `demo_script` lays out what a
careful agent does, from the gold actions alone:
1. authenticate (the row's own call, else `find_user_id_by_email` when the instruction gives the email,
   `find_user_id_by_name_zip` otherwise, with the user's record from the database) and `get_user_details`;
2. before each gold write: `get_order_details` of its order and `get_product_details` of each product whose
   item changes (unless the row already has those reads), then a message listing the action and asking to
   confirm (the policy's rule; the instruction-following user answers "yes"), then the write;
   a gold write that the tools refuse on a fresh replay (some train tasks refuse on purpose) is not called;
3. a final message that states the required outputs (and what could not be done).
Each tool call is the env engine's dialect (`<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`),
each message plain text; `synth.demos.ScriptedPolicy` plays them through `EnvAgent` over the real `RetailEnv`,
so prompts, tool results and user replies are spliced exactly as in a sampled episode, and the ids are the
target tokenizer's (`Vocab`: by default the embedded SmolLM2 GGUF's): `token_exact`, observations masked.
A demo is kept only when the env's verdict is reward 1 (`rewards["env_reward"]`), the episode ended on the
final message, and every scripted turn was used; else it is counted under its reason (`reward_0:<checks>`,
`unfinished:<finish reason>`, `script_unused`). Nothing is sampled: model segments are marked `scripted` and
`metadata["demonstration"]` is True (not on-policy RL data). Not covered: the LLM user (demos use the
instruction-following user).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from agentic_infer.engines.dialects import get_dialect
from agentic_infer.engines.env_agent import EnvAgent, EnvAgentConfig
from agentic_infer.envs.retail import WRITE_TOOLS, replay
from agentic_infer.envs.retail.db import load_tables
from agentic_infer.types import Trajectory
from synth.demos import DemoResult, ScriptedPolicy, Vocab
from synth.envtasks.facts import describe_address
from synth.envtasks.sampler import auth_call

AUTH_TOOLS = frozenset({"find_user_id_by_email", "find_user_id_by_name_zip"})


def tool_call_text(name: str, arguments: Mapping[str, Any], dialect: str = "tool_calls") -> str:
    """One tool call as the env engine's dialect writes it."""
    tag = get_dialect(dialect).actions[0]
    return f"{tag.begin}\n{json.dumps({'name': name, 'arguments': dict(arguments)}, ensure_ascii=False)}\n{tag.end}"


def describe_write(name: str, kw: Mapping[str, Any]) -> str:
    """A write in words, for the confirmation message."""
    items = ", ".join(kw.get("item_ids", ()))
    new = ", ".join(kw.get("new_item_ids", ()))
    if name == "cancel_pending_order":
        return f"cancel order {kw['order_id']} (reason: {kw['reason']})"
    if name in ("modify_pending_order_address", "modify_user_address"):
        where = f"the shipping address of order {kw['order_id']}" if "order_id" in kw else "your default address"
        return f"change {where} to {describe_address(kw)}"
    if name == "modify_pending_order_payment":
        return f"pay for order {kw['order_id']} with {kw['payment_method_id']} instead"
    if name == "return_delivered_order_items":
        return f"return the items {items} of order {kw['order_id']}, refunded to {kw['payment_method_id']}"
    verb = "modify" if name == "modify_pending_order_items" else "exchange"
    return (f"{verb} the items {items} of order {kw['order_id']} to the items {new}, settling the price "
            f"difference with {kw['payment_method_id']}")


def _product_of(tables: Mapping[str, Any], order_id: str, item_id: str) -> str | None:
    order = tables["orders"].get(order_id) or {}
    return next((i["product_id"] for i in order.get("items", ()) if i["item_id"] == item_id), None)


def demo_calls(row: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The calls a careful agent makes for `row` (steps 1-2 of the module docstring, refused writes kept in
    place, flagged by `demo_script`)."""
    actions = [{"name": a["name"], "kwargs": dict(a.get("kwargs", {}))} for a in row["actions"]]
    if any(a["name"] in AUTH_TOOLS for a in actions):
        return actions  # a synthesized row: its gold sequence already authenticates and looks up
    user = tables["users"][row["user_id"]]
    method = "email" if user["email"].lower() in str(row.get("instruction", "")).lower() else "name_zip"
    calls = [auth_call(user, method), {"name": "get_user_details", "kwargs": {"user_id": row["user_id"]}}]
    seen: set[tuple[str, str]] = set()
    for a in actions:
        if a["name"] in WRITE_TOOLS and "order_id" in a["kwargs"]:
            reads = [("get_order_details", "order_id", a["kwargs"]["order_id"])]
            for item in a["kwargs"].get("item_ids", ()) if "new_item_ids" in a["kwargs"] else ():
                pid = _product_of(tables, a["kwargs"]["order_id"], item)
                if pid:
                    reads.append(("get_product_details", "product_id", pid))
            for name, key, value in reads:
                if (name, value) not in seen:
                    seen.add((name, value))
                    calls.append({"name": name, "kwargs": {key: value}})
        calls.append(a)
    return calls


def demo_script(row: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]], *,
                dialect: str = "tool_calls") -> tuple[list[str], dict[str, Any]]:
    """The scripted assistant turns and what they contain (calls, confirmations, skipped refused writes)."""
    calls = demo_calls(row, tables)
    probe = replay(calls)  # which calls the tools refuse, in this order, on a fresh database
    turns: list[str] = []
    skipped: list[str] = []
    played = 0
    for call, record in zip(calls, probe.calls, strict=True):
        if record.error and call["name"] in WRITE_TOOLS:
            skipped.append(f"{describe_write(call['name'], call['kwargs'])}: {record.output}")
            continue
        if call["name"] in WRITE_TOOLS:
            turns.append(f"To confirm, I will {describe_write(call['name'], call['kwargs'])}. "
                         "Do you confirm (yes/no)?")
        turns.append(tool_call_text(call["name"], call["kwargs"], dialect))
        played += 1
    final = "Everything you asked for is done." if not skipped else "The rest is done, but I could not " + \
        "; ".join(skipped) + "."
    if row.get("outputs"):
        final += " For your information: " + "; ".join(str(o) for o in row["outputs"]) + "."
    turns.append(final)
    return turns, {"calls": played, "skipped_writes": skipped, "confirmations": sum(
        1 for c in calls if c["name"] in WRITE_TOOLS) - len(skipped)}


def _reason(traj: Trajectory, policy: ScriptedPolicy) -> str | None:
    if traj.finish_reason != "answer":
        return f"unfinished:{traj.finish_reason}"
    if policy.calls != len(policy.replies):
        return "script_unused"
    if traj.rewards.get("env_reward") != 1.0:
        failed = sorted((traj.metadata.get("verdict") or {}).get("failed", {}))
        return "reward_0:" + ",".join(failed)
    return None


async def play_script(row: Mapping[str, Any], turns: Sequence[str], vocab: Vocab, *, env: str, calls: int,
                      dialect: str = "tool_calls", info: Mapping[str, Any] | None = None,
                      agent: Mapping[str, Any] | None = None) -> tuple[Trajectory, str | None]:
    """Scripted `turns` played by `EnvAgent` over `make_env(env, row)`: the demonstration and its rejection
    reason (None: verified, reward 1). `calls`: the tool calls the script makes (the engine's budget). `agent`:
    further `EnvAgentConfig` settings, e.g. {"tool_schemas": "compact"}: the prompt a policy will be run with."""
    policy = ScriptedPolicy(vocab, list(turns))
    engine = EnvAgent(policy, EnvAgentConfig(env=env, dialect=dialect, max_calls=calls + 1,
                                             max_turns=len(turns) + 1, max_tokens_per_turn=1 << 14,
                                             max_total_tokens=1 << 22), **dict(agent or {}))
    traj = (await engine.run(dict(row))).trajectories[0]
    for seg in traj.segments:
        if seg.kind == "model":
            seg.metadata["scripted"] = True
    reason = _reason(traj, policy)
    traj.id, traj.group_id = f"{row['id']}/demo-0", str(row["id"])
    traj.metadata.update({"demonstration": True, "scripted_turns": len(turns),
                          "demo": {"source": str(row["id"]), **(info or {}), "verified": reason is None,
                                   "reason": reason, "vocab": vocab.source}})
    traj.usage.llm_calls = 0  # nothing was sampled
    return traj, reason


async def build_env_demo(row: Mapping[str, Any], vocab: Vocab, *, env: str = "retail",
                         tables: Mapping[str, Mapping[str, Any]] | None = None,
                         dialect: str = "tool_calls",
                         agent: Mapping[str, Any] | None = None) -> tuple[Trajectory, str | None]:
    """One demonstration of a retail `row` and its rejection reason (None: verified, reward 1)."""
    tables = tables if tables is not None else load_tables()
    turns, info = demo_script(row, tables, dialect=dialect)
    return await play_script(row, turns, vocab, env=env, calls=info["calls"], dialect=dialect, info=info,
                             agent=agent)


def collect(built: Sequence[tuple[Trajectory, str | None]], *, step: str, env: str, vocab: Vocab, wall: float,
            dialect: str = "tool_calls") -> DemoResult:
    """The verified demonstrations of `built` and their stats (tried, kept, rejected by reason, tokens)."""
    result = DemoResult(trajectories=[t for t, reason in built if reason is None])
    rejected = Counter(reason for _, reason in built if reason is not None)
    result.stats = {"step": step, "env": env, "tried": len(built), "kept": len(result.trajectories),
                    "rejected": dict(rejected), "tokens": sum(len(t.token_ids()) for t in result.trajectories),
                    "wall_s": round(wall, 3), "demos_per_min": round(len(result.trajectories) / wall * 60, 1)
                    if wall > 0 else None, "vocab": vocab.source, "dialect": dialect}
    return result


def build_env_demos(rows: Sequence[Mapping[str, Any]], vocab: Vocab, *, env: str = "retail",
                    dialect: str = "tool_calls", agent: Mapping[str, Any] | None = None) -> DemoResult:
    """Verified demonstrations of retail `rows` (reward 1 only) and the run's stats (`collect`)."""
    t0 = time.perf_counter()
    tables = load_tables()

    async def go() -> list[tuple[Trajectory, str | None]]:
        return [await build_env_demo(row, vocab, env=env, tables=tables, dialect=dialect, agent=agent)
                for row in rows]

    built = asyncio.run(go())
    return collect(built, step="envdemos", env=env, vocab=vocab, wall=time.perf_counter() - t0, dialect=dialect)


__all__ = ["build_env_demo", "build_env_demos", "collect", "demo_calls", "demo_script", "describe_write",
           "play_script", "tool_call_text"]
