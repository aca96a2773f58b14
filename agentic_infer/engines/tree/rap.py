"""RAP (Reasoning via Planning): the LLM as world model, MCTS with composite rewards, aggregation.

    from agentic_infer.engines.tree import RAP, Game24RAPTask
    rollout = await RAP(llm, lambda ex: Game24RAPTask(ex["question"]), iterations=10).run({"question": "1 1 4 6"})
    rollout.answer, rollout.metadata["tree"]["aggregation"]

A RAP task supplies prompts and parsers (see `rap_tasks.py`): `action_prompt(state)`,
`parse_action(text)`, `world_prompt(state, action)`, `parse_world(text, state, action) -> state |
None`, `state_key(state)`, `self_eval_prompt(state, action)`, `heuristic(parent, action, child) ->
float | None`, plus the Environment methods without `step` (`init_state`, `is_terminal`,
`describe`, `answer`, `gold_reward`). `RAPWorldModel` turns it into an Environment whose `step`
asks the LLM for the next state: `world_samples` predictions in ONE call; the majority prediction
(by `state_key`) becomes the state and its share is the ANSWER CONFIDENCE.

Rewards (`RAPWeights`, weighted mean of the components available):
- action likelihood: exp(mean token logprob) of the sampled action (the proposal prior).
  FALLBACK when the backend returns no logprobs: the action's share of the n samples.
- self-evaluation: P("Yes") from the first token's top logprobs of a one-token Yes/No answer.
  FALLBACK without logprobs: the share of `self_eval_samples` sampled answers starting with "yes".
- answer confidence: the world model's agreement share (above).
- task heuristic: the task's own score (e.g. the Blocksworld checker), None when it has none.
A component that is None is dropped and the remaining weights renormalised; every node's details
record the components and which fallback was used. MCTS runs lazily (children become states only
when chosen), w_exp = 1.0, depth limit 5, path-mean reward, judge-only feedback by default.

RAP-Aggregation (`rap_aggregate`; `RAPOptions.aggregate` default "value", as llm-reasoners sums rewards per
answer) votes over every terminal answer in the tree: weight 1 each
("count"), the terminal's mean backed-up value ("value"), or its DeepConf confidence ("deepconf":
the mean token confidence -mean(top-k logprobs) over the completions on its path; traces here are
far shorter than DeepConf's 2048-token window, so every DeepConf trace metric equals that mean),
optionally keeping the top `keep_top` share by confidence (DeepConf filtering).
Not covered: RAP's prompt-level few-shot pools, the original LLaMA-specific prompts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from agentic_infer.config import renamed
from agentic_infer.engines.deepconf.confidence import answer_weights, token_confidence
from agentic_infer.engines.judge_parse import yes_probability
from agentic_infer.engines.tree.algorithms import make_search
from agentic_infer.engines.tree.base import Evaluation, Meter, Proposal, SearchConfigBase, gather_calls
from agentic_infer.engines.tree.engine import TreeEngine, TreeOptions
from agentic_infer.engines.tree.prompting import as_chat, mean_logprob, vote_share
from agentic_infer.engines.tree.search import SearchResult, SearchSettings, TreeSearch
from agentic_infer.engines.tree.table import Node, Tree
from agentic_infer.errors import ConfigError
from agentic_infer.types import SamplingParams

AGGREGATE = ("value", "count", "deepconf", None)


@dataclass(frozen=True)
class RAPWeights:
    action_likelihood: float = 1.0
    self_eval: float = 1.0
    confidence: float = 1.0
    heuristic: float = 1.0

    def __post_init__(self) -> None:
        vals = asdict(self)
        if any(v < 0 for v in vals.values()) or sum(vals.values()) <= 0:
            raise ConfigError(f"RAPWeights{vals}: weights must be >= 0 and not all 0")


@renamed(temperature="sampling.temperature", seed="sampling.seed", action_max_tokens="sampling.max_tokens",
         top_logprobs="sampling.logprobs")
@dataclass(frozen=True)
class RAPOptions(TreeOptions):
    """Everything a RAP run takes: the search (iterations, n_actions, depth_limit, exploration_weight,
    feedback, budget: see `TreeOptions`), RAP-Aggregation (`aggregate`: "value", "count", "deepconf" or None
    for the best path's answer; `keep_top`), the reward weights and `sampling` (the action calls': temperature
    0.8, 48 tokens, 5 top logprobs, `seed`; a newline always ends an action; the world model samples with it
    too, with `world_samples` and `world_max_tokens`; self-evaluation reads its `logprobs` and `seed`)."""

    sampling: SamplingParams = SamplingParams(max_tokens=48, temperature=0.8, logprobs=5)
    n_actions: int = 4
    depth_limit: int = 5
    aggregate: str | None = "value"
    keep_top: float | None = None
    weights: RAPWeights = RAPWeights()
    world_samples: int = 3
    self_eval_samples: int = 3
    world_max_tokens: int = 160

    def __post_init__(self) -> None:
        if self.aggregate not in AGGREGATE:
            raise ConfigError(f"RAPOptions.aggregate={self.aggregate!r}: choose one of {AGGREGATE[:-1]} or None "
                              "(the best path's answer)")
        for name in ("world_samples", "self_eval_samples", "world_max_tokens"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ConfigError(f"RAPOptions.{name}={getattr(self, name)!r}: must be an integer >= 1")
        super().__post_init__()

    def settings(self) -> SearchSettings:
        return SearchSettings(algorithm="mcts", n_children=self.n_actions, depth_limit=self.depth_limit,
                              exploration_weight=self.exploration_weight, lazy=True, rollout=True,
                              reward_mode="path_mean", feedback=self.feedback)


def _conf_stats(comps: list[Any]) -> tuple[float, int]:
    s, n = 0.0, 0
    for c in comps:
        for t in c.logprobs or []:
            top = list(t.top) or [t]
            try:
                s += token_confidence(top, 20)
                n += 1
            except ConfigError:
                continue
    return s, n


class RAPWorldModel:
    """An Environment whose transitions are predicted by the LLM (see the module docstring)."""

    def __init__(self, task: Any, meter: Meter, options: RAPOptions | None = None):
        self.task, self.meter, self.o = task, meter, options or RAPOptions()
        self.name = f"rap-{task.name}"

    def init_state(self) -> dict[str, Any]:
        return self.task.init_state()

    async def step(self, state: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
        prompt = as_chat(self.meter.llm, self.task.world_prompt(state, action))
        params = self.o.sampling.replace(n=self.o.world_samples, max_tokens=self.o.world_max_tokens)
        comps, _ = await self.meter.generate(prompt, params, purpose="world_model")
        preds = [self.task.parse_world(c.text, state, action) for c in comps]
        keys = [None if p is None else self.task.state_key(p) for p in preds]
        key, share = vote_share(keys)
        conf_sum, conf_n = _conf_stats(comps)
        aux = {"confidence": share, "predictions": [c.text[:200] for c in comps], "conf_sum": conf_sum,
               "conf_n": conf_n}
        if key is None:
            bad = self.task.invalid_state(state, action, comps[0].text if comps else "")
            return bad, {**aux, "observation": "world model prediction unparseable"}
        nxt = preds[keys.index(key)]
        return nxt, {**aux, "observation": self.task.describe(nxt)}

    def is_terminal(self, state: dict[str, Any]) -> bool:
        return self.task.is_terminal(state)

    def describe(self, state: dict[str, Any]) -> str:
        return self.task.describe(state)

    def answer(self, state: dict[str, Any]) -> str | None:
        return self.task.answer(state)

    async def gold_reward(self, state: dict[str, Any]) -> float | None:
        return await self.task.gold_reward(state)


class RAPConfig(SearchConfigBase):
    def __init__(self, meter: Meter, task: Any, options: RAPOptions | None = None):
        self.meter, self.task, self.o = meter, task, options or RAPOptions()

    async def propose(self, tree: Tree, node: Node, n: int) -> list[Proposal]:
        prompt = as_chat(self.meter.llm, self.task.action_prompt(node.state))
        s = self.o.sampling
        params = s.replace(n=n, stop=s.stop if "\n" in s.stop else (*s.stop, "\n"))  # one action per line
        comps, ids = await self.meter.generate(prompt, params, purpose="action", node=node)
        groups: dict[str, list[Any]] = {}
        proposed_by: dict[str, list[str]] = {}
        for c, call in zip(comps, ids):
            act = self.task.parse_action(c.text)
            if act:
                groups.setdefault(act, []).append(c)
                proposed_by.setdefault(act, []).append(call)
        out = []
        for act, cs in groups.items():
            lps = [lp for lp in (mean_logprob(c) for c in cs) if lp is not None]
            cs_sum, cs_n = _conf_stats(cs[:1])
            if lps:
                prior, src = math.exp(max(lps)), "logprobs"
            else:
                prior, src = len(cs) / len(comps), "vote share (fallback: backend gave no logprobs)"
            out.append(Proposal(act, prior, {"votes": len(cs), "likelihood_source": src, "conf_sum": cs_sum,
                                             "conf_n": cs_n, "proposed_by": proposed_by[act]}))
        return out

    async def _self_eval(self, parent: Node, child: Node) -> tuple[float | None, str]:
        prompt = as_chat(self.meter.llm, self.task.self_eval_prompt(parent.state, child.action))
        comps, _ = await self.meter.generate(prompt, SamplingParams(n=1, temperature=0.0, max_tokens=1,
                                                                    logprobs=self.o.sampling.logprobs),
                                             purpose="self_eval", node=child)
        p = yes_probability(comps[0]) if comps else None
        if p is not None:
            return p, "logprobs"
        comps, _ = await self.meter.generate(prompt, SamplingParams(n=self.o.self_eval_samples, temperature=1.0,
                                                                    max_tokens=3, seed=self.o.sampling.seed),
                                             purpose="self_eval", node=child)
        yes = sum(c.text.strip().lower().startswith("yes") for c in comps)
        return yes / max(1, len(comps)), "sampled share of 'yes' (fallback: no logprobs)"

    async def evaluate(self, tree: Tree, parent: Node, children: list[Node]) -> list[Evaluation]:
        evals = await gather_calls(*(self._self_eval(parent, c) for c in children))
        out = []
        w = self.o.weights
        for c, (se, se_src) in zip(children, evals):
            comps = {"action_likelihood": c.prior, "self_eval": se,
                     "confidence": (c.details.get("step") or {}).get("confidence"),
                     "heuristic": self.task.heuristic(parent.state, c.action, c.state)}
            if c.state is not None and c.state.get("invalid"):
                comps["self_eval"], comps["confidence"] = 0.0, 0.0
            used = {k: v for k, v in comps.items() if v is not None and getattr(w, k) > 0}
            total_w = sum(getattr(w, k) for k in used)
            value = sum(getattr(w, k) * v for k, v in used.items()) / total_w if total_w else 0.0
            out.append(Evaluation(value, {**comps, "self_eval_source": se_src, "weights": asdict(w)}))
        return out


def rap_aggregate(tree: Tree, *, weighting: str = "count", keep_top: float | None = None) -> dict[str, Any]:
    """Vote over all terminal answers in the tree; returns {"answer", "weights", "voters"}."""
    if weighting not in AGGREGATE[:-1]:
        raise ConfigError(f"rap_aggregate: weighting={weighting!r}; choose count, value or deepconf")
    answers, confs = [], []
    for n in tree.terminals():
        ans = n.details.get("answer")
        if ans is None:
            continue
        answers.append(ans)
        if weighting == "value":
            confs.append(max(n.value, 1e-9))
        elif weighting == "deepconf":
            s = sum(float(p.details.get("conf_sum", 0.0)) + float((p.details.get("step") or {}).get("conf_sum", 0.0))
                    for p in tree.path(n))
            k = sum(int(p.details.get("conf_n", 0)) + int((p.details.get("step") or {}).get("conf_n", 0))
                    for p in tree.path(n))
            confs.append(s / k if k else 0.0)
    if not answers:
        return {"answer": None, "weights": {}, "voters": 0, "weighting": weighting}
    weights = answer_weights(answers, None if weighting == "count" else confs, keep_top)
    best = max(weights.items(), key=lambda kv: kv[1])[0] if weights else None
    return {"answer": best, "weights": weights, "voters": len(answers), "weighting": weighting}


class RAP(TreeEngine):
    """RAP as an engine: `await RAP(llm, task_for, options).run(example) -> Rollout`, where `task_for(example)`
    makes the example's RAP task (e.g. `GSM8KTask(ex["question"])`). With `aggregate`, the Rollout's answer is
    the RAP-Aggregation vote (`metadata["tree"]["aggregation"]`; the best single path's answer stays in
    `metadata["tree"]["best_path_answer"]`)."""

    name = "rap"
    options_class = RAPOptions

    def _search(self, meter: Meter, task: Any, example: Mapping[str, Any], tree: Tree | None) -> TreeSearch:
        return make_search(RAPWorldModel(task, meter, self.options), RAPConfig(meter, task, self.options), meter,
                           self.options.settings(), task=task.task, tree=tree)

    async def _finalise(self, search: TreeSearch, res: SearchResult) -> SearchResult:
        """Label the terminals with their answers and, with `aggregate`, replace the answer by the vote."""
        task, o = search.config.task, self.options
        for n in res.tree.terminals():
            n.details["answer"] = task.answer(n.state)
        if o.aggregate is not None:
            agg = rap_aggregate(res.tree, weighting=o.aggregate, keep_top=o.keep_top)
            res.extra["aggregation"] = agg
            res.extra["best_path_answer"] = res.answer
            if agg["answer"] is not None:
                res.answer = agg["answer"]
                res.correct = await task.score_answer(agg["answer"])
        res.tree.result = res.to_dict()
        return res
