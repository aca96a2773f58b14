"""`python -m agentic_infer ...` is the `agentic` command."""

from agentic_infer.cli import main

main()
