"""`Group`: k engines on one example, one Rollout holding every sample (GRPO's group, eval's pass@k / maj@k).

    group = Group.seeded(lambda seed: Direct(llm, sampling=params.replace(seed=seed)), k=8, seed=0)
    rollout = await group.run({"question": "What is 6*7?"})
    rollout.trajectories              # every sample's trajectories, sample 0's first
    rollout.metadata["samples"][j]    # sample j: answer, chosen, trajectories [start, end), usage, engine, metadata
    for sample in Group.split(rollout): ...   # the k per-sample Rollouts back

The group's `answer` and `chosen` are sample 0's (so a group of one equals its single engine's rollout,
apart from `metadata`); `usage` is the sum over samples. Samples run one after another (`concurrency=1`,
the order a stateful or seeded backend reproduces) or up to `concurrency` at once. A sample that raises
fails the whole group (the runner retries the example on its next run). Not covered: choosing an answer
by vote (that is an engine of its own, e.g. DeepConf).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from agentic_infer.concurrency import gather_bounded
from agentic_infer.engines.base import Engine, example_id
from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Usage


class Group:
    """Runs `engines` (one sample each) on an example and returns one Rollout (see the module docstring)."""

    def __init__(self, engines: Sequence[Engine], *, name: str | None = None, concurrency: int = 1):
        if not engines:
            raise ConfigError("Group: engines is empty; pass at least one engine (one per sample)")
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"Group: concurrency={concurrency!r}: must be an integer >= 1")
        self.engines = list(engines)
        self.name = name or self.engines[0].name
        self.concurrency = concurrency

    @classmethod
    def seeded(cls, make: Callable[[int], Engine], k: int, *, seed: int = 0, name: str | None = None,
               concurrency: int = 1) -> Group:
        """`k` samples of one engine, sample j built by `make(seed + j)`."""
        if not isinstance(k, int) or k < 1:
            raise ConfigError(f"Group.seeded: k={k!r}: must be an integer >= 1")
        return cls([make(seed + j) for j in range(k)], name=name, concurrency=concurrency)

    async def run(self, example: Mapping[str, Any]) -> Rollout:
        samples = await gather_bounded(lambda engine: engine.run(example), self.engines, self.concurrency)
        return self.merge(samples, example=example, name=self.name)

    @staticmethod
    def merge(samples: Sequence[Rollout], *, example: Mapping[str, Any], name: str) -> Rollout:
        """One Rollout of `samples` (sample 0 answers); the inverse of `split`."""
        trajectories, records, usage = [], [], Usage()
        for s in samples:
            start = len(trajectories)
            trajectories.extend(s.trajectories)
            usage.add(s.usage)
            chosen = None if s.chosen is None or not s.trajectories else start + s.chosen
            records.append({"answer": s.answer, "chosen": chosen,
                            "trajectories": [start, len(trajectories)], "usage": asdict(s.usage), "engine": s.engine,
                            "rewards": dict(s.rewards), "metadata": s.metadata})
        first = samples[0]
        return Rollout(example_id=example_id(example), trajectories=trajectories, answer=first.answer, usage=usage,
                       engine=name, example=dict(first.example or example), chosen=records[0]["chosen"],
                       metadata={"samples": records})

    @staticmethod
    def split(rollout: Rollout) -> list[Rollout]:
        """The per-sample Rollouts of a group (sharing its Trajectory objects); `[rollout]` for a non-group."""
        records = rollout.metadata.get("samples")
        if not records:
            return [rollout]
        out = []
        for r in records:
            start, end = r["trajectories"]
            out.append(Rollout(example_id=rollout.example_id, trajectories=rollout.trajectories[start:end],
                               answer=r["answer"], rewards=dict(r.get("rewards") or {}), usage=Usage(**r["usage"]),
                               engine=r.get("engine"), example=rollout.example,
                               chosen=None if r["chosen"] is None else r["chosen"] - start,
                               metadata=dict(r.get("metadata") or {})))
        return out
