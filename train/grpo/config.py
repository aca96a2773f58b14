"""`GRPOSettings`: everything `agentic train grpo --config CONFIG.yaml` reads (YAML + `--set` overrides).

    model: llamacpp://default          # any backend URI load_trainable reads
    data: questions.jsonl              # {"question", "answer"} per line (plus any columns rewards read)
    engine: search-o1                  # an engine of the registry (agentic_infer.engines.registry): search-o1 | tir
                                       # | env (default: env when `env` is set, else search-o1)
    env: ""                            # an env of agentic_infer.envs (agentic envs): rollouts are the env agent's
    env_options: {}                    # episodes, rows its task rows (data, or the env's shipped task file),
                                       # reward its verdict (`env`); per-step rewards and anchor states reach GiGPO
    engine_config: {max_searches: 2, sampling: {max_tokens: 256}}
    index: ""                          # search-o1: a BM25 index folder ("" = the default Wikipedia index)
    reward: em                         # a train.rewards.outcome reward (em, f1, cover_em, math), MODULE:FUNCTION
                                       # (your own: f(RewardInput, **reward_options) -> float), or env (the env
                                       # verdict; the default with `env`)
    estimator: {name: gigpo, omega: 1.0}   # train.grpo.trainer.Estimator: advantages and loss options
    mi_every: 5                        # RAGEN-2's mutual-information probe every N steps (0 = off)
    num_generations: 4
    rollout_batch: 1                   # episodes generated together (the hf backend's lockstep batches; 1 = in turn)
    branching: arpo                    # none | arpo | aepo: each group is one branched rollout (train.grpo.rollout)
    branching_config: {beta: 0.2, tau: 0.5, branch_factor: 1, initial: 2}    # ARPOConfig / AEPOConfig fields,
                                       # window, logprobs; per_prompt is num_generations
    precision: auto                    # auto | fp32 | bf16 | fp16 (train.precision); threads: 0 = all cores, <= 8
    trl: {beta: 0.0}                   # any further GRPOConfig arguments (not bf16 / fp16: that is precision)
    async_staleness: -1                # N >= 0: TRL's AsyncGRPOTrainer with max_staleness N (train.grpo.async_trl)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from agentic_infer.config import renamed
from agentic_infer.engines.registry import get_engine
from agentic_infer.errors import ConfigError
from train.grpo.rollout import BRANCHING, branching_config
from train.grpo.trainer import Estimator
from train.precision import DTYPE_RENAMED, check_settings

ENGINES = ("search-o1", "tir", "env")  # loop engines: one trajectory per episode, the shape GRPO trains on
REWARDS = ("em", "f1", "cover_em", "math", "env")


def custom_reward(spec: str) -> Any:
    """A user's reward named `MODULE:FUNCTION`: `f(inp: train.rewards.RewardInput, **reward_options) -> float`."""
    import importlib

    module, _, name = spec.partition(":")
    if not module or not name:
        raise ConfigError(f"reward={spec!r}: choose one of {REWARDS}, or name your own as MODULE:FUNCTION")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"reward={spec!r}: {e}; the module must be importable (on PYTHONPATH)") from e
    if not callable(fn):
        raise ConfigError(f"reward={spec!r}: {type(fn).__name__} is not callable")
    return fn


