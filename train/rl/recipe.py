"""`agentic train rl` (`make rl`): RL that visibly learns on CPU, RAGEN's games, resumable by stage, under `runs/rl/`.

    result = run_rl(RLSettings(game="frozenlake"))   # runs/rl/frozenlake/{sft,grpo,gigpo}/policy.gguf, runs/rl/report.md

Stages (`train.stages`: a rerun with the same settings skips a finished stage; a changed setting reruns it and
everything after it; an RL stage stopped midway resumes its last checkpoint, saved every `save_steps` steps):
1. `demos`: the game's optimal solver (`env.solve()`) played through the env agent on seeds
   `0 .. demo_seeds-1` (`synth.envtasks.demos.play_script`, the prompt the policy will see) -> token-exact
   SFT rows (`demos/sft.jsonl`). Few on purpose, so that the SFT start does not saturate.
2. `sft`: full fine-tuning of `model` on them (`train.sft.train_sft`) -> `sft/model/` and `sft/policy.gguf`,
   then the SFT policy's success on the validation seeds (step 0 of every RL curve).
3. one stage per estimator in `estimators` (default `grpo`, `gigpo`; also `dr_grpo`, `rloo`, `grpo_batch`, and
   `arpo` / `aepo`: the group of `rl_generations` episodes is ARPO's / AEPO's branched rollout, roots plus branches
   forked after a move with their own copy of the env, trained with the `arpo` estimator, the same episodes per
   step as the others): `rl_steps` optimizer steps from the SAME
   SFT weights, at equal rollouts per step (`rl_tasks` seeds x `rl_generations` episodes), learning rate and
   sampling; env-agent rollouts on the current weights (`rollout_batch` episodes decoded together), reward the
   env's verdict (1 on the goal within the step limit), GiGPO with anchor states = the board text (γ, ω);
   validation every `val_every` steps (`train.rl.validate`) -> `<estimator>/model/`, `<estimator>/policy.gguf`,
   `<estimator>/validation.jsonl`, the per-step log.
4. `report`: `runs/rl/<game>/report.md` and `runs/rl/report.md` (every game under `out`), with PNG plots
   (`train.rl.report`).
Seeds: demos from 0, RL tasks from `train_seed_start` (10000), validation from `val_seed_start` (800000);
seeds from 900000 up are held out for `make rl-eval` and refused here.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from train.precision import Compute, check_settings, resolve_compute
from train.stages import run_stages

GAMES = ("frozenlake", "sokoban")
# Each game's default board settings, under the `board` ones: FrozenLake's described view (the grid plus a line in
# action words), since on the grid alone the SFT start played one move sequence on every board (BENCHMARKS "RL on
# games": validation 4/32, RAGEN-2's MI proxy 0.0001) and with the view 23/32, MI 0.02; `board={"view": "grid"}`
# is RAGEN's.
GAME_BOARDS: dict[str, dict[str, Any]] = {"frozenlake": {"view": "described"}, "sokoban": {}}
HELD_OUT_FROM = 900000  # seeds kept for held-out checks: never trained or validated on
RL_ESTIMATORS = ("grpo", "gigpo", "dr_grpo", "rloo", "grpo_batch", "arpo", "aepo")
# Stages whose rollouts branch (ARPO / AEPO: each group = roots + branches forked after a tool result, with its env,
# `train.grpo.rollout`); trained with the `arpo` estimator (advantages attributed over the shared prefixes).
BRANCHED = ("arpo", "aepo")


@dataclass(frozen=True)
class RLSettings:
    """Everything the recipe reads (`--set KEY=VALUE`); `quick=True` shrinks it to a test-sized run."""

    out: str = "runs/rl"
    game: str = "frozenlake"
    board: dict[str, Any] = field(default_factory=dict)  # per-task env settings (e.g. size) over GAME_BOARDS[game]
    model: str = "llamacpp://default"
    demo_seeds: int = 16  # 4 SFT steps: a start at 0.22 validation (64 demos: 0.72, close to saturated; BENCHMARKS)
    sft_epochs: float = 1.0
    sft_lr: float = 5e-5
    sft_batch: int = 4
    train_seed_start: int = 10000
    train_seeds: int = 512
    val_seed_start: int = 800000
    val_size: int = 32
    val_every: int = 4
    estimators: tuple[str, ...] = ("grpo", "gigpo")
    rl_steps: int = 12
    rl_tasks: int = 4  # seeds per step (2 x 8: the groups of a step agreed too often, one board moved the policy)
    rl_generations: int = 4  # episodes per seed (the group)
    rl_lr: float = 2e-5  # below the SFT stage's 5e-5, which collapsed a strong start in two updates (BENCHMARKS)
    temperature: float = 1.0  # rollouts and TRL's log-probs (RAGEN's rollout temperature)
    gamma: float = 0.95  # GiGPO step-return discount (the paper's)
    omega: float = 1.0  # GiGPO step-advantage weight (the paper's)
    max_calls: int = 10  # = RAGEN's FrozenLake step limit
    turn_tokens: int = 48  # tokens per generated turn
    tool_schemas: str = "compact"  # the env agent's tool section: one signature line (314 prompt tokens, not 381)
    rollout_batch: int = 16
    micro_batch: int = 1  # sequences per forward/backward, accumulated into the step's one update (4: GiGPO OOM at 24 GB)
    save_steps: int = 4
    mi_every: int = 4
    gguf: str = "f16"
    precision: str = "auto"
    threads: int = 0
    seed: int = 0
    quick: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "estimators", tuple(self.estimators))
        check_settings(self.precision, self.threads, {})
        if self.game not in GAMES:
            raise ConfigError(f"game={self.game!r}: choose one of {GAMES}")
        object.__setattr__(self, "board", {**GAME_BOARDS[self.game], **self.board})  # the stage hashes see it
        bad = [e for e in self.estimators if e not in RL_ESTIMATORS]
        if bad or not self.estimators or len(set(self.estimators)) != len(self.estimators):
            raise ConfigError(f"estimators={list(self.estimators)!r}: distinct names from {RL_ESTIMATORS}")
        for name, first, count in (("demo", 0, self.demo_seeds), ("train", self.train_seed_start, self.train_seeds),
                                   ("val", self.val_seed_start, self.val_size)):
            if count < 1 or first < 0 or first + count > HELD_OUT_FROM:
                raise ConfigError(f"{name} seeds {first}..{first + count - 1}: need >= 1 seed, all below "
                                  f"{HELD_OUT_FROM} (seeds from {HELD_OUT_FROM} up are held out)")
        if self.rl_generations < 2:
            raise ConfigError(f"rl_generations={self.rl_generations}: a group needs >= 2 episodes")

    def effective(self) -> RLSettings:
        """`quick`: 2 demos, 1 SFT step, 1 RL step of 2 x 2 short episodes per estimator, 2 validation seeds."""
        if not self.quick:
            return self
        return replace(self, demo_seeds=2, sft_epochs=1.0, sft_batch=2, val_size=2, val_every=1, rl_steps=1,
                       rl_tasks=1, rl_generations=2, max_calls=3, turn_tokens=16, rollout_batch=2, mi_every=0,
                       train_seeds=4)

    def rows(self, first: int, count: int) -> list[dict[str, Any]]:
        """Task rows of seeds first .. first+count-1 ({"id", "seed", **board})."""
        return [{"id": f"{self.game}-{s}", "seed": s, **self.board} for s in range(first, first + count)]

    @property
    def agent(self) -> dict[str, Any]:
        """The env agent's settings for demos, rollouts and validation (the same prompt everywhere)."""
        return {"max_calls": self.max_calls, "max_turns": self.max_calls + 2, "max_tokens_per_turn": self.turn_tokens,
                "tool_schemas": self.tool_schemas}


