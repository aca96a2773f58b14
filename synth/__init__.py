"""synth: turning agent trajectories into training data (SFT and RL sets), with `agentic synth ...` commands.

- `demos/`: teacher-free demonstrations from gold decompositions, run through the real Search-o1 engine and
  verified; `sft`: rejection sampling (k samples per question, keep the judged-correct).
- `fuzzqa/`: ASearcher-style fuzzed multi-hop QA (INJECT / FUZZ edits behind five gates).
- `pipeline/`: datatrove pipelines (read -> rollout -> judge -> filter -> write) with dataset cards.
- `export`: trajectories -> chat messages, tokenized rows, verl SFT / RL parquet for the trainers in `train`.
"""
