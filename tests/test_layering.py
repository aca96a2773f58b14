"""The floors: agentic_infer < eval, synth (siblings) < train. Every import counts, lazy ones inside functions
too; and no package drives another through a subprocess of our own CLI (an import check cannot see that)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package -> the top-level packages of ours it must not import
FORBIDDEN = {"agentic_infer": {"eval", "synth", "train"}, "eval": {"synth", "train"}, "synth": {"eval", "train"},
             "train": {"eval"}}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def offenders(package: str) -> dict[str, list[str]]:
    found = {}
    for p in sorted((ROOT / package).rglob("*.py")):
        bad = sorted(n for n in _imports(p) if n.split(".")[0] in FORBIDDEN[package])
        if bad:
            found[str(p.relative_to(ROOT))] = bad
    return found


@pytest.mark.parametrize("package", list(FORBIDDEN))
def test_each_floor_imports_only_the_floors_below(package):
    assert offenders(package) == {}


def _runs_our_cli(path: Path) -> list[int]:
    """Lines of `path` that build a command running our own CLI (`-m agentic_infer`, `agentic ...`)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.List) and any(isinstance(e, ast.Constant) and e.value in ("agentic_infer", "agentic")
                                              for e in node.elts):
            lines.append(node.lineno)
    return lines


def test_no_package_runs_our_own_cli_as_an_api():
    found = {str(p.relative_to(ROOT)): _runs_our_cli(p) for pkg in FORBIDDEN for p in (ROOT / pkg).rglob("*.py")}
    assert {p: n for p, n in found.items() if n} == {}


def test_the_check_sees_a_lazy_import_and_a_cli_subprocess(tmp_path):
    """The guards above are not vacuous: a function-level import and a subprocess of our CLI are found."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from eval.runner import run_eval\n    cmd = ['python', '-m', 'agentic_infer', 'eval']\n")
    assert _imports(probe) == {"eval.runner"} and _runs_our_cli(probe) == [3]