STAGE_KEYS = {
    "demos": ("game", "board", "model", "demo_seeds", "max_calls", "tool_schemas"),
    "sft": ("sft_epochs", "sft_lr", "sft_batch", "precision", "seed", "val_seed_start", "val_size", "turn_tokens",
            "gguf"),
    "rl": ("rl_steps", "rl_tasks", "rl_generations", "rl_lr", "temperature", "gamma", "omega", "train_seed_start",
           "train_seeds", "val_every", "turn_tokens", "precision", "seed"),
}


def demo_rows(s: RLSettings, d: Path) -> dict[str, Any]:
    """The solver's moves on each demo seed, played through the env agent -> `d/sft.jsonl` (tokenized rows)."""
    from agentic_infer.envs.registry import make_env
    from synth.envtasks.demos import play_script, tool_call_text
    from train.core.masks import sft_row
    from train.distill.recipe import model_vocab

    vocab = model_vocab(s.model)
    eos = vocab.tokenizer.encode(vocab.end_of_turn())
    kept, rejected, moves, lengths = 0, 0, [], []
    with (d / "sft.jsonl").open("w", encoding="utf-8") as f:
        for row in s.rows(0, s.demo_seeds):
            solution = list(make_env(s.game, row).solve())
            turns = [tool_call_text("act", {"action": a}) for a in solution]
            traj, reason = asyncio.run(play_script(row, turns, vocab, env=s.game, calls=len(turns),
                                                   agent={k: v for k, v in s.agent.items() if k != "max_calls"}))
            if reason is not None or len(solution) > s.max_calls:
                rejected += 1
                continue
            r = sft_row(traj, eos_token_id=eos[0] if len(eos) == 1 else None, append_eos="finished")
            f.write(json.dumps({"input_ids": r["input_ids"], "labels": r["labels"]}) + "\n")
            kept += 1
            moves.append(len(solution))
            lengths.append(len(r["input_ids"]))
    if not kept:
        raise ConfigError(f"demos: no verified demonstration of {s.game} on seeds 0..{s.demo_seeds - 1}")
    return {"demos": kept, "rejected": rejected, "mean_moves": round(sum(moves) / kept, 2),
            "max_row_tokens": max(lengths), "mean_row_tokens": round(sum(lengths) / kept, 1)}


