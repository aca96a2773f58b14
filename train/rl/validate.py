"""Validation of a game policy while it trains: greedy env-agent episodes on a fixed set of seeds.

    res = validate(model, tokenizer, rows, game="frozenlake", agent=agent_settings, batch=16)
    res["success"], res["successes"], res["calls"]
    callback = ValidationCallback(rows, every=5, game="frozenlake", agent=..., batch=16, log=path)  # TRL callback

The policy runs on the model object being trained (the hf backend's lockstep batches, `batch` episodes at a
time, temperature 0), so a point of the curve is the weights at that optimizer step. `ValidationCallback`
validates before the first step (step 0: the start; or `start`, the point the recipe's SFT stage measured on the
same weights and rows, which saves one validation per estimator. Inside the trainer the forward runs under the
run's autocast, bf16 on a bf16 CPU, outside it in fp32; on the FrozenLake SFT start both gave the same outcomes,
`bench/rl_val_precision.py`), every `every` steps and after the last one, and appends each point to `log`
(JSONL) as it is made.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


def validate(model: Any, tokenizer: Any, rows: Sequence[Mapping[str, Any]], *, game: str,
             agent: Mapping[str, Any], batch: int = 16) -> dict[str, Any]:
    """Greedy episodes of the env agent over `game` on `rows`: success rate, per-row successes, mean tool calls."""
    import torch

    from agentic_infer.backends.hf import HFLLM
    from agentic_infer.engines.env_agent import EnvAgent, EnvAgentConfig
    from agentic_infer.types import SamplingParams

    llm = HFLLM.from_model(model, tokenizer, batch=batch)
    cfg = EnvAgentConfig(env=game, **{**agent, "sampling": SamplingParams(temperature=0.0, logprobs=None)})

    async def go() -> list[Any]:
        gate = asyncio.Semaphore(batch)

        async def one(row: Mapping[str, Any]) -> Any:
            async with gate:
                return (await EnvAgent(llm, cfg).run(dict(row))).trajectory

        return list(await asyncio.gather(*(one(r) for r in rows)))

    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            trajs = asyncio.run(go())
    finally:
        model.train(was_training)
    wins = [float(t.rewards.get("success", 0.0)) for t in trajs]
    return {"success": sum(wins) / max(1, len(wins)), "successes": wins,
            "calls": sum(len(t.steps) for t in trajs) / max(1, len(trajs)), "episodes": len(trajs)}


class ValidationCallback(TrainerCallback):
    """Validate every `every` optimizer steps and at the end (see the module docstring); `points` holds
    {"step", "success", "calls"} dicts, also appended to `log`."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], *, every: int, game: str, agent: Mapping[str, Any],
                 batch: int, tokenizer: Any, log: str | Path | None = None, start: Mapping[str, Any] | None = None):
        self.rows, self.every, self.game, self.agent, self.batch = list(rows), every, game, dict(agent), batch
        self.tokenizer = tokenizer
        self.log = Path(log) if log is not None else None
        self.points: list[dict[str, Any]] = []  # a resumed run keeps the points its log already holds
        if self.log is not None and self.log.is_file():
            self.points = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        if start is not None and not self.points:  # the start's point, measured already on these weights and rows
            self._record({k: start[k] for k in ("step", "success", "calls", "successes")})

    def _point(self, step: int, model: Any) -> None:
        if any(p["step"] == step for p in self.points):
            return
        res = validate(model, self.tokenizer, self.rows, game=self.game, agent=self.agent, batch=self.batch)
        self._record({"step": step, "success": res["success"], "calls": res["calls"], "successes": res["successes"]})

    def _record(self, point: dict[str, Any]) -> None:
        self.points.append(point)
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(point) + "\n")

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        self._point(state.global_step, model)

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        if self.every > 0 and state.global_step % self.every == 0:
            self._point(state.global_step, model)

    def on_train_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        self._point(state.global_step, model)


__all__ = ["ValidationCallback", "validate"]
