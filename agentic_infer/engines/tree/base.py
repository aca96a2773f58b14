"""Tree search core types: the environment / world-model protocol, the search-config protocol,
budgets and the metered LLM every tree engine calls through.

Three roles, as in llm-reasoners:

- `Environment` (or an LLM world model implementing the same protocol): `init_state()`,
  `await step(state, action) -> (state, aux)`, `is_terminal(state)`, `describe(state)` (the text a
  prompt and the viewer show), `answer(state)`, and `await gold_reward(state)`: the gold reward
  (1.0 solved / 0.0 not / None unknown). The gold reward is ORACLE feedback: searches use it only
  with `feedback="oracle"`; otherwise it is consulted after the search, for scoring only.
- `SearchConfig`: `propose(tree, node, n)` samples n actions with a cheap prior, `evaluate(tree,
  parent, children)` scores materialised children (batched over siblings), `terminal_reward(tree,
  node)` is the judge's reward of a terminal state, `on_failure(tree, node)` may write a reflection.
- The algorithms (`mcts.py`, `beam.py`, `dfs.py` on the base of `search.py`) over the node table of `table.py`.

States are JSON-serialisable dicts, so a whole search (tree + states) can be saved and resumed.
`Meter` wraps an LLM: every generate call of a tree search goes through it, is sent as token ids
(`encode_prompt`), counted (calls, prompt and completion tokens), refused with `BudgetExhausted`
once a limit of the `Budget` is reached, and RECORDED: one `Trajectory` per sampled completion
(prompt ids, sampled ids and logprobs, purpose and node) in `meter.calls`, which the engines turn
into the Rollout. One generate call with `n` samples counts as ONE call; its prompt tokens are
counted once (on its first sample's trajectory).
Not covered: token-level budgets inside a call (a call may overshoot the token limit by its own
`max_tokens`), cost in money.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from agentic_infer.backends.base import count_prompt_tokens, encode_continuation, encode_prompt
from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import Completion, SamplingParams, Trajectory, Usage, trajectory_finish

T = TypeVar("T")

State = dict[str, Any]
FEEDBACK = ("judge", "oracle")


class BudgetExhausted(AgenticError):
    """Raised by `Meter` when a budget limit is reached; searches catch it and stop cleanly."""

    def __init__(self, which: str, limit: float, spent: float):
        super().__init__(f"budget {which} exhausted: spent {spent} of {limit}")
        self.which = which


@dataclass(frozen=True)
class Budget:
    """Limits of one search; None = unlimited. At least one limit must be set."""

    iterations: int | None = 10
    llm_calls: int | None = None
    tokens: int | None = None
    wall_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("iterations", "llm_calls", "tokens", "wall_s"):
            v = getattr(self, name)
            if v is not None and not v > 0:
                raise ConfigError(f"Budget.{name}={v!r}: must be > 0 or None (unlimited); pass a positive limit")
        if all(getattr(self, n) is None for n in ("iterations", "llm_calls", "tokens", "wall_s")):
            raise ConfigError("Budget(): every limit is None, the search would never stop; set e.g. iterations=10")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Spent:
    iterations: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tokens": self.tokens}


_NODE: ContextVar[Any] = ContextVar("tree_node", default=None)


class Meter:
    """An LLM behind a budget that records every call: `await meter.generate(prompt, params, purpose=, node=)`.

    `calls` holds one `Trajectory` per sampled completion, in call order: a prompt segment with the
    token ids the model conditioned on (`encode_prompt`; None when the backend has no tokenizer, then
    the text is sent and the trajectory is not `token_exact`) and a model segment with the sampled ids
    and logprobs; `metadata` = {purpose, node (the node id the call was about, or None), call_group
    (the index of the generate call; its n samples share it), sample}. The call's ids are appended to
    `node.calls`. Inside `with meter.at(node):` calls without `node=` are attributed to that node
    (the search wraps environment steps in it, so an LLM world model's calls find their node).
    """

    def __init__(self, llm: Any, budget: Budget | None = None, *, calls: Sequence[Trajectory] = ()):
        self.llm = llm
        self.budget = budget or Budget()
        self.spent = Spent()
        self._t0 = time.monotonic()
        self.calls_by_purpose: dict[str, int] = {}
        self.calls: list[Trajectory] = list(calls)
        self._groups = len({t.metadata.get("call_group") for t in self.calls})  # generate calls made so far
        # calls in flight and the tokens they may spend (prompt + n x max_tokens): concurrent calls (LATS
        # evaluates an expansion's children at once) count against the budget before they finish
        self._reserved_calls = 0
        self._reserved_tokens = 0

    def restart_clock(self, already_s: float = 0.0) -> None:
        self._t0 = time.monotonic() - already_s

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def check(self) -> None:
        """Raise `BudgetExhausted` if any limit is reached (iterations are checked by the search).

        Calls in flight count with what they may still spend, so concurrent calls never start past a limit:
        the call budget holds exactly, and the token budget is exceeded by at most the last call."""
        b, s = self.budget, self.spent
        s.wall_s = self.elapsed()
        if b.llm_calls is not None and s.llm_calls + self._reserved_calls >= b.llm_calls:
            raise BudgetExhausted("llm_calls", b.llm_calls, s.llm_calls)
        if b.tokens is not None and s.tokens + self._reserved_tokens >= b.tokens:
            raise BudgetExhausted("tokens", b.tokens, s.tokens)
        if b.wall_s is not None and s.wall_s >= b.wall_s:
            raise BudgetExhausted("wall_s", b.wall_s, round(s.wall_s, 3))

    @contextlib.contextmanager
    def at(self, node: Any) -> Iterator[None]:
        """Attribute the calls made inside the block (without an explicit `node=`) to `node`."""
        token = _NODE.set(node)
        try:
            yield
        finally:
            _NODE.reset(token)

    async def generate(self, prompt: str, params: SamplingParams, *, purpose: str = "",
                       node: Any = None) -> tuple[list[Completion], list[str]]:
        """The completions of one call and the ids of their recorded trajectories (same order)."""
        self.check()
        node = node if node is not None else _NODE.get()
        ids = encode_prompt(self.llm, prompt)
        reserve = (len(ids) if ids is not None else len(prompt) // 4) + params.n * params.max_tokens
        group, self._groups = self._groups, self._groups + 1
        self._reserved_calls += 1
        self._reserved_tokens += reserve
        try:
            comps = await self.llm.generate(prompt if ids is None else ids, params)
        finally:
            self._reserved_calls -= 1
            self._reserved_tokens -= reserve
        self.spent.llm_calls += 1
        purpose = purpose or "other"
        self.calls_by_purpose[purpose] = self.calls_by_purpose.get(purpose, 0) + 1
        reported = next((c.prompt_tokens for c in comps if c.prompt_tokens), None)
        ptoks = count_prompt_tokens(self.llm, prompt if ids is None else ids, reported)
        if not ptoks and ids is None:
            ptoks = len(prompt) // 4  # documented estimate when the backend has no tokenizer
        self.spent.prompt_tokens += ptoks
        recorded = []
        for i, c in enumerate(comps):
            n = c.num_tokens
            if n == 0 and c.text:
                n = len(encode_continuation(self.llm, c.text) or ()) or max(1, len(c.text) // 4)
            self.spent.completion_tokens += n
            t = Trajectory(token_exact=ids is not None and c.token_ids is not None, usage=Usage(
                prompt_tokens=ptoks if i == 0 else 0, completion_tokens=n, llm_calls=int(i == 0)),
                metadata={"purpose": purpose, "node": getattr(node, "id", None), "call_group": group, "sample": i})
            t.add("prompt", prompt, token_ids=ids)
            t.add("model", c.text, token_ids=c.token_ids, logprobs=c.logprobs)
            t.finish(trajectory_finish(c.finish_reason))
            recorded.append(t)
        self.calls.extend(recorded)
        if node is not None:
            node.calls.extend(t.id for t in recorded)
        self.spent.wall_s = self.elapsed()
        return comps, [t.id for t in recorded]

    def report(self) -> dict[str, Any]:
        self.spent.wall_s = self.elapsed()
        return {"limits": self.budget.to_dict(), "spent": self.spent.to_dict(),
                "calls_by_purpose": dict(self.calls_by_purpose)}


async def gather_calls(*calls: Awaitable[T]) -> list[T]:
    """Run concurrent LLM calls to the end, then raise the first error (e.g. `BudgetExhausted`) if any did:
    a call refused by the budget never abandons its siblings in flight, so their spend is recorded."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return list(results)


@dataclass
class Proposal:
    """A proposed action with a cheap prior score in [0, 1] and details for the viewer."""

    action: str
    prior: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Evaluation:
    """A state's evaluation: `value` in [0, 1] and its components (reward details)."""

    value: float
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    name: str

    def init_state(self) -> State: ...
    async def step(self, state: State, action: str) -> tuple[State, dict[str, Any]]: ...
    def is_terminal(self, state: State) -> bool: ...
    def describe(self, state: State) -> str: ...
    def answer(self, state: State) -> str | None: ...
    async def gold_reward(self, state: State) -> float | None: ...


@runtime_checkable
class SearchConfig(Protocol):
    async def propose(self, tree: Any, node: Any, n: int) -> list[Proposal]: ...
    async def evaluate(self, tree: Any, parent: Any, children: list[Any]) -> list[Evaluation]: ...
    async def terminal_reward(self, tree: Any, node: Any) -> Evaluation: ...
    async def on_failure(self, tree: Any, node: Any) -> None: ...


class SearchConfigBase:
    """Defaults: terminal reward = the node's own evaluation, no reflection."""

    async def terminal_reward(self, tree: Any, node: Any) -> Evaluation:
        return Evaluation(node.reward or 0.0, {"source": "node evaluation"})

    async def on_failure(self, tree: Any, node: Any) -> None:
        return None