def stage_sft(s: RLSettings, d: Path, demos: Path, *, compute: Compute) -> dict[str, Any]:
    from train.model_io import load_trainable
    from train.rl.validate import validate
    from train.sft import SFTResult, SFTSettings, train_sft

    done = d / "model" / "sft_result.json"  # a stage stopped after training (in validation) keeps its weights
    if done.is_file():
        saved = json.loads(done.read_text())
        res = SFTResult(**{f.name: saved[f.name] for f in fields(SFTResult) if f.name in saved})
    else:
        res = train_sft(SFTSettings(model=s.model, data=str(demos / "sft.jsonl"), out=str(d / "model"),
                                    epochs=s.sft_epochs, learning_rate=s.sft_lr, batch_size=s.sft_batch,
                                    max_length=4096, gguf=s.gguf, seed=s.seed, precision=s.precision,
                                    threads=s.threads), compute=compute)
    shutil.rmtree(d / "model" / "trainer", ignore_errors=True)
    if res.gguf:
        shutil.copyfile(res.gguf, d / "policy.gguf")
    model, tokenizer = load_trainable(str(d / "model"))
    t0 = time.perf_counter()
    val = validate(model, tokenizer, s.rows(s.val_seed_start, s.val_size), game=s.game, agent=s.agent,
                   batch=s.val_size)
    return {"steps": res.steps, "rows": res.rows, "trained_tokens": res.tokens, "train_s": round(res.train_seconds, 1),
            "train_loss": res.metrics.get("train_loss"), "precision": str(compute.precision),
            "threads": compute.threads, "gguf": str(d / "policy.gguf") if res.gguf else None,
            "validation": {"step": 0, "success": val["success"], "calls": val["calls"],
                           "successes": val["successes"], "seconds": round(time.perf_counter() - t0, 1)},
            "history": [{k: h.get(k) for k in ("step", "loss", "mean_token_accuracy") if k in h} for h in res.history]}


CURVE_KEYS = ("step", "reward", "reward_std", "entropy", "loss", "grad_norm", "diag/zero_std_share",
              "diag/group_reward_std", "diag/anchor_share", "diag/branch_share", "diag/trained_rows", "diag/mi", "diag/mi_retrieval_acc", "diag/clip_frac",
              "completions/mean_length", "step_time")


