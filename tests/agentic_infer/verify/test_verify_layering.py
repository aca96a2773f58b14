"""Correctness lives below the engines: nothing in agentic_infer imports eval (its command lives in eval/cli.py), and
verify imports nothing above it."""

import ast
from pathlib import Path

import agentic_infer

PACKAGE = Path(agentic_infer.__file__).parent


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_agentic_infer_imports_nothing_from_eval():
    offenders = {str(p.relative_to(PACKAGE)): sorted(n for n in _imports(p) if n == "eval" or n.startswith("eval."))
                 for p in PACKAGE.rglob("*.py")}
    assert {p: n for p, n in offenders.items() if n} == {}


def test_verify_imports_only_the_layer_below():
    allowed = ("agentic_infer.verify", "agentic_infer.errors", "agentic_infer.types")
    found = {str(p.relative_to(PACKAGE)): sorted(n for n in _imports(p) if n.split(".")[0] in ("agentic_infer", "eval")
                                                 and not n.startswith(allowed))
             for p in (PACKAGE / "verify").rglob("*.py")}
    assert {p: n for p, n in found.items() if n} == {}


def test_agentic_infer_imports_nothing_from_synth_or_train():
    """synth and train sit above agentic_infer; their commands come in through entry points."""
    offenders = {str(p.relative_to(PACKAGE)): sorted(n for n in _imports(p) if n.split(".")[0] in ("synth", "train"))
                 for p in PACKAGE.rglob("*.py")}
    assert {p: n for p, n in offenders.items() if n} == {}
