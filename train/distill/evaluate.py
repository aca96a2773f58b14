"""The distill recipe's comparison spec for `agentic eval compare` (`make distill-eval` runs both).

    write_compare_spec(DistillSettings())       # -> runs/distill/compare.yaml
    agentic eval compare runs/distill/compare.yaml [--limit 20] [--policy base]

Search-o1 over each question's own paragraphs (`corpus: per-question`, BM25) on the dev files (HotpotQA 150,
MuSiQue 150, 2Wiki 150). The base gets the demo's prompting help (worked example, a forced first search tag,
Reason-in-Documents capped at 128 tokens as in `make demo`: its best setting); each distilled policy
(`runs/distill/policy.gguf`, the SFT-only one, `sft/model/policy.gguf`, and the expert-iteration one,
`expert/model/policy.gguf`) gets the plain prompt with the
settings its demonstrations were built with (`agentic_infer.engines.search_o1.plain_options`). Every
generation is capped at 256 tokens, and llama.cpp generates on every core (`n_threads`, at most 8; its own
default is half the cores, one here: two threads ran the base setting 17% faster on these 2 cores with the same
text, `bench/prompt_states.py --a n_threads=1 --b n_threads=2`). Only policies whose GGUF exists are listed.
train writes the spec and eval runs it: train imports nothing from eval.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

from agentic_infer.engines.search_o1 import BASE_HELP, plain_options
from train.distill.recipe import DistillSettings

DEV = (("hotpotqa", "hotpotqa_dev_distractor_150.jsonl"), ("musique", "musique_ans_dev_150.jsonl"),
       ("2wiki", "2wiki_dev_150.jsonl"))
THREADS = min(os.cpu_count() or 1, 8)
MAX_TOKENS = 256
BASE_SETTINGS = {**BASE_HELP, "max_searches": 3, "k": 3, "sampling": {"max_tokens": MAX_TOKENS},
                 "rid_sampling": {"max_tokens": 128, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
                                  "repetition_penalty": 1.05}}


def compare_spec(s: DistillSettings) -> dict[str, Any]:
    """The `agentic eval compare` spec: base, and the SFT-only and distilled policies that exist."""
    plain = {**plain_options(**s.engine_options), "sampling": {"max_tokens": MAX_TOKENS}}
    threads = f"?n_threads={THREADS}"
    policies: dict[str, Any] = {"base": {"backend": f"llamacpp://default{threads}", "settings": BASE_SETTINGS}}
    for name, gguf in (("sft", Path(s.out) / "sft" / "model" / "policy.gguf"), ("distilled", Path(s.out) / "policy.gguf"),
                       ("expert", Path(s.out) / "expert" / "model" / "policy.gguf")):
        if gguf.is_file():
            policies[name] = {"backend": f"llamacpp://{gguf.resolve()}{threads}", "settings": copy.deepcopy(plain)}
    return {"out": str(Path(s.out) / "eval"), "engine": "search-o1", "corpus": "per-question", "base": "base",
            "tasks": {task: str(Path(s.data_dir) / fname) for task, fname in DEV}, "policies": policies}


def write_compare_spec(s: DistillSettings, path: str | Path | None = None) -> Path:
    """Write `compare_spec(s)` as YAML (default: OUT/compare.yaml); returns the path."""
    import yaml

    out = Path(path) if path is not None else Path(s.out) / "compare.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(compare_spec(s), sort_keys=False), encoding="utf-8")
    return out
