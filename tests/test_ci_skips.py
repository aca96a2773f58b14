"""Under CI=true a skipped test fails the run (a broken install must not turn modules green); host skips stay."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")


def _run(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_mod.py").write_text('import pytest\npytest.importorskip("no_such_module_x")\n'
                                         "def test_a():\n    pass\n")
    (tmp_path / "test_fn.py").write_text('import pytest\ndef test_host():\n    pytest.skip("host: no landlock")\n'
                                        'def test_data():\n    pytest.skip("../shared/data is absent")\n')
    env = {k: v for k, v in os.environ.items() if k != "CI"} | ({"CI": "true"} if ci else {})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_skips_fail_under_ci_but_host_skips_stay(tmp_path):
    ci = _run(tmp_path, ci=True)
    assert ci.returncode != 0
    assert "module skipped under CI=true" in ci.stdout and "no_such_module_x" in ci.stdout
    local = _run(tmp_path, ci=False)
    assert local.returncode == 0 and "3 skipped" in local.stdout


def test_host_skip_is_allowed_under_ci(tmp_path):
    (tmp_path / "sub").mkdir()
    shutil.copy(CONFTEST, tmp_path / "sub" / "conftest.py")
    (tmp_path / "sub" / "test_h.py").write_text('import pytest\ndef test_h():\n    pytest.skip("host: no root")\n')
    env = dict(os.environ, CI="true")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "sub")],
                       cwd=tmp_path / "sub", env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "1 skipped" in p.stdout