def stage_rl(s: RLSettings, estimator: str, d: Path, sft: Path, *, compute: Compute) -> dict[str, Any]:
    """`rl_steps` steps of `estimator` from the SFT weights (see the module docstring)."""
    from agentic_infer.types import SamplingParams
    from train.grpo.config import GRPOSettings
    from train.grpo.rollout import task_row_prompt
    from train.grpo.run import build_grpo_trainer
    from train.grpo.trainer import Estimator
    from train.model_io import export_gguf, load_trainable, save_checkpoint
    from train.rl.validate import ValidationCallback
    from train.trainer_args import last_checkpoint

    est = Estimator(name="arpo" if estimator in BRANCHED else estimator, gamma=s.gamma, omega=s.omega)
    per_step = s.rl_tasks * s.rl_generations
    micro = math.gcd(per_step, s.micro_batch)
    gs = GRPOSettings(model=str(sft / "model"), out=str(d / "model"), env=s.game, num_generations=s.rl_generations,
                      batch_size=micro, rollout_batch=s.rollout_batch, max_steps=s.rl_steps,
                      learning_rate=s.rl_lr, max_completion_length=4096, seed=s.seed, gguf="none", estimator=est,
                      branching=estimator if estimator in BRANCHED else "none",
                      mi_every=s.mi_every, precision=s.precision, threads=s.threads,
                      engine_config={**s.agent, "sampling": SamplingParams(temperature=s.temperature, logprobs=0)},
                      trl={"save_strategy": "steps", "save_steps": s.save_steps, "save_total_limit": 1,
                           "temperature": s.temperature,  # TRL's log-probs: logits / temperature, as sampled
                           "gradient_checkpointing": False,  # micro-batches keep memory low; no recompute
                           "gradient_accumulation_steps": per_step // micro,  # one optimizer step per generation
                           "output_dir": str(d / "trainer")})
    model, tokenizer = load_trainable(gs.model)
    rows = [{"prompt": task_row_prompt(r), "env_task_id": r["id"]} for r in s.rows(s.train_seed_start, s.train_seeds)]
    trainer = build_grpo_trainer(gs, model, tokenizer, rows, precision=compute.precision)
    val = ValidationCallback(s.rows(s.val_seed_start, s.val_size), every=s.val_every, game=s.game, agent=s.agent,
                             batch=s.val_size, tokenizer=tokenizer, log=d / "validation.jsonl",
                             start=json.loads((sft / "done.json").read_text())["summary"]["validation"])
    trainer.add_callback(val)
    last = last_checkpoint(d / "trainer")
    t0 = time.perf_counter()
    out = trainer.train(resume_from_checkpoint=last)
    seconds = time.perf_counter() - t0
    save_checkpoint(trainer.model, tokenizer, d / "model")
    export_gguf(d / "model", d / "policy.gguf", outtype=s.gguf)
    shutil.rmtree(d / "trainer", ignore_errors=True)  # resume checkpoints (optimizer state), no longer needed
    curve = [{k: h[k] for k in CURVE_KEYS if k in h} for h in trainer.state.log_history if "reward" in h]
    return {"estimator": estimator, "steps": int(out.global_step), "train_s": round(seconds, 1),
            "episodes_per_step": per_step, "lr": s.rl_lr, "gamma": s.gamma, "omega": s.omega,
            "resumed_from": last, "curve": curve, "validation": val.points, "gguf": str(d / "policy.gguf"),
            "rollout_timings": trainer.rollout_func.timings, "precision": str(compute.precision),
            "threads": compute.threads}


def run_rl(settings: RLSettings, *, echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run (or resume) every stage of `settings.game`; returns {stage: summary} plus the report's path."""
    from train.rl.report import write_report

    s = settings.effective()
    compute = resolve_compute(s.precision, s.threads)
    compute.apply()
    echo(f"[rl] {s.game}: training with {compute}")
    game_dir = Path(s.out) / s.game
    stages = ["demos", "sft", *s.estimators, "report"]
    keys = {"demos": STAGE_KEYS["demos"], "sft": STAGE_KEYS["sft"], **{e: STAGE_KEYS["rl"] for e in s.estimators}}
    summaries: dict[str, dict[str, Any]] = {}
    runners: dict[str, Callable[[Path], dict[str, Any]]] = {
        "demos": lambda d: demo_rows(s, d),
        "sft": lambda d: stage_sft(s, d, game_dir / "demos", compute=compute),
        **{e: (lambda d, e=e: stage_rl(s, e, d, game_dir / "sft", compute=compute)) for e in s.estimators},
        "report": lambda d: write_report(Path(s.out), plots=d),
    }
    run_stages(game_dir, stages, keys, runners, s, echo=echo, tag=f"rl {s.game}", summaries=summaries)
    echo(f"[rl] policies: {', '.join(str(game_dir / st / 'policy.gguf') for st in ['sft', *s.estimators])}")
    echo(f"[rl] report: {Path(s.out) / 'report.md'}")
    return {**summaries, "report": str(Path(s.out) / "report.md")}


__all__ = ["GAMES", "HELD_OUT_FROM", "RLSettings", "run_rl"]
