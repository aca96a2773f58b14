"""train.core: the algorithm core of agentic RL as pure, tested torch/numpy functions (no TRL imports).

One concept per file:
- `masks`: token-in/token-out completion views of trajectories (optional trainable EOS, truncation that
  cuts the tool mask with the ids), padding to tensors.
- `advantages/`: GRPO / Dr. GRPO / batch-std and RLOO (`grpo`), GiGPO (`gigpo`), ARPO shared-prefix
  attribution (`arpo`), AEPO entropy-aware scaling (`aepo`).
- `losses`: token-level PPO-clip with masks and aggregation modes; AEPO entropy-balanced clipping.
- `branching`: ARPO entropy-triggered branching and AEPO dynamic budget as seeded decision functions.
- `tool_budget`: a tool-call budget and its exhaustion message (ZeroTIR / ToRL).
- `diagnostics`: per-step statistics, RAGEN's echo-trap warning, RAGEN-2's mutual-information proxy.

TRL trainers (`train.grpo`, `train.sft`) and the verl export import these; nothing here imports them.
"""
