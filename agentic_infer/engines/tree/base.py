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
- The algorithms in `search.py` (MCTS, beam search, DFS) over the node table of `table.py`.

States are JSON-serialisable dicts, so a whole search (tree + states) can be saved and resumed.
`Meter` wraps an LLM: every generate call goes through it, is counted (calls, prompt and completion
tokens) and refused with `BudgetExhausted` once a limit of the `Budget` is reached. One generate call
with `n` samples counts as ONE call; its prompt tokens are counted once.
Not covered: token-level budgets inside a call (a call may overshoot the token limit by its own
`max_tokens`), cost in money.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import Completion, SamplingParams

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


class Meter:
    """An LLM behind a budget: `await meter.generate(prompt, params)` counts and enforces limits."""

    def __init__(self, llm: Any, budget: Budget | None = None):
        self.llm = llm
        self.budget = budget or Budget()
        self.spent = Spent()
        self._t0 = time.monotonic()
        self.calls_by_purpose: dict[str, int] = {}

    def restart_clock(self, already_s: float = 0.0) -> None:
        self._t0 = time.monotonic() - already_s

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def check(self) -> None:
        """Raise `BudgetExhausted` if any limit is reached (iterations are checked by the search)."""
        b, s = self.budget, self.spent
        s.wall_s = self.elapsed()
        if b.llm_calls is not None and s.llm_calls >= b.llm_calls:
            raise BudgetExhausted("llm_calls", b.llm_calls, s.llm_calls)
        if b.tokens is not None and s.tokens >= b.tokens:
            raise BudgetExhausted("tokens", b.tokens, s.tokens)
        if b.wall_s is not None and s.wall_s >= b.wall_s:
            raise BudgetExhausted("wall_s", b.wall_s, round(s.wall_s, 3))

    async def generate(self, prompt: str, params: SamplingParams, *, purpose: str = "") -> list[Completion]:
        self.check()
        comps = await self.llm.generate(prompt, params)
        self.spent.llm_calls += 1
        self.calls_by_purpose[purpose or "other"] = self.calls_by_purpose.get(purpose or "other", 0) + 1
        ptoks = next((c.prompt_tokens for c in comps if c.prompt_tokens), None)
        if ptoks is None:
            try:
                ptoks = len(self.llm.tokenizer.encode(prompt))
            except (AttributeError, AgenticError, NotImplementedError):
                ptoks = len(prompt) // 4  # documented estimate when the backend has no tokenizer
        self.spent.prompt_tokens += ptoks
        for c in comps:
            n = c.num_tokens
            if n == 0 and c.text:
                try:
                    n = len(self.llm.tokenizer.encode(c.text))
                except (AttributeError, AgenticError, NotImplementedError):
                    n = max(1, len(c.text) // 4)
            self.spent.completion_tokens += n
        self.spent.wall_s = self.elapsed()
        return comps

    def report(self) -> dict[str, Any]:
        self.spent.wall_s = self.elapsed()
        return {"limits": self.budget.to_dict(), "spent": self.spent.to_dict(),
                "calls_by_purpose": dict(self.calls_by_purpose)}


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
