"""Training overhead on CPU with the embedded SmolLM2-135M as the policy (`llamacpp://default` loaded into
transformers by `train.model_io.load_trainable`, float32; cached as an HF folder after the first load).

    .venv/bin/python bench/train.py                   # ~4 min on 2 shared cores (1 torch thread)

1. SFT tokens/s: ours (`train.sft.read_sft_data` + `build_sft_trainer` + `train()`) vs a bare TRL `SFTTrainer`
   built by hand with the same settings on the same tokenized rows (from real demonstrations:
   `agentic synth demos --task musique --limit 10`, made once into the bench cache). Every run starts from
   the same weights and trains `--sft-steps` steps (batch 1, same seed, so the same rows in the same order);
   the order alternates (ours first, then bare first, ...), and the figure is the median over the rounds of
   ours' time / bare time (target <= 1.05). Times include building the trainer (TRL tokenizes nothing here:
   the rows are pre-tokenized) and, for ours, reading the JSONL.
2. GRPO seconds per step split into rollout (our `rollout_func`: Search-o1 on the policy's own weights
   through `HFLLM.from_model`), reward (TRL's `_calculate_rewards` over our EM reward), other scoring
   (the rest of TRL's `_generate_and_score_completions`: tokenising, padding, our advantages, diagnostics)
   and update (forward, backward, optimizer step): `AgenticGRPOTrainer`, 2 generations per prompt, tiny
   `max_tokens`, a few steps; the first step carries one-off set-up and is reported but left out of the median.
3. `rollout_func` overhead: the same prompts and seeds through (a) the engine alone
   (`engine.run(example)` per prompt on one `HFLLM.from_model` LLM) and (b) our `RolloutFunc` (building the
   LLM, the same engine runs, and the conversion of each trajectory into TRL's prompt/completion ids,
   logprobs and env mask); alternating, median ratio. Seeded sampling makes both sides generate the same tokens.
Writes bench/results/train.json. Not covered: GPUs, vLLM generation, LoRA, multi-process training.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_infer.assets import cache_dir  # noqa: E402
from agentic_infer.config import build_config  # noqa: E402

MUSIQUE = ROOT.parent / "shared" / "data" / "multihop" / "musique_train_100.json"


def demos(limit: int) -> Path:
    """Real demonstrations (Search-o1 trajectories from gold decompositions), made once with the CLI."""
    out = cache_dir() / "bench" / f"train-demos-musique-{limit}"
    if not (out / "trajectories.jsonl").exists():
        subprocess.run([str(Path(sys.executable).parent / "agentic"), "synth", "demos", "--task", "musique",
                        "--data", str(MUSIQUE), "--limit", str(limit), "--out", str(out)], check=True,
                       capture_output=True)
    return out / "trajectories.jsonl"


# -- 1. SFT ----------------------------------------------------------------------------------------------------
def sft_ours(model: Any, tok: Any, data: Path, settings: Any, out: str) -> tuple[float, float, Any]:
    from train.sft import build_sft_trainer, read_sft_data

    t0 = time.perf_counter()
    rows, kind = read_sft_data(data, tok, max_length=settings.max_length, append_eos=settings.append_eos)
    trainer = build_sft_trainer(model, tok, rows, settings, kind=kind, output_dir=out)
    t1 = time.perf_counter()
    trainer.train()
    return time.perf_counter() - t0, time.perf_counter() - t1, trainer


def sft_bare(model: Any, tok: Any, rows: list[dict[str, Any]], settings: Any, out: str) -> tuple[float, float, Any]:
    """TRL's SFTTrainer as its documentation shows it, with the same settings written out by hand."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    t0 = time.perf_counter()
    args = SFTConfig(output_dir=out, max_steps=settings.max_steps, learning_rate=settings.learning_rate,
                     per_device_train_batch_size=settings.batch_size, max_length=settings.max_length,
                     packing=False, seed=settings.seed, logging_steps=1, save_strategy="no", report_to="none",
                     use_cpu=True)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
    t1 = time.perf_counter()
    trainer.train()
    return time.perf_counter() - t0, time.perf_counter() - t1, trainer


def tokens_seen(trainer: Any) -> int:
    """Input tokens of the rows the trainer stepped through (TRL logs a running `num_tokens`)."""
    return int(max((h.get("num_tokens", 0) for h in trainer.state.log_history), default=0))


