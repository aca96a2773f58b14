"""PythonSandbox: normal behaviour and adversarial programs (real processes, real limits).

Every adversarial case must come back as an error result within its time bound and leave the host
and this test process untouched. Run: .venv/bin/python -m pytest tests/agentic_infer/tools/test_sandbox.py -q
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.tools import PythonSandbox, SandboxConfig, last_error_line

REPO = Path(__file__).resolve().parents[3]


async def run_timed(sandbox: PythonSandbox, code: str, bound_s: float):
    start = time.monotonic()
    result = await sandbox.run(textwrap.dedent(code))
    elapsed = time.monotonic() - start
    assert elapsed < bound_s, f"took {elapsed:.2f} s (bound {bound_s} s): {result}"
    return result


# ----------------------------------------------------------------------------- normal cases


async def test_prints_go_to_content():
    result = await run_timed(PythonSandbox(), "print('hello'); print(6 * 7)", 10)
    assert result.ok and result.content == "hello\n42\n"
    assert result.metadata["exit_code"] == 0 and result.metadata["isolation"]


async def test_error_is_compressed_to_last_traceback_line():
    result = await run_timed(PythonSandbox(), "x = 1\nprint('before')\nprint(a)", 10)
    assert result.error == "NameError: name 'a' is not defined"
    assert result.content == "before\n"
    assert "Traceback (most recent call last)" in result.metadata["stderr"]
    assert result.as_observation() == "before\nNameError: name 'a' is not defined"


async def test_syntax_error_and_exit_status():
    sandbox = PythonSandbox()
    result = await sandbox.run("def f(:\n  pass")
    assert result.error.startswith("SyntaxError")
    result = await sandbox.run("import sys; sys.exit(3)")
    assert result.error == "ExitError: the program exited with status 3"
    assert sandbox.calls == 2 and sandbox.errors == 2


async def test_timeout_message():
    result = await run_timed(PythonSandbox(timeout_s=1.0), "import time\nprint('start')\ntime.sleep(30)", 5)
    assert result.error == "TimeoutError: the program did not finish within 1 s and was stopped"
    assert result.metadata["timed_out"] and result.content == "start\n"


async def test_concurrent_runs_overlap():
    sandbox = PythonSandbox(timeout_s=10)
    code = "import time; time.sleep(1.0); print('done')"
    start = time.monotonic()
    results = await asyncio.gather(*(sandbox.run(code) for _ in range(4)))
    elapsed = time.monotonic() - start
    assert [r.content for r in results] == ["done\n"] * 4
    assert elapsed < 3.0, f"4 runs of 1 s took {elapsed:.2f} s: they did not run concurrently"


async def test_each_run_is_fresh_and_its_directory_writable():
    sandbox = PythonSandbox()
    first = await sandbox.run("open('note.txt', 'w').write('x'); import os; print(os.getcwd())")
    assert first.ok, first
    second = await sandbox.run("import os; print(os.path.exists('note.txt'))")
    assert second.content == "False\n"
    assert not os.path.exists(first.content.strip()), "the work directory must be removed after the run"


async def test_is_a_tool_named_python():
    sandbox = PythonSandbox()
    schema = sandbox.openai_schema()
    assert schema["function"]["name"] == "python"
    assert schema["function"]["parameters"]["required"] == ["code"]
    missing = await sandbox()
    assert missing.error.startswith("ToolArgumentError") and "'code'" in missing.error


def test_config_is_validated():
    with pytest.raises(ConfigError, match="timeout_s"):
        SandboxConfig(timeout_s=0)
    with pytest.raises(ConfigError, match="memory_mb"):
        PythonSandbox(memory_mb=1)
    with pytest.raises(ConfigError, match="unknown option"):
        PythonSandbox(timeout=3)


def test_last_error_line():
    assert last_error_line("Traceback...\n  File x\nValueError: bad\n\n") == "ValueError: bad"
    assert last_error_line("") == ""


# ----------------------------------------------------------------------------- adversarial cases


async def test_infinite_loop_is_stopped():
    result = await run_timed(PythonSandbox(timeout_s=1.5), "while True:\n    pass", 5)
    assert result.error.startswith("TimeoutError")


async def test_cpu_limit_stops_busy_loop_before_wall_timeout():
    result = await run_timed(PythonSandbox(timeout_s=20, cpu_s=1), "while True:\n    pass", 8)
    assert result.error.startswith(("CPUTimeLimitError", "ProcessKilled")), result.error


async def test_fork_bomb_is_contained():
    sandbox = PythonSandbox(timeout_s=5, max_processes=32)
    code = """
    import os
    while True:
        os.fork()
    """
    result = await run_timed(sandbox, code, 12)
    assert not result.ok
    uid = result.metadata["uid"]
    if uid is not None:  # nothing of the sandbox uid may survive the run
        time.sleep(0.2)
        survivors = [p for p in os.listdir("/proc") if p.isdigit() and _proc_uid(p) == uid]
        assert survivors == []


def _proc_uid(pid: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


async def test_memory_hog_gets_memory_error():
    result = await run_timed(PythonSandbox(memory_mb=256), "x = bytearray(4 * 1024**3)\nprint('allocated')", 10)
    assert result.error == "MemoryError" and "allocated" not in result.content


async def test_growing_memory_is_stopped():
    code = """
    chunks = []
    while True:
        chunks.append(bytearray(16 * 1024**2))
    """
    result = await run_timed(PythonSandbox(memory_mb=256, timeout_s=10), code, 12)
    assert result.error.startswith(("MemoryError", "ProcessKilled")), result.error


async def test_huge_output_is_cut_and_stopped():
    sandbox = PythonSandbox(max_output_chars=1000, max_output_bytes=200_000, timeout_s=10)
    result = await run_timed(sandbox, "while True:\n    print('x' * 10000)", 8)
    assert result.error.startswith("OutputLimitError")
    assert len(result.content) < 1200 and "output truncated" in result.content


async def test_large_finite_output_is_truncated_but_ok():
    result = await run_timed(PythonSandbox(max_output_chars=100), "print('y' * 50000)", 10)
    assert result.ok and result.content.startswith("y" * 100) and result.metadata["truncated"]


async def test_writing_outside_the_work_directory_fails():
    targets = [Path("/tmp") / f"sandbox-escape-{uuid.uuid4().hex}", REPO / f"sandbox-escape-{uuid.uuid4().hex}"]
    attempted = []  # the paths the sandboxed code reached the open() of, as it reported them
    try:
        for target in targets:  # each target separately, so the first failure does not hide the second
            code = f"""
            target = {str(target)!r}
            print("attempt", target, flush=True)
            open(target, 'w').write('pwned')
            """
            result = await run_timed(PythonSandbox(), code, 10)
            assert result.error.startswith("PermissionError"), result
            lines = result.content.splitlines()
            attempted += [ln.split(" ", 1)[1] for ln in lines if ln.startswith("attempt ")]
        # the PermissionErrors came from the writes themselves, and nothing was written
        assert attempted == [str(t) for t in targets]
        assert not any(t.exists() for t in targets)
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


async def test_parent_environment_secrets_are_invisible(monkeypatch):
    secret = f"s3cret-{uuid.uuid4().hex}"
    monkeypatch.setenv("AGENTIC_SANDBOX_TEST_SECRET", secret)
    code = f"""
    import os
    print(sorted(os.environ))
    print(os.environ.get("AGENTIC_SANDBOX_TEST_SECRET"))
    try:
        data = open("/proc/{os.getpid()}/environ", "rb").read()
        print("READ_PARENT_ENV", len(data))
    except OSError as exc:
        print("denied", type(exc).__name__)
    raise SystemExit("done probing")
    """
    result = await run_timed(PythonSandbox(), code, 10)
    assert secret not in result.content and secret not in result.metadata["stderr"]
    assert "READ_PARENT_ENV" not in result.content
    assert "AGENTIC_SANDBOX_TEST_SECRET" not in result.content
    assert not result.ok


@pytest.fixture()
def listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


async def test_network_connection_fails(listener):
    port = listener.getsockname()[1]
    code = f"""
    import socket
    s = socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("CONNECTED")
    """
    result = await run_timed(PythonSandbox(), code, 10)
    assert "CONNECTED" not in result.content
    assert result.error.split(":")[0] in ("PermissionError", "OSError", "ConnectionRefusedError", "TimeoutError")
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected


async def test_network_true_allows_loopback(listener):
    port = listener.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')"
    result = await run_timed(PythonSandbox(network=True), code, 10)
    assert result.content == "CONNECTED\n", result


async def test_killing_the_parent_fails_and_test_process_survives():
    me = os.getpid()
    code = f"""
    import os, signal
    for attempt in (lambda: os.kill({me}, signal.SIGKILL), lambda: os.killpg(os.getpgid({me}), signal.SIGKILL),
                    lambda: os.kill({os.getppid()}, signal.SIGKILL)):
        try:
            attempt()
            print("SENT")
        except OSError as exc:
            print(type(exc).__name__)
    raise SystemExit(1)
    """
    result = await run_timed(PythonSandbox(), code, 10)
    assert not result.ok
    os.kill(me, 0)  # the test process is alive (it is running this line)
    for line in result.content.split():  # every attempt failed, or the sandbox only hit itself and died
        assert line in ("ProcessLookupError", "PermissionError"), result


async def test_kill_all_signal_only_hits_the_sandbox():
    sandbox = PythonSandbox()
    probe = await sandbox.run("print('probe')")
    iso = probe.metadata["isolation"]
    if not (iso.get("pid") == "pidns" or "signals" in iso or str(iso.get("user", "")).startswith("dropped")):
        pytest.skip(f"host: no signal isolation on this host ({iso}); kill(-1) would hit our own processes")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        result = await run_timed(sandbox, "import os, signal; os.kill(-1, signal.SIGKILL); print('after')", 10)
        assert not result.ok
        assert sleeper.poll() is None, "a process outside the sandbox was killed"
    finally:
        sleeper.kill()
        sleeper.wait()


async def test_deleting_parent_files_fails(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    code = f"""
    import os, shutil
    try:
        os.remove({str(victim)!r})
    except OSError as exc:
        print(type(exc).__name__)
    shutil.rmtree({str(tmp_path)!r})
    """
    result = await run_timed(PythonSandbox(), code, 10)
    assert not result.ok
    assert victim.read_text() == "keep me"


# ----------------------------------------------------------------------------- other modes


async def test_uid_drop_with_a_world_readable_interpreter():
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"):
        pytest.skip("host: needs root and /usr/bin/python3")
    result = await run_timed(PythonSandbox(python="/usr/bin/python3", user=65534),
                             "import os; print(os.getuid(), os.getgid(), os.getgroups())", 10)
    assert result.content == "65534 65534 []\n", result


async def test_without_uid_drop_landlock_still_blocks_writes():
    target = Path("/tmp") / f"sandbox-escape-{uuid.uuid4().hex}"
    result = await run_timed(PythonSandbox(user=None), f"open({str(target)!r}, 'w')", 10)
    try:
        if not result.metadata["isolation"].get("filesystem", "").startswith("landlock"):
            pytest.skip("host: no landlock on this kernel")
        assert result.error.startswith("PermissionError") and not target.exists()
    finally:
        target.unlink(missing_ok=True)


async def test_strict_mode_runs_when_isolation_is_available():
    result = await run_timed(PythonSandbox(strict=True), "print('ok')", 10)
    iso = result.metadata["isolation"]
    if "fatal" in iso:
        assert result.error.startswith("SandboxError") and "strict" in result.error
    else:
        assert result.ok


def test_works_when_not_root():
    """Run the sandbox from an unprivileged uid (setpriv): still isolated, says no uid drop."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"):
        pytest.skip("host: needs root (to switch to an unprivileged uid), setpriv and /usr/bin/python3")
    check = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2] >= (3, 10))"],
                           capture_output=True, text=True)
    if check.stdout.strip() != "True":
        pytest.skip("host: /usr/bin/python3 is older than 3.10")
    outside = f"/tmp/sandbox-nonroot-{uuid.uuid4().hex}"
    home = Path(tempfile.mkdtemp(prefix="sandbox-nonroot-test-"))  # pytest's tmp_path is private to root
    script = home / "nonroot.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, json
        from agentic_infer.tools.sandbox import PythonSandbox
        async def main():
            sb = PythonSandbox(timeout_s=3)
            results = {{
                "print": await sb.run("import os; print(os.getuid())"),
                "write": await sb.run("open({outside!r}, 'w')"),
                "loop": await sb.run("while True: pass"),
            }}
            print(json.dumps({{k: [r.content, r.error, r.metadata.get("isolation", {{}})] for k, r in results.items()}}))
        asyncio.run(main())
    """))
    os.chmod(home, 0o755)
    script.chmod(0o644)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    try:
        proc = subprocess.run(["setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", "/usr/bin/python3",
                               str(script)], capture_output=True, text=True, env=env, timeout=60, cwd="/tmp")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr:
        pytest.skip(f"host: the system python cannot import the package: {last_error_line(proc.stderr)}")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["print"][0] == "1000\n"
    assert "no uid drop" in out["print"][2]["user"]
    assert out["write"][1].startswith("PermissionError") and not os.path.exists(outside)
    assert out["loop"][1].startswith("TimeoutError")


async def test_sandbox_survives_kill_of_its_own_group():
    result = await run_timed(PythonSandbox(), "import os, signal; os.killpg(0, signal.SIGKILL)", 10)
    assert result.error.startswith("ProcessKilled") and result.metadata["signal"] == signal.SIGKILL.name
