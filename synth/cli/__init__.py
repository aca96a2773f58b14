"""`agentic synth ...` commands; registered on the `agentic` app through the `agentic_infer.commands`
entry points in pyproject.toml (agentic_infer never imports synth)."""
