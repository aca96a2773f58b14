"""LATS (Language Agent Tree Search) on the MCTS core.

    from agentic_infer.engines.tree import LATS, Game24LATSEnv
    engine = LATS(llm, lambda ex: Game24LATSEnv(ex["question"]), iterations=10, n_children=5)
    rollout = await engine.run({"question": "1 1 4 6"})
    rollout.answer, rollout.rewards.get("correct"), rollout.metadata["tree"]["feedback"]

Node state = task + actions + observations (the environment's `describe`). EXPANSION samples n
actions in ONE generate call (`SamplingParams(n=n)`), identical samples merged into one child
whose `votes` count them, and executes every child in the environment (`lazy=False`).
EVALUATION: V = λ·LM + (1−λ)·SC, where LM = (s−1)/9 for the judge's 1-10 rating s of the
trajectory after the observation (our prompt, parsed with `parse_rubric_score`: the LAST
"Score: N", not the first digit seen; unparseable → LM = 0 and flagged), and SC = the share of the
sampled siblings whose resulting state agrees with this child's (`env.agreement_key(state)`, else
the action text; 0 for an invalid action, whose unchanged state would otherwise "agree"). Value prompts run concurrently, one call per child.
SIMULATION follows the best-valued child to a terminal or the depth limit. A terminal's judge
reward is its LM rating (no extra call), 0 for an invalid action, or the environment's
`feedback_reward(state)` when it has one (visible tests for programs: test-time feedback, not gold); a terminal below
`success_threshold` is a failure: one call writes a REFLECTION, stored on the node and the tree
and shown (last `max_reflections`) in every later action AND value prompt.
Feedback is judge-only unless `feedback="oracle"` (the gold reward then drives and stops the
search, as in the reference code); results say which. Not covered: the WebShop environment,
LATS's "act" (no-reasoning) prompt variant.

A LATS environment is an `Environment` plus `instructions: str` (task + action format shown to
the model) and `parse_action(text) -> str | None`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentic_infer.config import renamed
from agentic_infer.engines.judge_parse import parse_rubric_score
from agentic_infer.engines.tree.algorithms import make_search
from agentic_infer.engines.tree.base import Evaluation, Meter, Proposal, SearchConfigBase, gather_calls
from agentic_infer.engines.tree.engine import TreeEngine, TreeOptions
from agentic_infer.engines.tree.prompting import as_chat
from agentic_infer.engines.tree.search import SearchSettings, TreeSearch
from agentic_infer.engines.tree.table import Node, Tree
from agentic_infer.errors import ConfigError
from agentic_infer.types import SamplingParams


@renamed(temperature="sampling.temperature", seed="sampling.seed", action_max_tokens="sampling.max_tokens")
@dataclass(frozen=True)
class LATSOptions(TreeOptions):
    """Everything a LATS run takes: the search (iterations, n_children, depth_limit, exploration_weight,
    feedback, stop_at, budget: see `TreeOptions`), `sampling` (the action calls': temperature 0.7, 64 tokens
    unless the environment sets its own `action_max_tokens`, `seed`; value and reflection calls use it too with
    their own max tokens) and the value settings."""

    sampling: SamplingParams = SamplingParams(max_tokens=64, temperature=0.7, logprobs=0)
    n_children: int = 5
    stop_at: float | None = None
    lam: float = 0.5  # weight of the LM score against self-consistency
    value_max_tokens: int = 96
    reflection_max_tokens: int = 128
    value_samples: int = 1
    max_reflections: int = 3

    def __post_init__(self) -> None:
        if not 0.0 <= self.lam <= 1.0:
            raise ConfigError(f"LATSOptions.lam={self.lam!r}: must be in [0, 1]; the paper uses 0.5-0.8")
        if self.value_samples < 1:
            raise ConfigError(f"LATSOptions.value_samples={self.value_samples!r}: must be >= 1")
        super().__post_init__()

    def settings(self) -> SearchSettings:
        return SearchSettings(algorithm="mcts", n_children=self.n_children, depth_limit=self.depth_limit,
                              exploration_weight=self.exploration_weight, lazy=False, rollout=True,
                              reward_mode="leaf", feedback=self.feedback, stop_at=self.stop_at)


class LATSConfig(SearchConfigBase):
    """Propose / evaluate / reflect for LATS (see the module docstring)."""

    def __init__(self, meter: Meter, env: Any, options: LATSOptions | None = None):
        for attr in ("instructions", "parse_action"):
            if not hasattr(env, attr):
                raise ConfigError(f"environment {getattr(env, 'name', env)!r} has no {attr!r}; a LATS environment "
                                  "needs instructions (str) and parse_action(text)")
        self.meter, self.env, self.o = meter, env, options or LATSOptions()

    # -- prompts -----------------------------------------------------------------------------------
    def _reflections(self, tree: Tree) -> str:
        refl: list[str] = []
        for r in reversed(tree.reflections):  # the latest distinct reflections, oldest first
            if r not in refl:
                refl.insert(0, r)
            if len(refl) >= self.o.max_reflections:
                break
        if not refl:
            return ""
        body = "\n".join(f"- {r}" for r in refl)
        return f"Reflections on earlier failed attempts (avoid these mistakes):\n{body}\n\n"

    def action_prompt(self, tree: Tree, node: Node) -> str:
        return (f"{self.env.instructions}\n\n{self._reflections(tree)}Task: {tree.task}\n"
                f"Progress so far: {node.summary}\n\nWrite only the next step.")

    def value_prompt(self, tree: Tree, node: Node) -> str:
        return (f"{self.env.instructions}\n\n{self._reflections(tree)}Task: {tree.task}\n"
                f"Trajectory: {node.summary}\n\nHow likely is this trajectory to lead to a correct solution? "
                "Reason briefly, then end with a final line 'Score: N' with N an integer from 1 (hopeless) to 10 "
                "(certainly correct).")

    def reflection_prompt(self, tree: Tree, node: Node) -> str:
        return (f"{self.env.instructions}\n\nTask: {tree.task}\nFailed attempt: {node.summary}\n\n"
                "This attempt did not solve the task. In two or three sentences, say what went wrong and what to "
                "do differently next time.")

    def _params(self, n: int, max_tokens: int) -> SamplingParams:
        """`sampling` with this call's `n` and `max_tokens` (its default `logprobs=0`: each sampled token's own
        logprob, recorded with the call, what a trainer needs)."""
        return self.o.sampling.replace(n=n, max_tokens=max_tokens)

    # -- SearchConfig ------------------------------------------------------------------------------
    async def propose(self, tree: Tree, node: Node, n: int) -> list[Proposal]:
        prompt = as_chat(self.meter.llm, self.action_prompt(tree, node))
        max_tokens = int(getattr(self.env, "action_max_tokens", self.o.sampling.max_tokens))
        comps, ids = await self.meter.generate(prompt, self._params(n, max_tokens), purpose="action", node=node)
        votes: dict[str, list[tuple[str, str]]] = {}
        for c, call in zip(comps, ids):
            act = self.env.parse_action(c.text)
            if act is None:
                act = (c.text or "").strip().splitlines()[0].strip() if (c.text or "").strip() else None
            if act:
                votes.setdefault(act, []).append((c.text, call))
        return [Proposal(a, len(raw) / len(comps), {"votes": len(raw), "samples": len(comps), "raw": raw[0][0][:300],
                                                    "proposed_by": [call for _, call in raw]})
                for a, raw in votes.items()]

    async def _lm_score(self, tree: Tree, node: Node) -> tuple[float, dict[str, Any]]:
        if node.state is not None and node.state.get("error"):
            return 0.0, {"lm_score": None, "why": "invalid action (environment error)"}
        prompt = as_chat(self.meter.llm, self.value_prompt(tree, node))
        comps, _ = await self.meter.generate(prompt, self._params(self.o.value_samples, self.o.value_max_tokens),
                                             purpose="value", node=node)
        scores = [parse_rubric_score(c.text) for c in comps]
        ok = [s for s in scores if s is not None]
        if not ok:
            return 0.0, {"lm_score": None, "unparsed": comps[0].text[-200:] if comps else ""}
        s = sum(ok) / len(ok)
        return (s - 1.0) / 9.0, {"lm_score": s}

    def _key(self, node: Node) -> str:
        if hasattr(self.env, "agreement_key") and node.state is not None:
            return str(self.env.agreement_key(node.state))
        return (node.action or "").strip().lower()

    async def evaluate(self, tree: Tree, parent: Node, children: list[Node]) -> list[Evaluation]:
        lm = await gather_calls(*(self._lm_score(tree, c) for c in children))
        siblings = tree.children(parent)
        total = sum(int(s.details.get("votes", 1)) for s in siblings) or 1
        out = []
        for c, (lm_value, info) in zip(children, lm):
            if c.state is not None and c.state.get("error"):
                sc = 0.0  # invalid actions "agreeing" (same unchanged state) is not consistency
            else:
                key = self._key(c)
                agree = sum(int(s.details.get("votes", 1)) for s in siblings
                            if s.materialised and not (s.state or {}).get("error") and self._key(s) == key)
                sc = agree / total
            v = self.o.lam * lm_value + (1.0 - self.o.lam) * sc
            out.append(Evaluation(v, {**info, "lm": lm_value, "sc": sc, "lam": self.o.lam}))
        return out

    async def terminal_reward(self, tree: Tree, node: Node) -> Evaluation:
        ev = node.details.get("evaluation", {})
        if node.state is None or node.state.get("error") or node.details.get("dead_end"):
            return Evaluation(0.0, {"why": "invalid or dead end"})
        if node.state is not None and hasattr(self.env, "answer") and self.env.answer(node.state) is None:
            return Evaluation(0.0, {"why": "terminal without an answer"})
        if hasattr(self.env, "feedback_reward"):  # e.g. visible tests: environment feedback, not gold
            return Evaluation(float(self.env.feedback_reward(node.state)), {"source": "environment feedback"})
        return Evaluation(float(ev.get("lm", 0.0)), {"lm_score": ev.get("lm_score")})

    async def on_failure(self, tree: Tree, node: Node) -> None:
        prompt = as_chat(self.meter.llm, self.reflection_prompt(tree, node))
        comps, _ = await self.meter.generate(prompt, self._params(1, self.o.reflection_max_tokens),
                                             purpose="reflection", node=node)
        text = " ".join((comps[0].text if comps else "").split())[:600]
        if text:
            node.reflections.append(text)
            tree.reflections.append(text)


class LATS(TreeEngine):
    """LATS as an engine: `await LATS(llm, env_for, options).run(example) -> Rollout`, where `env_for(example)`
    makes the example's LATS environment (see `tree.engine` for the Rollout)."""

    name = "lats"
    options_class = LATSOptions

    def _search(self, meter: Meter, env: Any, example: Mapping[str, Any], tree: Tree | None) -> TreeSearch:
        task = example.get("question") or getattr(env, "task", "") or getattr(env, "puzzle", "")
        return make_search(env, LATSConfig(meter, env, self.options), meter, self.options.settings(), task=str(task),
                           tree=tree)
