"""Fuzzed multi-hop QA, ASearcher-style: a base QA from a seed document, INJECT / FUZZ edits, five gates per edit.

    agentic synth fuzzqa --corpus wiki-vital --n 50 --llm llamacpp://default --out fuzz/
    agentic synth fuzzqa --grounded musique:../shared/data/multihop/musique_full_train_100.jsonl --n 50 ...

Files: `config` (FuzzQAConfig), `actions` (prompts, parsing), `gates` (five plain gate functions),
`provenance` (triples, versions, the HotpotQA output row), `grounded` (hops from structured evidence),
`chain` (one seed's edit loop and the gatekeeper), `run` (files, resume, the funnel).
"""

from synth.fuzzqa.chain import FuzzQA, Gatekeeper, SeedRecord
from synth.fuzzqa.config import GATES, FuzzQAConfig
from synth.fuzzqa.grounded import GroundedSeed, grounded_seed, grounded_seeds
from synth.fuzzqa.provenance import Evidence, Triple, Version, qa_row
from synth.fuzzqa.run import funnel, run_fuzzqa

__all__ = ["GATES", "Evidence", "FuzzQA", "FuzzQAConfig", "Gatekeeper", "GroundedSeed", "SeedRecord", "Triple",
           "Version", "funnel", "grounded_seed", "grounded_seeds", "qa_row", "run_fuzzqa"]
