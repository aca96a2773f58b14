"""TRL's `rollout_func` driven by our engines: multi-turn episodes from the policy's own weights.

    rollout_func = make_rollout_func(lambda llm, seed: SearchO1(llm, retriever, cfg), tokenizer=tok)
    trainer = AgenticGRPOTrainer(model=..., rollout_func=rollout_func, ...)

TRL 1.16 calls `rollout_func(prompts, trainer)` with the raw prompts of the local batch (each repeated
`num_generations` times, consecutive); the engine renders its own chat template, runs the episode
token-in/token-out, and each trajectory becomes `prompt_ids`, `completion_ids`, aligned `logprobs` and
`env_mask` (1 = sampled by the policy, 0 = observation: not trained) through `train.core.masks.completion_view`
(ids as recorded, never re-tokenised; a trainable end-of-turn token after a finished answer; the env mask
truncated with the ids). Extra keys reach the reward functions: `trajectory` (the Trajectory), `rollout_answer`.

Generation on CPU is `HFLLM.from_model` (`PolicyLLM`): the hf backend's decoding loop over the trainer's *current* model object,
so every rollout is sampled from the weights being trained (no off-policyness beyond TRL's own reuse of a
generation batch when `steps_per_generation` or `num_iterations` > 1, which its importance ratio corrects).
On a GPU use TRL's vLLM (colocate or server mode) and a vLLM-backed LLM instead.
Do not use patched trainers that drop `rollout_func` or `env_mask` (Unsloth #3573, #5673): observation
tokens would then be trained on.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentic_infer.backends.hf import HFLLM
from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Trajectory

EngineFactory = Callable[[Any, int | None], Any]  # (llm, seed) -> Engine with `async run(example) -> Rollout`


# The hf backend over the trainer's in-memory model (no files read; the model is not moved or put in eval mode).
PolicyLLM = HFLLM.from_model


def prompt_to_example(prompt: Any, index: int) -> dict[str, Any]:
    """A raw TRL prompt (a question string, or chat messages) as the example an engine runs."""
    if isinstance(prompt, Mapping):
        return {"id": str(prompt.get("id", index)), **prompt}
    if isinstance(prompt, str):
        return {"id": str(index), "question": prompt}
    if isinstance(prompt, Sequence) and prompt and isinstance(prompt[-1], Mapping):
        users = [m for m in prompt if m.get("role") == "user"]
        if not users:
            raise ConfigError(f"prompt {index} has no user message; an engine needs a question")
        return {"id": str(index), "question": str(users[-1]["content"])}
    raise ConfigError(f"prompt {index} is a {type(prompt).__name__}; pass question strings or chat messages")


class RolloutFunc:
    """`rollout_func(prompts, trainer) -> dict` for `GRPOTrainer` (see the module docstring); callable object
    so the trainer, the benchmark and tests can read `last_rollouts` and `timings`."""

    def __init__(self, engine_factory: EngineFactory, *, tokenizer: Any, append_eos: str | None = "finished",
                 max_completion_length: int | None = None, allow_inexact: bool = False, seed: int | None = None,
                 llm_factory: Callable[[Any], Any] | None = None):
        self.engine_factory = engine_factory
        self.tokenizer = tokenizer
        self.append_eos = append_eos
        self.max_completion_length = max_completion_length
        self.allow_inexact = allow_inexact
        self._seeds = itertools.count(seed) if seed is not None else None
        self.llm_factory = llm_factory
        self.last_rollouts: list[Rollout] = []
        self.timings: dict[str, float] = {"engine_s": 0.0, "convert_s": 0.0}

    @property
    def view_kwargs(self) -> dict[str, Any]:
        """The `train.core.masks.completion_view` arguments every completion is built with (token-level
        estimators rebuild the same views)."""
        return {"eos_token_id": self.tokenizer.eos_token_id, "append_eos": self.append_eos,
                "max_completion_length": self.max_completion_length, "allow_inexact": self.allow_inexact}

    def llm_for(self, trainer: Any) -> Any:
        if self.llm_factory is not None:
            return self.llm_factory(trainer)
        model = trainer.accelerator.unwrap_model(trainer.model) if trainer is not None else None
        if model is None:
            raise ConfigError("rollout_func needs the trainer (for its model) or an llm_factory")
        return HFLLM.from_model(model, self.tokenizer)

    async def _episodes(self, llm: Any, examples: list[dict[str, Any]]) -> list[Rollout]:
        out = []
        for ex in examples:  # one model, one sequence at a time (the hf backend serialises anyway)
            seed = next(self._seeds) if self._seeds is not None else None
            out.append(await self.engine_factory(llm, seed).run(ex))
        return out

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, list]:
        from train.core.masks import completion_view

        llm = self.llm_for(trainer)
        examples = [prompt_to_example(p, i) for i, p in enumerate(prompts)]
        t0 = time.perf_counter()
        rollouts = asyncio.run(self._episodes(llm, examples))
        t1 = time.perf_counter()
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                "trajectory": [], "rollout_answer": []}
        for r in rollouts:
            traj = r.trajectory or (r.trajectories[0] if r.trajectories else None)
            if traj is None:
                raise ConfigError(f"engine returned no trajectory for example {r.example_id!r}")
            view = completion_view(traj, **self.view_kwargs)
            if not view.completion_ids:
                raise ConfigError(f"example {r.example_id!r}: the trajectory has no completion tokens "
                                  f"(finish_reason={traj.finish_reason!r}); raise the token budget")
            for k, v in view.to_trl().items():
                out[k].append(v)
            out["trajectory"].append(traj)
            out["rollout_answer"].append(r.answer)
        self.last_rollouts = rollouts
        self.timings["engine_s"] += t1 - t0
        self.timings["convert_s"] += time.perf_counter() - t1
        return out


def make_rollout_func(engine_factory: EngineFactory, **kw: Any) -> RolloutFunc:
    """`RolloutFunc(engine_factory, **kw)`."""
    return RolloutFunc(engine_factory, **kw)


def trajectories_of(inputs: Sequence[Mapping[str, Any]]) -> list[Trajectory]:
    """The trajectories the rollout_func attached to TRL's inputs (in batch order)."""
    missing = [i for i, x in enumerate(inputs) if not isinstance(x.get("trajectory"), Trajectory)]
    if missing:
        raise ConfigError(f"inputs {missing[:5]} carry no trajectory: the estimator needs our rollout_func")
    return [x["trajectory"] for x in inputs]