def bench_sft(model: Any, tok: Any, data: Path, args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    from train.sft import SFTSettings, read_sft_data

    settings = build_config(SFTSettings, overrides={"max_steps": args.sft_steps, "max_length": args.max_length,
                                                    "data": str(data), "gguf": "none"})
    rows, _ = read_sft_data(data, tok, max_length=settings.max_length, append_eos=settings.append_eos)
    start = copy.deepcopy(model.state_dict())
    # Untimed warm-up: the first trainer of a process finds the model in eval mode without gradient checkpointing
    # and its first loss differs slightly (2.520 vs 2.536 here, whichever side goes first); after it, all agree.
    sft_bare(model, tok, rows, replace(settings, max_steps=1), f"{tmp}/sft-warmup")
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds):
        order = ("ours", "bare") if r % 2 == 0 else ("bare", "ours")
        for side in order:
            model.load_state_dict(start)
            if side == "ours":
                total, train_s, trainer = sft_ours(model, tok, data, settings, f"{tmp}/sft-{side}-{r}")
            else:
                total, train_s, trainer = sft_bare(model, tok, rows, settings, f"{tmp}/sft-{side}-{r}")
            loss = [h["loss"] for h in trainer.state.log_history if "loss" in h]
            runs.append({"round": r, "side": side, "total_s": total, "train_s": train_s,
                         "tokens": tokens_seen(trainer), "steps": trainer.state.global_step, "losses": loss})
            print(f"  sft round {r} {side:4s}: {total:6.2f} s ({train_s:6.2f} s in train()), "
                  f"{runs[-1]['tokens']} tokens, loss {loss}", flush=True)
            del trainer
    model.load_state_dict(start)
    by = {s: [x for x in runs if x["side"] == s] for s in ("ours", "bare")}
    ratios = [o["total_s"] / b["total_s"] for o, b in zip(by["ours"], by["bare"])]
    train_ratios = [o["train_s"] / b["train_s"] for o, b in zip(by["ours"], by["bare"])]
    med = {s: statistics.median(x["total_s"] for x in v) for s, v in by.items()}
    tokens = by["ours"][0]["tokens"]
    same = all(x["tokens"] == tokens for x in runs) and all(
        o["losses"] == b["losses"] for o, b in zip(by["ours"], by["bare"]))
    return {"rows": len(rows), "row_tokens_mean": sum(len(r["input_ids"]) for r in rows) / len(rows),
            "steps": args.sft_steps, "tokens_per_run": tokens, "runs": runs, "ratios": ratios,
            "median_ratio": statistics.median(ratios), "median_train_ratio": statistics.median(train_ratios),
            "ours_tokens_per_s": tokens / med["ours"], "bare_tokens_per_s": tokens / med["bare"],
            "same_tokens_and_losses": same}


# -- 2. GRPO ---------------------------------------------------------------------------------------------------
def questions(n: int) -> list[dict[str, Any]]:
    from agentic_infer.tasks import get_task

    return [{"prompt": ex["question"], "answer": list(ex["gold"])} for ex in get_task("musique").load(MUSIQUE, limit=n)]


def grpo_settings(args: argparse.Namespace, out: str) -> Any:
    from train.grpo.config import GRPOSettings

    return build_config(GRPOSettings, overrides={
        "out": out, "engine": "search-o1", "num_generations": 2, "batch_size": 2, "max_steps": args.grpo_steps,
        "max_completion_length": 512, "learning_rate": 1e-6, "gguf": "none",
        "engine_config": {"max_searches": 1, "max_turns": 2, "k": 3,
                          "sampling": {"max_tokens": args.max_tokens, "temperature": 0.7}}})


def bench_grpo(model: Any, tok: Any, args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    from transformers import TrainerCallback

    from train.grpo.run import build_grpo_trainer

    settings = grpo_settings(args, f"{tmp}/grpo")
    trainer = build_grpo_trainer(settings, model, tok, questions(args.grpo_steps))
    rf = trainer.rollout_func
    acc = {"reward": 0.0, "score": 0.0}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                acc[name] += time.perf_counter() - t0
        return wrapper

    trainer._calculate_rewards = timed("reward", trainer._calculate_rewards)
    trainer._generate_and_score_completions = timed("score", trainer._generate_and_score_completions)
    steps: list[dict[str, float]] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *_a: Any, **_k: Any) -> None:
            self.t0 = time.perf_counter()
            self.before = (dict(acc), rf.timings["engine_s"] + rf.timings["convert_s"])

        def on_step_end(self, *_a: Any, **_k: Any) -> None:
            total = time.perf_counter() - self.t0
            (a0, r0) = self.before
            rollout = rf.timings["engine_s"] + rf.timings["convert_s"] - r0
            reward = acc["reward"] - a0["reward"]
            score = acc["score"] - a0["score"]
            toks = sum(len(s.token_ids or ()) for r in rf.last_rollouts for t in r.trajectories
                       for s in t.segments if s.kind == "model")
            steps.append({"total_s": total, "rollout_s": rollout, "reward_s": reward,
                          "other_scoring_s": score - rollout - reward, "update_s": total - score,
                          "model_tokens": toks})
            print(f"  grpo step {len(steps)}: " + ", ".join(f"{k} {v:.2f}" for k, v in steps[-1].items()),
                  flush=True)

    trainer.add_callback(Clock())
    trainer.train()
    later = steps[1:] or steps
    median = {k: statistics.median(s[k] for s in later) for k in steps[0]}
    return {"steps": steps, "median_after_first": median, "num_generations": 2, "max_tokens": args.max_tokens}


