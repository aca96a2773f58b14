"""The tree-search engines' shared shell: one example in, one Rollout out (`LATS` and `RAP` subclass it).

    engine = LATS(llm, lambda ex: Game24LATSEnv(ex["question"]), iterations=10, n_children=5)
    rollout = await engine.run({"question": "1 1 4 6"})
    rollout.answer, rollout.rewards.get("correct"), rollout.metadata["tree"]["stop_reason"]

Callers that need the search itself (the CLI's `--save-tree`, LangGraph's one-iteration-per-step graph):

    search = engine.search(example)               # a TreeSearch; tree=/calls= resume a saved one
    rollout = await engine.rollout(search, await search.run(), example)
    search.tree.save("tree.json")                 # the full node table (states, details, reflections)

The Rollout records EVERY LLM call of the search, one trajectory per sampled completion (`Meter`):

- `trajectories[0]` is the chosen path: for each action on the path to the chosen node, the prompt
  segment of the call that proposed it and the model segment of the sample that wrote it (token ids,
  logprobs); every segment's `metadata["call"]` is that sample's call id and `metadata["finish"]` how the sample
  ended (the call's finish reason). `steps[k]` links action k to
  its model segment (`Step.segment`) and names its node. `finish_reason` is "answer" when a terminal was
  chosen, "budget" when none was (an empty path). Each step's tokens were conditioned on that step's
  prompt segment alone, not on the concatenation, so a path of more than one step is not `token_exact`:
  train on it per step (`token_span(step.segment)` and the prompt segment before it).
- `trajectories[1:]` are all the other calls (value, reflection, world model, self-evaluation, the
  action samples that were not chosen), each a prompt and a model segment with
  `metadata` = {purpose, node, call_group, sample}.
- `metadata["tree"]` = {stop_reason, feedback, actions, node (the chosen node's id), budget, nodes}: `nodes`
  is the compact node table (id, parent, action, depth, visits, value, reward, terminal, calls, proposed_by:
  the samples that wrote the node's action), whose call ids all resolve through `call_trajectories(rollout)`. `rewards["correct"]` is the environment's
  verdict on the answer when it has one (gold answer, checker), scored after the search.

Not covered: one rollout per iteration (the chosen path is the search's final decision).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentic_infer.config import build_config, config_to_dict
from agentic_infer.engines.base import check_one_sample, example_id
from agentic_infer.engines.tree.base import Budget, Meter
from agentic_infer.engines.tree.search import SearchResult, SearchSettings, TreeSearch
from agentic_infer.engines.tree.table import Tree
from agentic_infer.types import Rollout, SamplingParams, Step, Trajectory, Usage

NODE_FIELDS = ("id", "parent", "action", "depth", "visits", "value", "reward", "terminal", "calls")


def _node_row(n: Any) -> dict[str, Any]:
    """A node of the compact table: `NODE_FIELDS` and `proposed_by` (the parent's samples that wrote its action)."""
    return {**{k: v for k, v in n.to_dict().items() if k in NODE_FIELDS},
            "proposed_by": list(n.details.get("proposed_by") or [])}


@dataclass(frozen=True)
class TreeOptions:
    """The search settings every tree engine's options share (`LATSOptions`, `RAPOptions` add their own):
    `budget` replaces `iterations` when given (its other limits add to it); `sampling` is how actions are
    sampled (each engine has its own default; the search sets `n` per call, so `sampling.n` stays 1)."""

    iterations: int = 10
    depth_limit: int = 7
    exploration_weight: float = 1.0
    feedback: str = "judge"
    budget: Budget | None = None
    sampling: SamplingParams = SamplingParams(logprobs=0)

    def __post_init__(self) -> None:
        check_one_sample(type(self).__name__, self.sampling, "the search sets n per call (n_children / n_actions, "
                         "value or world samples); leave sampling.n at 1")
        self.settings()  # validates the search settings now, with the field names
        self.search_budget()

    def settings(self) -> SearchSettings:
        raise NotImplementedError

    def search_budget(self) -> Budget:
        return self.budget or Budget(iterations=self.iterations)


class TreeEngine:
    """`run(example) -> Rollout` over a `TreeSearch` built by the subclass (see the module docstring).

    `factory(example)` makes what the search runs on (a LATS environment, a RAP task); `options` is the
    engine's validated options dataclass, `overrides` replace some of its fields (a nested dataclass such
    as `budget` also takes a mapping).
    """

    name = "tree"
    options_class: type[TreeOptions] = TreeOptions

    def __init__(self, llm: Any, factory: Callable[[Mapping[str, Any]], Any], options: Any = None,
                 **overrides: Any):
        self.llm, self.factory = llm, factory
        self.options = build_config(self.options_class, base=options, overrides=overrides,
                                    source="keyword arguments")

    def _search(self, meter: Meter, target: Any, example: Mapping[str, Any], tree: Tree | None) -> TreeSearch:
        raise NotImplementedError

    async def _finalise(self, search: TreeSearch, result: SearchResult) -> SearchResult:
        return result

    def search(self, example: Mapping[str, Any], *, tree: Tree | None = None,
               calls: Sequence[Trajectory] = ()) -> TreeSearch:
        """A ready search of `example` (call `await .run()` or `.step()`); `tree` and `calls` (the recorded
        calls so far) resume a saved one."""
        search = self._search(Meter(self.llm, self.options.search_budget(), calls=calls), self.factory(example),
                              example, tree)
        if tree is None:
            search.tree.config = {**search.s.to_dict(), "engine": self.name, self.name: config_to_dict(self.options)}
        return search

    async def rollout(self, search: TreeSearch, result: SearchResult, example: Mapping[str, Any]) -> Rollout:
        """The Rollout of a finished search (see the module docstring)."""
        result = await self._finalise(search, result)
        return _search_rollout(search, result, example, engine=self.name, vote=result.answer != _path_answer(result))

    async def run(self, example: Mapping[str, Any]) -> Rollout:
        search = self.search(example)
        return await self.rollout(search, await search.run(), example)


def _path_answer(result: SearchResult) -> str | None:
    return result.extra.get("best_path_answer", result.answer)


def _search_rollout(search: TreeSearch, result: SearchResult, example: Mapping[str, Any], *, engine: str,
                   vote: bool = False) -> Rollout:
    """The chosen path first, then every other recorded call. `vote`: the answer is not the path's (RAP-Aggregation
    chose another), so `chosen` is None and the path carries no reward."""
    tree, meter = search.tree, search.meter
    calls = {t.id: t for t in meter.calls}
    path = Trajectory(engine=engine, example=dict(example), answer=_path_answer(result), token_exact=True)
    on_path: set[str] = set()
    nodes = tree.path(tree[result.node])[1:] if result.node is not None else []
    for n in nodes:
        call_id = next(iter(n.details.get("proposed_by") or ()), None)
        call = calls.get(call_id) if call_id is not None else None
        step = Step(action=n.action or "", observation=str((n.details.get("step") or {}).get("observation", ""))
                    or None, state=n.summary, reward=n.reward, metadata={"node": n.id, "call": call_id})
        if call is not None:
            on_path.add(call.id)
            for seg in call.segments:
                path.add(seg.kind, seg.text, token_ids=seg.token_ids, logprobs=seg.logprobs,
                         **{**call.metadata, "call": call.id, "finish": call.finish_reason})
            step.segment = len(path.segments) - 1
            path.usage.add(call.usage)
            path.token_exact = path.token_exact and call.token_exact
        else:  # a step whose proposing call is not recorded (a tree saved before calls were kept)
            path.token_exact = False
        path.steps.append(step)
    path.token_exact = path.token_exact and len(path.steps) == 1
    path.finish("answer" if result.node is not None else "budget")
    rewards = {} if result.correct is None else {"correct": float(result.correct)}
    if not vote:
        path.rewards = dict(rewards)
    others = [t for t in meter.calls if t.id not in on_path]
    for t in others:
        t.engine, t.example = engine, dict(example)
    spent = (result.budget or {}).get("spent", {})
    usage = Usage(prompt_tokens=spent.get("prompt_tokens", 0), completion_tokens=spent.get("completion_tokens", 0),
                  llm_calls=spent.get("llm_calls", 0), wall_s=spent.get("wall_s", 0.0))
    table = [_node_row(n) for n in tree.nodes]
    info = {"stop_reason": result.stop_reason, "feedback": result.feedback, "actions": result.actions,
            "node": result.node, "budget": result.budget, "nodes": table, **result.extra}
    return Rollout(example_id=example_id(example), trajectories=[path, *others], answer=result.answer,
                   rewards=rewards, usage=usage, engine=engine, example=dict(example), chosen=None if vote else 0,
                   metadata={"tree": info})


def call_trajectories(rollout: Rollout) -> dict[str, Trajectory]:
    """Every recorded call of a tree-search rollout by call id (the ids the node table lists): the calls on
    the chosen path map to `trajectories[0]`, every other call to its own trajectory."""
    out = {t.id: t for t in rollout.trajectories[1:]}
    if rollout.trajectories:
        path = rollout.trajectories[0]
        out.update({s.metadata["call"]: path for s in path.segments if "call" in s.metadata})
    return out
