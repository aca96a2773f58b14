"""`agentic synth ...` commands; registered on the `agentic` app through the `agentic_infer.commands`
entry points in pyproject.toml (agentic_infer never imports synth)."""

from synth.cli import envtasks  # noqa: E402,F401  `agentic synth envtasks` (registers on import)
