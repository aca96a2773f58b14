"""The one engine contract: `await engine.run(example) -> Rollout`.

Every engine (direct/CoT generation, Search-o1, TIR, DeepConf, LATS, RAP) is a plain class with a
`name` and `async run(example) -> Rollout`; `agentic_infer.runner.run_many` drives any of them with
bounded concurrency, progress and resumable output. Engines built on the agent loop also expose
their episodes (`EpisodicEngine`), which lets the runner's `lockstep` scheduler advance a whole
batch one turn at a time as the Search-o1 reference does.

An example is a mapping with at least a `question`; its id is `example_id(example)`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentic_infer.types import Rollout, Trajectory

if TYPE_CHECKING:
    from agentic_infer.engines.loop import AgentLoop, Episode


def check_one_sample(owner: str, sampling: Any, why: str) -> None:
    """A ConfigError unless an engine config's `sampling` is a SamplingParams with n = 1 (`why`: what to do instead)."""
    from agentic_infer.errors import ConfigError
    from agentic_infer.types import SamplingParams

    if not isinstance(sampling, SamplingParams):
        raise ConfigError(f"{owner}.sampling={sampling!r}: pass a SamplingParams (or a mapping of its fields "
                          "through build_config, e.g. --set sampling.temperature=0.7)")
    if sampling.n != 1:
        raise ConfigError(f"{owner}.sampling.n={sampling.n}: {why}")


def example_id(example: Mapping[str, Any]) -> str:
    """The example's own id (`id`, `_id`, `qid`), else a hash of its question."""
    for key in ("id", "_id", "qid"):
        if example.get(key) is not None:
            return str(example[key])
    blob = json.dumps(example.get("question", example), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


@runtime_checkable
class Engine(Protocol):
    name: str

    async def run(self, example: Mapping[str, Any]) -> Rollout: ...


@runtime_checkable
class EpisodicEngine(Engine, Protocol):
    """An engine on the agent loop: episodes it can start, step (via `loop`) and turn into a Rollout."""

    loop: AgentLoop

    def start(self, example: Mapping[str, Any]) -> Episode: ...
    def rollout(self, episode: Episode) -> Rollout: ...


def single_rollout(trajectory: Trajectory, example: Mapping[str, Any], *, engine: str,
                   metadata: dict[str, Any] | None = None) -> Rollout:
    """The Rollout of an engine that makes one trajectory per example (answer and usage are the trajectory's)."""
    return Rollout(example_id=example_id(example), trajectories=[trajectory], answer=trajectory.answer,
                   usage=trajectory.usage, engine=engine, example=dict(example), chosen=0,
                   metadata=dict(metadata or {}))


class LoopEngine:
    """Base of the engines on the agent loop (Search-o1, TIR): subclasses set `self.loop` and define `start`."""

    loop: AgentLoop

    @property
    def name(self) -> str:
        return self.loop.engine

    def start(self, example: Mapping[str, Any]) -> Episode:
        raise NotImplementedError

    def rollout(self, episode: Episode) -> Rollout:
        return single_rollout(episode.trajectory, episode.example, engine=self.name)

    async def run(self, example: Mapping[str, Any]) -> Rollout:
        episode = self.start(example)
        while not episode.done:
            await self.loop.step([episode])
        return self.rollout(episode)
