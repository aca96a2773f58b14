"""synth: turning agent trajectories into datasets (filters, judges, fuzzed multi-hop QA, SFT and RL sets).

Nothing is implemented here yet; the pipeline arrives with its own issue. Trajectories written by
`agentic_infer` engines (`Trajectory.to_json`, `trajectories_to_dataset`) are its input.
"""
