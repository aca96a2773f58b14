"""train: distilling trajectories back into a policy (SFT and GRPO-family RL on TRL, export for verl).

Nothing is implemented here yet; it arrives with its own issue. `Trajectory.loss_mask()` and the
per-token logprobs the engines record are what it will consume.
"""
