"""SFT step time per `precision` (`train.precision`) with the embedded SmolLM2-135M as the policy on CPU.

    .venv/bin/python bench/precision.py                       # ~2 min on 2 shared cores: fp32 vs bf16, 3 rounds
    .venv/bin/python bench/precision.py --precisions fp32,bf16 --rounds 5 --threads 2

Each run loads the same fp32 weights afresh (`train.model_io.load_trainable`: a model object keeps the autocast
wrapper of the first trainer that prepared it, so one object cannot serve two precisions) and trains `--steps` optimizer steps
(batch 1, the same rows in the same order: real demonstrations, `agentic synth demos --task musique`, as in
`bench/train.py`) through our `build_sft_trainer` with only `precision` changed; the order alternates per round
and the figure is the median over rounds of each precision's `train()` seconds per step, with the ratio to the
first precision. Also prints what `auto` resolves to here and why. Writes bench/results/precision.json.
Not covered: GPUs, GRPO (its update step is the same forward/backward), LoRA.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_infer.config import build_config  # noqa: E402
from bench.train import demos  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description="SFT step time per precision (see the module docstring)")
    ap.add_argument("--model", default="llamacpp://default")
    ap.add_argument("--precisions", default="fp32,bf16", help="comma-separated; the first is the ratio's base")
    ap.add_argument("--demo-questions", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 is steadier on shared cores)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "precision.json"))
    args = ap.parse_args()

    from train.model_io import load_trainable
    from train.precision import resolve_compute
    from train.sft import SFTSettings, build_sft_trainer, read_sft_data

    precisions = args.precisions.split(",")
    auto = resolve_compute("auto", args.threads)
    auto.apply()
    print(f"auto here: {auto}", flush=True)
    t0 = time.perf_counter()
    _, tok = load_trainable(args.model)
    data = demos(args.demo_questions)
    settings = build_config(SFTSettings, overrides={"max_steps": args.steps, "max_length": args.max_length,
                                                    "data": str(data), "gguf": "none"})
    rows, _ = read_sft_data(data, tok, max_length=settings.max_length, append_eos=settings.append_eos)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for p in precisions if r % 2 == 0 else precisions[::-1]:
                model, _ = load_trainable(args.model)
                trainer = build_sft_trainer(model, tok, rows, replace(settings, precision=p),
                                            output_dir=f"{tmp}/{p}-{r}")
                t1 = time.perf_counter()
                trainer.train()
                train_s = time.perf_counter() - t1
                loss = [h["loss"] for h in trainer.state.log_history if "loss" in h]
                runs.append({"round": r, "precision": p, "train_s": train_s, "s_per_step": train_s / args.steps,
                             "losses": loss})
                print(f"  round {r} {p}: {train_s:6.2f} s for {args.steps} steps, loss {loss}", flush=True)
                del trainer, model
    per_step = {p: statistics.median(x["s_per_step"] for x in runs if x["precision"] == p) for p in precisions}
    base = precisions[0]
    result = {"model": args.model, "args": vars(args), "auto": auto.record(), "rows": len(rows),
              "row_tokens_mean": sum(len(r["input_ids"]) for r in rows) / len(rows), "runs": runs,
              "median_s_per_step": per_step, "wall_s": time.perf_counter() - t0}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(f"\n| precision | s / SFT step (median of {args.rounds}) | ratio to {base} | first loss |")
    print("|---|---|---|---|")
    for p in precisions:
        first = next(x["losses"][0] for x in runs if x["precision"] == p and x["losses"])
        print(f"| {p} | {per_step[p]:.2f} | {per_step[p] / per_step[base]:.2f} | {first:.4f} |")
    print(f"\n{len(rows)} rows (mean {result['row_tokens_mean']:.0f} tokens), batch 1, {args.threads} torch threads; "
          f"auto here: {auto.precision}; wall {result['wall_s']:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
