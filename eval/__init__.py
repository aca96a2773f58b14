"""Evaluation: answer metrics (`eval.metrics`), benchmark tasks, runners and reports."""
