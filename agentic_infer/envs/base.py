"""The environment interface: a task in; tool schemas, instructions and a first observation out; tool calls
executed against the env's state; a verdict with its breakdown at the end.

    env = make_env("retail", task_row)          # agentic_infer.envs.registry
    env.tools()                                 # OpenAI function schemas
    env.call("get_order_details", {"order_id": "#W5442520"})   # the tool's text; "Error: ..." when refused
    env.state(); env.digest()                   # JSON state; its canonical digest
    env.verify("Your refund is on its way.")    # EnvVerdict(reward, checks=[Check(name, passed, detail)])

A subclass implements `execute(tool, arguments) -> CallResult` (raise `Refusal("why")` to refuse) and `state()`,
`verify(response)`; `call` wraps `execute`: it never raises (a refusal, an unknown tool or any exception in the
tool becomes text starting with "Error: ", as tau-bench's tools answer) and logs every call in `self.calls` (the
action check of a verdict reads that log). `snapshot()` / `restore()` capture everything that changes (the state
and the call log), so a tree search can expand a node, and an RL branch can fork an episode, from any point.

The digest is computed over `canonical(state)`: dict keys sorted, integral floats as ints, floats rounded to
1e-9, and lists compared as multisets (sorted by their canonical text). Two states that are equal as data
digest equally however their lists were built (tau2-bench #514: hashing an ordered string made equal states
differ). An env whose list order carries meaning overrides `canonical_state()`.

`reply(message)` is the user's side: when the agent says something without a tool call, the env answers as
the user (an instruction-following user confirms, a simulated user through a backend talks) or returns None
to end the episode. The default has no user: the first message without a call is the final response.
Not covered: multi-agent envs, envs whose tools run asynchronously.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


class Refusal(Exception):
    """Raised by a tool to refuse a call; the agent sees `Error: <message>` and the state is unchanged."""


@dataclass
class CallResult:
    """What one executed tool call gave: its text, whether it was refused, per-step info and reward."""

    output: str
    error: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    reward: float | None = None


@dataclass
class CallRecord:
    """One entry of an env's call log."""

    name: str
    arguments: dict[str, Any]
    output: str
    error: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    reward: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Check:
    """One named check of a verdict: passed or not, and why."""

    name: str
    passed: bool
    detail: str = ""
    category: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EnvVerdict:
    """An env's final judgement: `reward` and the checks it was built from (`info`: anything else, e.g. terms)."""

    reward: float
    checks: list[Check] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> list[str]:
        return [c.name for c in self.checks if c.passed]

    @property
    def failed(self) -> dict[str, str]:
        return {c.name: c.detail for c in self.checks if not c.passed}

    @property
    def success(self) -> bool:
        """Every check passed (and there was at least one)."""
        return bool(self.checks) and all(c.passed for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"reward": self.reward, "success": self.success, "checks": [c.to_dict() for c in self.checks],
                "failed": self.failed, "info": self.info}

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]


def canonical(value: Any) -> Any:
    """`value` as canonical data: sorted keys, integral floats as ints, floats rounded, lists as sorted multisets."""
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        items = [canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return int(value)
        return round(value, 9)
    return str(value)


def canonical_text(value: Any) -> str:
    """Canonical JSON text of `value` (what digests hash, and what GiGPO's anchors compare)."""
    return json.dumps(canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def state_digest(state: Any) -> str:
    """SHA-256 of the canonical JSON of a state."""
    return _sha256(canonical_text(state))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def state_diff(a: Any, b: Any, *, limit: int = 10, path: str = "") -> list[str]:
    """Up to `limit` paths where two states differ as canonical data (`orders.#W1.status: 'pending' != ...`)."""
    a, b = canonical(a), canonical(b)
    out: list[str] = []

    def walk(x: Any, y: Any, where: str) -> None:
        if len(out) >= limit or x == y:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y)):
                if k not in x or k not in y:
                    out.append(f"{where}.{k}: {'missing' if k not in x else 'present'} vs "
                               f"{'missing' if k not in y else 'present'}".lstrip("."))
                else:
                    walk(x[k], y[k], f"{where}.{k}")
                if len(out) >= limit:
                    return
            return
        out.append(f"{where.lstrip('.') or '<root>'}: {json.dumps(x, ensure_ascii=False)[:120]} != "
                   f"{json.dumps(y, ensure_ascii=False)[:120]}")

    walk(a, b, path)
    return out


