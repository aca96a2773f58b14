"""The recipes' reports draw PNGs with matplotlib when it is installed (`pip install 'agentic-infer[report]'`)."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any | None:
    """matplotlib.pyplot on the file-only Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