# -- 3. rollout_func overhead ----------------------------------------------------------------------------------
def bench_rollout(model: Any, tok: Any, args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    from agentic_infer.backends.hf import HFLLM
    from train.grpo.rollout import RolloutFunc, prompt_to_example
    from train.grpo.run import engine_factory

    factory = engine_factory(grpo_settings(args, f"{tmp}/ro"))
    prompts = [q["prompt"] for q in questions(args.rollout_prompts)]
    model.eval()

    def model_ids(rollouts: list[Any]) -> list[list[int]]:
        return [[i for t in r.trajectories for s in t.segments if s.kind == "model" for i in s.token_ids or ()]
                for r in rollouts]

    def engine_alone(seed: int) -> tuple[float, list[list[int]]]:
        llm = HFLLM.from_model(model, tok)
        examples = [prompt_to_example(p, i) for i, p in enumerate(prompts)]

        async def go() -> list[Any]:
            return [await factory(llm, seed + i).run(ex) for i, ex in enumerate(examples)]

        t0 = time.perf_counter()
        rollouts = asyncio.run(go())
        return time.perf_counter() - t0, model_ids(rollouts)

    def ours(seed: int) -> tuple[float, float, list[list[int]]]:
        rf = RolloutFunc(factory, tokenizer=tok, seed=seed, max_completion_length=512,
                         llm_factory=lambda _t: HFLLM.from_model(model, tok))
        t0 = time.perf_counter()
        rf(prompts)
        return time.perf_counter() - t0, rf.timings["convert_s"], model_ids(rf.last_rollouts)

    runs = []
    for r in range(args.rounds):
        seed = 100 + r
        if r % 2 == 0:
            e, ids_e = engine_alone(seed)
            o, conv, ids_o = ours(seed)
        else:
            o, conv, ids_o = ours(seed)
            e, ids_e = engine_alone(seed)
        runs.append({"round": r, "engine_s": e, "rollout_func_s": o, "convert_s": conv, "ratio": o / e,
                     "same_tokens": ids_e == ids_o, "model_tokens": sum(map(len, ids_o))})
        print(f"  rollout round {r}: engine {e:.2f} s, rollout_func {o:.2f} s (convert {conv * 1e3:.1f} ms), "
              f"ratio {o / e:.3f}", flush=True)
    return {"prompts": len(prompts), "runs": runs, "same_tokens": all(x["same_tokens"] for x in runs), "median_ratio": statistics.median(x["ratio"] for x in runs),
            "convert_ms_per_prompt": statistics.median(x["convert_s"] for x in runs) * 1e3 / len(prompts)}


def main() -> None:
    ap = argparse.ArgumentParser(description="training benchmark (see the module docstring)")
    ap.add_argument("--model", default="llamacpp://default")
    ap.add_argument("--demo-questions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds for the SFT and rollout comparisons")
    ap.add_argument("--sft-steps", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--grpo-steps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--rollout-prompts", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 is steadier on shared cores)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "train.json"))
    args = ap.parse_args()

    import torch

    from train.model_io import load_trainable

    torch.set_num_threads(args.threads)
    data = demos(args.demo_questions)
    t0 = time.perf_counter()
    model, tok = load_trainable(args.model)
    load_s = time.perf_counter() - t0
    print(f"policy {args.model}: loaded in {load_s:.1f} s; demos {data}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        sft = bench_sft(model, tok, data, args, tmp)
        grpo = bench_grpo(model, tok, args, tmp)
        rollout = bench_rollout(model, tok, args, tmp)
    result = {"model": args.model, "threads": args.threads, "load_s": load_s, "args": vars(args), "sft": sft,
              "grpo": grpo, "rollout": rollout, "wall_s": time.perf_counter() - t0}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))

    g = grpo["median_after_first"]
    print()
    print("| measure | ours | baseline | ratio (ours / baseline) |")
    print("|---|---|---|---|")
    print(f"| SFT tokens/s ({sft['rows']} demo rows, {sft['steps']} steps x {args.rounds} rounds) | "
          f"{sft['ours_tokens_per_s']:.0f} | {sft['bare_tokens_per_s']:.0f} (bare `SFTTrainer`) | "
          f"**{sft['median_ratio']:.3f}** (time; `train()` alone {sft['median_train_ratio']:.3f}) |")
    print(f"| GRPO s/step (median of steps 2..{len(grpo['steps'])}) | {g['total_s']:.2f} = rollout "
          f"{g['rollout_s']:.2f} + reward {g['reward_s']:.3f} + other scoring {g['other_scoring_s']:.2f} + "
          f"update {g['update_s']:.2f} | | |")
    print(f"| rollout_func vs engine alone ({rollout['prompts']} prompts x {args.rounds} rounds) | "
          f"{statistics.median(x['rollout_func_s'] for x in rollout['runs']):.2f} s | "
          f"{statistics.median(x['engine_s'] for x in rollout['runs']):.2f} s | **{rollout['median_ratio']:.3f}** "
          f"(conversion {rollout['convert_ms_per_prompt']:.2f} ms / prompt) |")
    print(f"\nSFT: same tokens and losses on both sides: {sft['same_tokens_and_losses']}; rollout: same tokens on both "
          f"sides: {rollout['same_tokens']}; wall {result['wall_s']:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