class Env(ABC):
    """A stateful environment for one task (see the module docstring)."""

    name: ClassVar[str] = ""

    def __init__(self) -> None:
        self.calls: list[CallRecord] = []
        self.done = False  # a terminal tool (e.g. a transfer to a human) ended the episode

    # -- what the agent is shown -------------------------------------------------------------------
    @abstractmethod
    def tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function schemas: [{"type": "function", "function": {name, description, parameters}}]."""

    def instructions(self) -> str:
        """The system prompt's domain text (a policy, the answer format); "" when there is none."""
        return ""

    @abstractmethod
    def first_observation(self) -> str:
        """The task as the agent first sees it (the user's first message)."""

    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools()]

    # -- acting ------------------------------------------------------------------------------------
    @abstractmethod
    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        """Run one call against the state; raise `Refusal` to refuse it (the state must then be unchanged)."""

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> str:
        """The tool's text for one call; never raises (refusals and failures are "Error: ..." text)."""
        return self.call_record(tool, arguments).output

    def call_record(self, tool: str, arguments: Mapping[str, Any] | None = None) -> CallRecord:
        """`call`, returning the whole log entry (output, error flag, per-step info and reward)."""
        args = dict(arguments or {})
        if tool not in self.tool_names():
            result = CallResult(f"Error: unknown tool {tool!r}; available: {', '.join(self.tool_names())}", error=True)
        else:
            try:
                result = self.execute(tool, args)
            except Refusal as e:
                result = CallResult(f"Error: {e}", error=True)
            except Exception as e:  # a tool bug or bad arguments: data for the agent, as tau-bench does
                result = CallResult(f"Error: {type(e).__name__}: {e}", error=True)
        record = CallRecord(tool, args, result.output, result.error, dict(result.info), result.reward)
        self.calls.append(record)
        return record

    async def reply(self, message: str) -> str | None:
        """The user's answer to an agent message without a tool call, or None to end the episode."""
        return None

    # -- state and verdict -------------------------------------------------------------------------
    @abstractmethod
    def state(self) -> dict[str, Any]:
        """The JSON-serialisable state."""

    def canonical_state(self) -> Any:
        return canonical(self.state())

    def digest(self) -> str:
        """The canonical digest of the state (equal data, equal digest)."""
        return _sha256(json.dumps(self.canonical_state(), sort_keys=True, ensure_ascii=False, separators=(",", ":")))

    @abstractmethod
    def verify(self, response: str) -> EnvVerdict:
        """The verdict on the episode so far, given what the agent finally said."""

    def snapshot(self) -> dict[str, Any]:
        """Everything that changes during an episode (deep-copied); `restore` puts it back."""
        return copy.deepcopy({"state": self._mutable(), "calls": [c.to_dict() for c in self.calls],
                              "done": self.done, "extra": self._extra()})

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        snap = copy.deepcopy(dict(snapshot))
        self._set_mutable(snap["state"])
        self.calls = [CallRecord(**c) for c in snap["calls"]]
        self.done = bool(snap.get("done", False))
        self._set_extra(snap.get("extra") or {})

    def fork(self) -> Env:
        """An independent copy at this point of the episode (a deep copy), for a branched episode (ARPO/AEPO):
        the copy and the original then act apart. An env that holds what cannot be copied (a live backend)
        fails here with a ConfigError; override `fork` to share or rebuild it."""
        try:
            return copy.deepcopy(self)
        except Exception as e:  # e.g. a user simulator's backend holding a lock or a socket
            from agentic_infer.errors import ConfigError

            raise ConfigError(f"env {self.name or type(self).__name__!r} cannot be forked for branched episodes "
                              f"({type(e).__name__}: {e}); run it without branching, or override Env.fork") from e

    # The parts of the env that tools change; by default the state itself. Override both for envs whose
    # state() is a view over other attributes.
    def _mutable(self) -> Any:
        return self.state()

    def _set_mutable(self, value: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be restored: implement _set_mutable")

    def _extra(self) -> dict[str, Any]:
        return {}

    def _set_extra(self, extra: Mapping[str, Any]) -> None:
        return None


def function_schema(name: str, description: str, properties: Mapping[str, Any],
                    required: Sequence[str] = ()) -> dict[str, Any]:
    """An OpenAI function schema, for envs that define their tools in code."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": dict(properties), "required": list(required)}}}
