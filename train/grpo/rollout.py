"""TRL's `rollout_func` driven by our engines: multi-turn episodes from the policy's own weights.

    rollout_func = make_rollout_func(lambda llm, seed: SearchO1(llm, retriever, cfg), tokenizer=tok)
    trainer = AgenticGRPOTrainer(model=..., rollout_func=rollout_func, ...)

TRL 1.16 calls `rollout_func(prompts, trainer)` with the raw prompts of the local batch (each repeated
`num_generations` times, consecutive); the engine renders its own chat template, runs the episode
token-in/token-out, and each trajectory becomes `prompt_ids`, `completion_ids`, aligned `logprobs` and
`env_mask` (1 = sampled by the policy, 0 = observation: not trained) through `train.core.masks.completion_view`
(ids as recorded, never re-tokenised; a trainable end-of-turn token after a finished answer; the env mask
truncated with the ids). Extra keys reach the reward functions: `trajectory` (the Trajectory), `rollout_answer`.
A prompt becomes the engine's example through `example_for` (default `prompt_to_example`: a question string or
chat messages); env task rows travel as their JSON text (`task_row_prompt`) and come back with `task_row_example`.

Branching (`branching="arpo"|"aepo"`, `train.grpo.config.GRPOSettings.branching`): the prompts arrive as
consecutive blocks of `num_generations` copies (TRL's RepeatSampler, `mini_repeat_count=num_generations`); each
block is one group and runs ONE `agentic_infer.engines.branching.BranchingRollout` over the engine (a loop engine:
Search-o1, TIR, the env agent, whose env each branch forks) with its per-prompt budget set to the group size (ARPO: `initial` roots, default half of it, and
the rest for branches; AEPO: `per_prompt` = the group size). When fewer branches happen than the budget allows,
extra roots (plain episodes, seeded as further chains) fill the group, so every block returns exactly
`num_generations` rows: the Rollout's trajectories in order (roots, branches with `parent_id` / `branch_token`, then
fill roots; `metadata["branching"]["filled"]`). The groups of a call run together (their turns batch). The group's rows stay consecutive, so the trainer's `arpo` estimator
attributes over the real branch structure. `last_rollouts` holds one Rollout per group. Each process's slice must
hold whole groups (`per_device_train_batch_size` × `steps_per_generation` a multiple of `num_generations`, which a
single process always satisfies); otherwise a ConfigError.

Generation on CPU is `HFLLM.from_model` (`PolicyLLM`): the hf backend's decoding loop over the trainer's *current* model object,
so every rollout is sampled from the weights being trained; with `rollout_batch` = N > 1 up to N episodes run
concurrently and their turns are decoded together in lockstep batches (`agentic_infer.backends.hf_batch`) (no off-policyness beyond TRL's own reuse of a
generation batch when `steps_per_generation` or `num_iterations` > 1, which its importance ratio corrects).
On a GPU use TRL's vLLM (colocate or server mode) and a vLLM-backed LLM instead.
Do not use patched trainers that drop `rollout_func` or `env_mask` (Unsloth #3573, #5673): observation
tokens would then be trained on.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentic_infer.backends.hf import HFLLM
from agentic_infer.engines.branching import SEED_STRIDE, AEPOConfig, ARPOConfig, BranchingRollout
from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Trajectory

EngineFactory = Callable[[Any, int | None], Any]  # (llm, seed) -> Engine with `async run(example) -> Rollout`
BRANCHING = ("none", "arpo", "aepo")
BRANCHING_ENGINE_KEYS = ("window", "logprobs")  # BranchingRollout's own arguments; the rest is the strategy's config


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


def task_row_prompt(row: Mapping[str, Any]) -> str:
    """An env's task row as a TRL prompt: its JSON text (a string column, so the row is never re-typed by Arrow;
    `task_row_example` reads it back)."""
    return json.dumps(dict(row), ensure_ascii=False, sort_keys=True)


def task_row_example(prompt: Any, index: int) -> dict[str, Any]:
    """The task row a `task_row_prompt` prompt holds, as the example the env agent runs (its "id" kept)."""
    try:
        row = json.loads(prompt) if isinstance(prompt, str) else None
    except json.JSONDecodeError:
        row = None
    if not isinstance(row, dict):
        raise ConfigError(f"prompt {index} is not an env task row's JSON text ({str(prompt)[:80]!r}); env rows come "
                          "from train.grpo.run.read_env_rows")
    return {"id": str(row.get("id", index)), **row}


def branching_config(strategy: str, group_size: int, options: Mapping[str, Any] | None = None
                     ) -> tuple[ARPOConfig | AEPOConfig, dict[str, Any]]:
    """(the strategy's config with `per_prompt` = `group_size`, BranchingRollout keywords) from plain `options`
    (`ARPOConfig` / `AEPOConfig` fields plus `window` and `logprobs`); ARPO's `initial` defaults to half the group."""
    from agentic_infer.config import build_config

    if strategy not in ("arpo", "aepo"):
        raise ConfigError(f"branching={strategy!r}: choose one of {BRANCHING}")
    opts = dict(options or {})
    engine_kw = {k: opts.pop(k) for k in BRANCHING_ENGINE_KEYS if k in opts}
    if opts.get("per_prompt", group_size) != group_size:
        raise ConfigError(f"branching per_prompt={opts['per_prompt']!r}: the budget per prompt is num_generations "
                          f"({group_size}); leave it unset")
    opts["per_prompt"] = group_size
    if strategy == "arpo":
        opts.setdefault("initial", max(1, group_size // 2))
    cls = ARPOConfig if strategy == "arpo" else AEPOConfig
    return build_config(cls, overrides=opts, source="branching_config"), engine_kw


def prompt_groups(prompts: Sequence[Any], group_size: int) -> list[int]:
    """The first row of each group: TRL sends each prompt `group_size` times, consecutively."""
    if group_size < 1 or len(prompts) % group_size:
        raise ConfigError(f"{len(prompts)} prompts do not split into groups of num_generations={group_size}: "
                          "branching needs whole groups per process (per_device_train_batch_size × "
                          "steps_per_generation a multiple of num_generations)")
    starts = list(range(0, len(prompts), group_size))
    for s in starts:
        if any(p != prompts[s] for p in prompts[s:s + group_size]):
            raise ConfigError(f"prompts {s}..{s + group_size - 1} are not one prompt repeated: branching needs "
                              "TRL's RepeatSampler order (each prompt num_generations times, consecutively)")
    return starts


class RolloutFunc:
    """`rollout_func(prompts, trainer) -> dict` for `GRPOTrainer` (see the module docstring); callable object
    so the trainer, the benchmark and tests can read `last_rollouts` and `timings`."""

    def __init__(self, engine_factory: EngineFactory, *, tokenizer: Any, append_eos: str | None = "finished",
                 max_completion_length: int | None = None, allow_inexact: bool = False, seed: int | None = None,
                 llm_factory: Callable[[Any], Any] | None = None, branching: str = "none",
                 branching_options: Mapping[str, Any] | None = None, num_generations: int | None = None,
                 example_for: Callable[[Any, int], dict[str, Any]] = prompt_to_example, rollout_batch: int = 1):
        if branching not in BRANCHING:
            raise ConfigError(f"branching={branching!r}: choose one of {BRANCHING}")
        if branching != "none":
            branching_config(branching, max(2, num_generations or 2), branching_options)  # fail early on bad keys
        self.branching = branching
        self.branching_options = dict(branching_options or {})
        self.num_generations = num_generations  # None: the trainer's (num_generations / num_generations_eval)
        self.engine_factory = engine_factory
        self.example_for = example_for  # raw TRL prompt -> the example the engine runs (env rows: task_row_example)
        self.tokenizer = tokenizer
        self.append_eos = append_eos
        self.max_completion_length = max_completion_length
        self.allow_inexact = allow_inexact
        self._seeds = itertools.count(seed) if seed is not None else None
        self.llm_factory = llm_factory
        if not isinstance(rollout_batch, int) or rollout_batch < 1:
            raise ConfigError(f"rollout_batch={rollout_batch!r}: episodes decoded together, an int >= 1")
        self.rollout_batch = rollout_batch
        self._llm: Any = None  # the policy backend, kept while the trainer's model object stays the same
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
        if self._llm is None or self._llm.model is not model:
            self._llm = HFLLM.from_model(model, self.tokenizer, batch=self.rollout_batch)
        return self._llm

    def _draw_seeds(self, n: int, trainer: Any) -> list[int | None]:
        """Seeds for this process's `n` episodes (or groups), numbered over the global batch: of each draw of
        n x processes seeds, rank r takes block r, so a run on several processes seeds every episode as one process
        would (its batch is the ranks' batches in rank order) and no two ranks share a seed."""
        if self._seeds is None:
            return [None] * n
        acc = getattr(trainer, "accelerator", None)
        rank, world = (acc.process_index, acc.num_processes) if acc is not None else (0, 1)
        block = [next(self._seeds) for _ in range(n * world)]
        return block[rank * n:(rank + 1) * n]

    async def _episodes(self, llm: Any, examples: list[dict[str, Any]], seeds: list[int | None]) -> list[Rollout]:
        """One episode per example with its seed; up to the backend's concurrency at once (a batching backend
        decodes their turns together), results in example order."""
        gate = asyncio.Semaphore(getattr(llm, "max_concurrency", None) or 1)

        async def one(ex: dict[str, Any], seed: int | None) -> Rollout:
            async with gate:
                return await self.engine_factory(llm, seed).run(ex)

        return list(await asyncio.gather(*(one(ex, seed) for ex, seed in zip(examples, seeds))))

    def group_size(self, trainer: Any) -> int:
        if self.num_generations is not None:
            return self.num_generations
        if trainer is None:
            raise ConfigError("branching needs the group size: pass num_generations= or the trainer")
        return trainer.num_generations if trainer.model.training else trainer.num_generations_eval

    async def _branched(self, llm: Any, examples: list[dict[str, Any]], size: int,
                        seeds: list[int | None]) -> list[Rollout]:
        """One BranchingRollout per group, filled with extra roots to exactly `size` trajectories; the groups run
        together (a batching backend decodes their turns together), one seed per group, results in example order."""
        cfg, engine_kw = branching_config(self.branching, size, self.branching_options)

        async def group(ex: dict[str, Any], seed: int | None) -> Rollout:
            engine = self.engine_factory(llm, seed)
            if not (hasattr(engine, "loop") and hasattr(engine, "start")):
                raise ConfigError(f"branching={self.branching!r} needs a loop engine (Search-o1, TIR, env); "
                                  f"{type(engine).__name__} has no episodes to fork")
            rollout = await BranchingRollout(engine, self.branching, cfg, seed=seed, **engine_kw).run(ex)
            base = engine.loop.sampling.seed if engine.loop.sampling.seed is not None else seed
            filled = size - len(rollout.trajectories)
            # fewer branches than the budget: more roots, seeded as the next chains, run together
            extras = await asyncio.gather(*(self.engine_factory(llm, None if base is None else base + SEED_STRIDE * k
                                                                 ).run(ex) for k in range(len(rollout.trajectories), size)))
            for extra in extras:
                if not extra.trajectories:
                    raise ConfigError(f"engine returned no trajectory for example {extra.example_id!r}")
                rollout.trajectories.append(extra.trajectories[0])
                rollout.usage.add(extra.usage)
            if len(rollout.trajectories) != size:
                raise ConfigError(f"example {rollout.example_id!r}: {len(rollout.trajectories)} trajectories for a "
                                  f"group of {size}; the branching budget must not exceed num_generations")
            rollout.metadata["branching"]["filled"] = filled
            return rollout

        return list(await asyncio.gather(*(group(ex, seed) for ex, seed in zip(examples, seeds))))

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, list]:
        from train.core.masks import completion_view

        llm = self.llm_for(trainer)
        t0 = time.perf_counter()
        if self.branching == "none":
            examples = [self.example_for(p, i) for i, p in enumerate(prompts)]
            rollouts = asyncio.run(self._episodes(llm, examples, self._draw_seeds(len(examples), trainer)))
            rows = [(r, r.trajectory or (r.trajectories[0] if r.trajectories else None), r.answer) for r in rollouts]
        else:
            size = self.group_size(trainer)
            examples = [self.example_for(prompts[s], s) for s in prompt_groups(prompts, size)]
            rollouts = asyncio.run(self._branched(llm, examples, size, self._draw_seeds(len(examples), trainer)))
            rows = [(r, t, t.answer) for r in rollouts for t in r.trajectories]  # each group's rows consecutive
        t1 = time.perf_counter()
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [],
                                "trajectory": [], "rollout_answer": []}
        for r, traj, answer in rows:
            if traj is None:
                raise ConfigError(f"engine returned no trajectory for example {r.example_id!r}")
            view = completion_view(traj, **self.view_kwargs)
            if not view.completion_ids:
                raise ConfigError(f"example {r.example_id!r}: the trajectory has no completion tokens "
                                  f"(finish_reason={traj.finish_reason!r}); raise the token budget")
            for k, v in view.to_trl().items():
                out[k].append(v)
            out["trajectory"].append(traj)
            out["rollout_answer"].append(answer)
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
