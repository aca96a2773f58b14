"""Evaluation: benchmark tasks, metric variants, runners and reports (correctness itself: `agentic_infer.verify`)."""