@renamed(dtype=DTYPE_RENAMED)
@dataclass(frozen=True)
class GRPOSettings:
    model: str = "llamacpp://default"
    data: str = ""
    out: str = "runs/grpo"
    engine: str = ""  # "" = "env" when `env` is set, else "search-o1" (resolved at construction)
    engine_config: dict[str, Any] = field(default_factory=dict)
    env: str = ""
    env_options: dict[str, Any] = field(default_factory=dict)
    index: str = ""
    reward: str = ""  # "" = "env" when `env` is set, else "em"
    reward_options: dict[str, Any] = field(default_factory=dict)
    estimator: Estimator = field(default_factory=Estimator)
    num_generations: int = 4
    rollout_batch: int = 1
    branching: str = "none"
    branching_config: dict[str, Any] = field(default_factory=dict)
    mi_every: int = 5
    batch_size: int = 4  # completions per micro-batch (x trl.gradient_accumulation_steps: a multiple of num_generations)
    max_steps: int = 10
    learning_rate: float = 1e-6
    max_completion_length: int = 1024
    append_eos: str | None = "finished"
    allow_inexact: bool = False
    seed: int = 0
    gguf: str = "f16"
    precision: str = "auto"  # auto | fp32 | bf16 | fp16: fp32 weights, bf16/fp16 autocast (train.precision)
    threads: int = 0  # torch threads; 0 = every usable core, at most 8
    trl: dict[str, Any] = field(default_factory=dict)
    async_staleness: int = -1  # -1: the synchronous trainer; N >= 0: TRL's AsyncGRPOTrainer, max_staleness N

    DEFAULTS: ClassVar[dict[str, tuple[str, str]]] = {"engine": ("env", "search-o1"), "reward": ("env", "em")}

    def __post_init__(self) -> None:
        for name, (with_env, without) in self.DEFAULTS.items():
            if not getattr(self, name):
                object.__setattr__(self, name, with_env if self.env else without)
        check_settings(self.precision, self.threads, self.trl)
        self._check_env()
        get_engine(self.engine)  # the registry's names ("search_o1" -> did you mean 'search-o1'?)
        if self.engine not in ENGINES:
            raise ConfigError(f"engine={self.engine!r}: GRPO trains loop engines; choose one of {ENGINES}")
        if self.reward not in REWARDS:
            custom_reward(self.reward)
        if self.num_generations < 2 or self.generation_batch % self.num_generations:
            raise ConfigError(f"num_generations={self.num_generations}, batch_size={self.batch_size} x "
                              f"{self.generation_batch // self.batch_size} micro-batches per generation: need "
                              "num_generations >= 2 and the generation batch a multiple of it")
        if self.branching not in BRANCHING:
            raise ConfigError(f"branching={self.branching!r}: choose one of {BRANCHING}")
        if self.branching != "none":
            branching_config(self.branching, self.num_generations, self.branching_config)
        self._check_async()

    def _check_async(self) -> None:
        """Async GRPO (`train.grpo.async_trl`) trains scalar advantages of plain episodes."""
        from train.grpo.async_trl import SCALAR_ESTIMATORS

        if not isinstance(self.async_staleness, int) or self.async_staleness < -1:
            raise ConfigError(f"async_staleness={self.async_staleness!r}: -1 (synchronous) or a staleness bound >= 0")
        if self.async_staleness < 0:
            return
        if self.estimator.name not in SCALAR_ESTIMATORS:
            raise ConfigError(f"async_staleness={self.async_staleness} with estimator {self.estimator.name!r}: TRL's "
                              f"async samples carry one advantage each; choose one of {SCALAR_ESTIMATORS}")
        if self.branching != "none":
            raise ConfigError(f"async_staleness={self.async_staleness} with branching={self.branching!r}: not covered")

    @property
    def generation_batch(self) -> int:
        """Completions generated together: `batch_size` x TRL's steps_per_generation (default its
        gradient_accumulation_steps), the batch the groups must tile."""
        steps = self.trl.get("steps_per_generation") or self.trl.get("gradient_accumulation_steps") or 1
        return self.batch_size * int(steps)

    def _check_env(self) -> None:
        """`env` runs the env agent (engine "env"), and the env reward reads only the env agent's verdict."""
        if not self.env:
            if self.engine == "env":
                raise ConfigError("engine='env' needs env: NAME (an env of `agentic envs`, e.g. env: retail); set "
                                  "env (and env_options) instead of engine_config.env")
            if self.reward == "env":
                raise ConfigError("reward='env' reads the env agent's verdict: set env: NAME (engine env)")
            return
        from agentic_infer.envs.registry import get_env_spec

        get_env_spec(self.env)  # an unknown name lists the registered ones
        if self.engine != "env":
            raise ConfigError(f"env={self.env!r} with engine={self.engine!r}: an env is driven by the env agent, "
                              "engine 'env'; set engine: env (or leave engine unset)")
        for key, value in (("env", self.env), ("env_options", self.env_options)):
            if key in self.engine_config and self.engine_config[key] != value:
                raise ConfigError(f"engine_config.{key}={self.engine_config[key]!r} differs from {key}={value!r}; "
                                  f"set it once, as {key}")
        if not isinstance(self.env_options, dict):
            raise ConfigError(f"env_options={self.env_options!r}: must be a mapping of make_env options")
