"""Correctness lives below the engines: verify imports nothing above it (the package floors: tests/test_layering.py)."""

from pathlib import Path

import agentic_infer
from tests.test_layering import _imports

PACKAGE = Path(agentic_infer.__file__).parent


def test_verify_imports_only_the_layer_below():
    allowed = ("agentic_infer.verify", "agentic_infer.errors", "agentic_infer.types", "agentic_infer.concurrency")
    found = {str(p.relative_to(PACKAGE)): sorted(n for n in _imports(p) if n.split(".")[0] in ("agentic_infer", "eval")
                                                 and not n.startswith(allowed))
             for p in (PACKAGE / "verify").rglob("*.py")}
    assert {p: n for p, n in found.items() if n} == {}
