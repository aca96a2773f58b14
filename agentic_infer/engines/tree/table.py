"""The search tree as a serialisable node table.

`Tree.to_dict()` is the JSON every tree engine saves (`--save-tree FILE`) and `agentic tree view`
renders:

    {"format": "agentic-tree/1", "algorithm": "mcts", "env": "game24", "task": "1 1 4 6",
     "feedback": "judge" | "oracle",
     "budget": {"limits": {...}, "spent": {"iterations", "llm_calls", "tokens", ...}},
     "reflections": ["..."], "config": {...}, "result": {...},
     "nodes": [{"id", "parent", "children", "action", "depth", "visits", "value", "reward", "prior",
                "terminal", "materialised", "summary", "state", "details", "reflections", "calls"}, ...]}

`value` is the node's MEAN backed-up reward (running mean over the `visits` iterations that passed
through it); `reward` is its own evaluation when it was created (None until materialised); `prior`
the proposal's cheap score. `calls` lists the ids of the LLM calls made about the node (expanding
it, stepping an LLM world model into it, evaluating it, reflecting on it), one id per sampled
completion: the ids of the trajectories in the search's Rollout (`tree.engine.call_trajectories`);
`details["proposed_by"]` lists the parent's samples that proposed this node's action.
`Tree.from_dict` restores a tree exactly (a search can be resumed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError

FORMAT = "agentic-tree/1"


@dataclass
class Node:
    id: int
    parent: int | None
    action: str | None = None
    depth: int = 0
    state: dict[str, Any] | None = None
    summary: str = ""
    prior: float = 0.0
    reward: float | None = None
    visits: int = 0
    value: float = 0.0
    terminal: bool = False
    children: list[int] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    reflections: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    @property
    def materialised(self) -> bool:
        return self.state is not None

    def backprop(self, reward: float) -> None:
        """Running mean: value = mean of every reward backed up through this node."""
        self.visits += 1
        self.value += (reward - self.value) / self.visits

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "parent": self.parent, "children": list(self.children), "action": self.action,
                "depth": self.depth, "visits": self.visits, "value": self.value, "reward": self.reward,
                "prior": self.prior, "terminal": self.terminal, "materialised": self.materialised,
                "summary": self.summary, "state": self.state, "details": self.details,
                "reflections": list(self.reflections), "calls": list(self.calls)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Node:
        return cls(id=int(d["id"]), parent=d.get("parent"), action=d.get("action"), depth=int(d.get("depth", 0)),
                   state=d.get("state"), summary=d.get("summary", ""), prior=float(d.get("prior", 0.0)),
                   reward=d.get("reward"), visits=int(d.get("visits", 0)), value=float(d.get("value", 0.0)),
                   terminal=bool(d.get("terminal", False)), children=list(d.get("children", [])),
                   details=dict(d.get("details") or {}), reflections=list(d.get("reflections") or []),
                   calls=list(d.get("calls") or []))


@dataclass
class Tree:
    """Nodes by id (root = 0) plus search-level records."""

    nodes: list[Node] = field(default_factory=list)
    algorithm: str = "mcts"
    env: str = ""
    task: str = ""
    feedback: str = "judge"
    reflections: list[str] = field(default_factory=list)
    budget: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, root_state: dict[str, Any], summary: str, **kw: Any) -> Tree:
        t = cls(**kw)
        t.nodes.append(Node(id=0, parent=None, state=root_state, summary=summary))
        return t

    @property
    def root(self) -> Node:
        return self.nodes[0]

    def __getitem__(self, i: int) -> Node:
        return self.nodes[i]

    def add_child(self, parent: Node, action: str, prior: float = 0.0, details: dict[str, Any] | None = None) -> Node:
        node = Node(id=len(self.nodes), parent=parent.id, action=action, depth=parent.depth + 1, prior=prior,
                    details=dict(details or {}))
        self.nodes.append(node)
        parent.children.append(node.id)
        return node

    def children(self, node: Node) -> list[Node]:
        return [self.nodes[i] for i in node.children]

    def path(self, node: Node) -> list[Node]:
        out = [node]
        while out[-1].parent is not None:
            out.append(self.nodes[out[-1].parent])
        return out[::-1]

    def actions(self, node: Node) -> list[str]:
        return [n.action for n in self.path(node)[1:] if n.action is not None]

    def terminals(self) -> list[Node]:
        return [n for n in self.nodes if n.terminal and n.materialised]

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "algorithm": self.algorithm, "env": self.env, "task": self.task,
                "feedback": self.feedback, "budget": self.budget, "reflections": list(self.reflections),
                "config": self.config, "result": self.result, "nodes": [n.to_dict() for n in self.nodes]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Tree:
        if not isinstance(d, dict) or not isinstance(d.get("nodes"), list) or not d["nodes"]:
            raise ConfigError("tree JSON: expected an object with a non-empty 'nodes' list "
                              "(as written by --save-tree)")
        return cls(nodes=[Node.from_dict(n) for n in d["nodes"]], algorithm=d.get("algorithm", "mcts"),
                   env=d.get("env", ""), task=d.get("task", ""), feedback=d.get("feedback", "judge"),
                   reflections=list(d.get("reflections") or []), budget=dict(d.get("budget") or {}),
                   config=dict(d.get("config") or {}), result=dict(d.get("result") or {}))

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(self.to_dict(), indent=1, default=str), encoding="utf-8")
        return p

    @classmethod
    def load(cls, path: str | Path) -> Tree:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"tree file {str(p)!r}: no such file; write one with --save-tree")
        try:
            return cls.from_dict(json.loads(p.read_text(encoding="utf-8")))
        except json.JSONDecodeError as e:
            raise ConfigError(f"tree file {str(p)!r}: not JSON ({e.msg})") from None
