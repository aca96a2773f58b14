"""The Env base: calls never raise, the call log, canonical digests, snapshot/restore, verdict shape, the registry."""

import pytest

from agentic_infer.envs import (
    CallResult,
    Check,
    Env,
    EnvSpec,
    EnvVerdict,
    Refusal,
    canonical,
    make_env,
    register_env,
    state_diff,
    state_digest,
)
from agentic_infer.envs.registry import ENVS
from agentic_infer.errors import ConfigError


class Shelf(Env):
    """A shelf of named counts: `add` writes, `count` reads, `crash` is a tool with a bug."""

    name = "shelf"

    def __init__(self, items=None):
        super().__init__()
        self.items = dict(items or {})

    def tools(self):
        return [{"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object"}}}
                for n in ("add", "count", "crash")]

    def first_observation(self):
        return "Put two apples on the shelf."

    def execute(self, tool, arguments):
        if tool == "add":
            if arguments["n"] <= 0:
                raise Refusal(f"n must be positive, got {arguments['n']}")
            self.items[arguments["item"]] = self.items.get(arguments["item"], 0) + arguments["n"]
            return CallResult("done", reward=0.5)
        if tool == "count":
            return CallResult(str(self.items.get(arguments["item"], 0)))
        raise RuntimeError("shelf collapsed")

    def state(self):
        return {"items": dict(self.items)}

    def _set_mutable(self, value):
        self.items = dict(value["items"])

    def verify(self, response):
        ok = self.items.get("apple") == 2
        return EnvVerdict(float(ok), [Check("state", ok, "" if ok else f"apple={self.items.get('apple')}")])


def test_refusals_unknown_tools_and_bugs_are_error_text_and_logged():
    env = Shelf()
    assert env.call("add", {"item": "apple", "n": 0}) == "Error: n must be positive, got 0"
    assert env.call("fly", {}).startswith("Error: unknown tool 'fly'; available: add, count, crash")
    assert env.call("crash", {}) == "Error: RuntimeError: shelf collapsed"
    assert env.call("add", {"item": "apple"}).startswith("Error: KeyError")  # a missing argument
    assert env.state() == {"items": {}}
    assert [c.error for c in env.calls] == [True, True, True, True]
    rec = env.call_record("add", {"item": "apple", "n": 2})
    assert (rec.output, rec.error, rec.reward) == ("done", False, 0.5)
    assert env.call("count", {"item": "apple"}) == "2"
    assert env.verify("").reward == 1.0 and env.verify("").success


def test_canonical_digest_compares_data_not_ordered_text():
    a = {"orders": {"#1": {"items": [{"id": 1, "price": 10.0}, {"id": 2, "price": 0.1 + 0.2}]}}, "z": [3, 1]}
    b = {"z": [1, 3], "orders": {"#1": {"items": [{"price": 0.3, "id": 2}, {"price": 10, "id": 1}]}}}
    assert canonical(a) == canonical(b)
    assert state_digest(a) == state_digest(b)
    c = {"z": [1, 3], "orders": {"#1": {"items": [{"price": 0.3, "id": 2}, {"price": 10.5, "id": 1}]}}}
    assert state_digest(a) != state_digest(c)
    assert state_digest({"a": [1, 1, 2]}) != state_digest({"a": [1, 2, 2]})  # multisets, not sets
    assert state_diff({"o": {"s": "pending"}}, {"o": {"s": "cancelled"}}) == ['o.s: "pending" != "cancelled"']


def test_snapshot_restore_puts_back_state_and_call_log():
    env = Shelf()
    env.call("add", {"item": "apple", "n": 1})
    snap = env.snapshot()
    before = env.digest()
    env.call("add", {"item": "pear", "n": 3})
    assert env.digest() != before and len(env.calls) == 2
    env.restore(snap)
    assert env.digest() == before and len(env.calls) == 1
    env.call("add", {"item": "apple", "n": 1})
    assert snap["state"] == {"items": {"apple": 1}}  # the snapshot is not aliased


def test_verdict_breakdown_and_mapping_access():
    v = EnvVerdict(0.0, [Check("state", False, "apple=1"), Check("outputs", True)])
    assert v.passed == ["outputs"] and v.failed == {"state": "apple=1"} and not v.success
    assert v["reward"] == 0.0 and v.to_dict()["checks"][0]["name"] == "state"
    assert not EnvVerdict(1.0).success  # no checks: nothing was shown to pass


def test_registry_builds_by_name_and_names_the_choices():
    register_env(EnvSpec("shelf-test", "a test shelf", lambda row, **kw: Shelf(row.get("items")), ("add", "count"),
                         "{items}", "1 iff two apples"))
    try:
        env = make_env("shelf-test", {"items": {"apple": 2}})
        assert env.verify("").reward == 1.0
        with pytest.raises(ConfigError, match="unknown env 'shelv'"):
            make_env("shelv", {})
        with pytest.raises(ConfigError, match="must be a dict"):
            make_env("shelf-test", ["items"])
    finally:
        ENVS.pop("shelf-test")
