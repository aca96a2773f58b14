"""`agentic train distill` / `make distill`: demonstrations -> filter -> SFT -> GRPO -> GGUF -> report, resumable
(`train.distill.recipe`); `make distill-eval`: base vs distilled through `agentic eval compare` on the spec `train.distill.evaluate` writes."""

from train.distill.recipe import STAGES, DistillSettings, run_distill, stage_hashes

__all__ = ["STAGES", "DistillSettings", "run_distill", "stage_hashes"]
