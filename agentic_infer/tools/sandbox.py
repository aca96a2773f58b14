"""`PythonSandbox`: run untrusted model-written Python in a separate, limited, isolated process.

    sandbox = PythonSandbox(timeout_s=10.0, memory_mb=512)
    result = await sandbox.run("print(sum(range(10)))")    # ToolResult(content="45\\n")
    result = await sandbox.run("print(a)")                  # error="NameError: name 'a' is not defined"

It is a `Tool` named "python" (one parameter, `code`), so engines call it like any other tool.
Every call gets a fresh process in a fresh temporary directory (its cwd and HOME); nothing persists
between calls. `content` is stdout (truncated to `max_output_chars`); on failure `error` holds only
the last line of the traceback (ToRL-style compression) and `metadata["stderr"]` the full stderr.
`metadata["isolation"]` records which protections were in force for that run.

What each run gets (each layer detected at run time; see `_sandbox_launch.py` for the mechanics):
- resource limits with `setrlimit`: CPU seconds, address space (`memory_mb`), size of any written
  file (`max_file_mb`), processes (`max_processes`, stops fork bombs), open files, no core dumps;
  a wall-clock timeout after which the whole process group is killed (SIGKILL);
- stdout/stderr read incrementally: the first `max_output_chars` are kept, and a process writing
  more than `max_output_bytes` is stopped (OutputLimitError);
- a new PID namespace (the code cannot see or signal host processes; when it ends, every process it
  started is killed) with its own /proc; a new network namespace (no network at all, not even
  loopback) when `network=False`;
- Landlock: writes only inside its own directory (and /dev/null), TCP connect/bind denied, signals
  scoped to the sandbox; the directory is a private tmpfs of `max_disk_mb` (bounds disk use);
- as root: the process drops to an unprivileged uid (a fresh random uid per run by default, so
  concurrent runs cannot touch each other; directories the interpreter lives in that such a uid
  cannot enter, e.g. /root, are replaced inside the sandbox by a view of only the interpreter);
- a scrubbed environment: PATH, HOME/TMPDIR = its directory, LANG, PYTHONHASHSEED=0,
  PYTHONUNBUFFERED=1, one-thread BLAS settings, plus `env=` entries you pass explicitly.

Fallbacks, stated plainly: not root -> no uid drop (the code runs as your uid; the other layers
still apply where the kernel allows unprivileged user namespaces); no user namespaces -> no PID
or network namespace (network then blocked for TCP only, by Landlock >= ABI 4; with neither,
NOT blocked); no Landlock (kernel < 5.13) -> writes are limited only by file permissions (as root
with the uid drop: world-writable places such as /tmp stay writable). `strict=True` refuses to
run code when network or filesystem isolation is missing. A warning is logged once per process
for each missing layer.

What the sandbox does NOT protect against: kernel exploits and container escapes (it is not a VM
or gVisor; it shares the host kernel); CPU side channels (Spectre-class) and timing attacks;
reading world-readable files (the code can read /etc, the installed packages, your source tree if
others may read it: keep secrets out of world-readable files); total memory of all processes
together (each is limited, the group is not: no cgroups) beyond `max_processes x memory_mb`;
UDP or raw sockets when only the Landlock network layer is available; denial of service through
the CPU share of a multi-core host during the timeout; seccomp-level syscall filtering (none).
Known limits for ordinary code: `multiprocessing` pools fail (their semaphores need /dev/shm, which
is not writable), and /dev/stdout cannot be reopened (the pipes belong to the parent's uid).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import secrets
import shutil
import signal
import stat
import sys
import sysconfig
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from agentic_infer.errors import ConfigError
from agentic_infer.tools.base import Tool, ToolResult

__all__ = ["PythonSandbox", "SandboxConfig", "last_error_line"]

logger = logging.getLogger("agentic_infer.tools.sandbox")

LAUNCHER = Path(__file__).with_name("_sandbox_launch.py")
_SCRIPT = "main.py"
_WARNED: set[str] = set()
_UID_RANGE = (1 << 20, 1 << 30)


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and isolation of one `PythonSandbox` (every run uses the same config).

    `user`: as root, the uid to run as: "auto" = a fresh random unprivileged uid per run, an int =
    that uid (and gid), None = stay root (not recommended). Ignored when not root.
    `cpu_s` defaults to ceil(timeout_s) + 1. `max_output_bytes` defaults to
    max(1 MiB, 16 x max_output_chars). `max_disk_mb=0` writes to the host disk (only
    `max_file_mb` per file then bounds disk use).
    """

    timeout_s: float = 10.0
    memory_mb: int = 512
    cpu_s: float | None = None
    max_output_chars: int = 8192
    max_output_bytes: int | None = None
    max_file_mb: int = 16
    max_disk_mb: int = 64
    max_processes: int = 64
    max_open_files: int = 256
    network: bool = False
    user: int | Literal["auto"] | None = "auto"
    python: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    pid_namespace: bool = True
    strict: bool = False
    workdir_root: str | None = None

    def __post_init__(self) -> None:
        def bad(name: str, rule: str, fix: str) -> ConfigError:
            return ConfigError(f"SandboxConfig.{name}={getattr(self, name)!r}: {rule}; {fix}")
        if not (isinstance(self.timeout_s, (int, float)) and 0 < self.timeout_s <= 3600):
            raise bad("timeout_s", "must be a number in (0, 3600]", "pass seconds, e.g. timeout_s=10")
        if self.cpu_s is not None and not (isinstance(self.cpu_s, (int, float)) and self.cpu_s >= 1):
            raise bad("cpu_s", "must be >= 1 or None", "leave None to use ceil(timeout_s) + 1")
        for name, low in (("memory_mb", 32), ("max_output_chars", 1), ("max_file_mb", 1), ("max_processes", 1),
                          ("max_open_files", 16), ("max_disk_mb", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise bad(name, f"must be an integer >= {low}", f"pass e.g. {name}={max(low, 64)}")
        if self.max_output_bytes is not None and (not isinstance(self.max_output_bytes, int)
                                                  or self.max_output_bytes < self.max_output_chars):
            raise bad("max_output_bytes", "must be an integer >= max_output_chars or None", "leave None")
        if not (self.user in (None, "auto") or (isinstance(self.user, int) and not isinstance(self.user, bool)
                                                and 0 < self.user < 2**32 - 1)):
            raise bad("user", "must be 'auto', None or a non-zero uid", "use user='auto' (a fresh uid per run)")
        if self.python is not None and not (os.path.isfile(self.python) and os.access(self.python, os.X_OK)):
            raise bad("python", "is not an executable file", "pass the path of a Python interpreter")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in dict(self.env).items()):
            raise bad("env", "keys and values must be strings", "convert values with str()")
        if self.workdir_root is not None and not os.path.isdir(self.workdir_root):
            raise bad("workdir_root", "is not a directory", "create it or leave None for the system temp dir")

    @property
    def cpu_limit_s(self) -> int:
        return int(math.ceil(self.cpu_s if self.cpu_s is not None else self.timeout_s + 1))

    @property
    def output_hard_limit(self) -> int:
        return self.max_output_bytes or max(1 << 20, 16 * self.max_output_chars)


def last_error_line(stderr: str, *, max_chars: int = 500) -> str:
    """ToRL-style compression: the last non-empty line of a traceback (`NameError: name 'a' ...`)."""
    for line in reversed(stderr.splitlines()):
        if line.strip():
            line = line.strip()
            return line if len(line) <= max_chars else line[: max_chars - 3] + "..."
    return ""


def _valid_uid(uid: int) -> bool:
    try:
        rows = Path("/proc/self/uid_map").read_text().split("\n")
    except OSError:
        return True
    for row in rows:
        parts = row.split()
        if len(parts) == 3 and int(parts[0]) <= uid < int(parts[0]) + int(parts[2]):
            return True
    return False


def _warn_once(key: str, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        logger.warning(message)


class PythonSandbox(Tool):
    """Run Python code in a fresh, resource-limited, isolated process (a Tool named "python")."""

    name = "python"
    description = ("Run a Python 3 program in a fresh sandboxed process and return what it prints to stdout. "
                   "Nothing persists between calls; there is no network. Use print() to show results.")
    parameters = {"type": "object",  # noqa: RUF012
                  "properties": {"code": {"type": "string", "description": "the complete Python program to run"}},
                  "required": ["code"], "additionalProperties": False}

    def __init__(self, config: SandboxConfig | None = None, /, *, name: str | None = None, **options: Any) -> None:
        base = config or SandboxConfig()
        unknown = sorted(set(options) - {f.name for f in fields(SandboxConfig)})
        if unknown:
            raise ConfigError(f"PythonSandbox got unknown option(s) {unknown}; "
                              f"valid options: {sorted(f.name for f in fields(SandboxConfig))}")
        self.config = replace(base, **options) if options else base
        super().__init__(name=name)
        self.python = os.path.abspath(self.config.python or sys.executable)

    async def run(self, code: str) -> ToolResult:
        """Run `code`; the same as `await sandbox(code=code)` (counted like any tool call)."""
        return await self(code=code)

    async def invoke(self, *, code: str) -> ToolResult:
        cfg = self.config
        workdir = tempfile.mkdtemp(prefix="agentic-sandbox-", dir=cfg.workdir_root)
        try:
            return await self._execute(code, workdir)
        finally:
            _remove_tree(workdir)

    # ------------------------------------------------------------------ internals

    def _user(self) -> tuple[int | None, int | None]:
        if os.geteuid() != 0 or self.config.user is None:
            return None, None
        if self.config.user == "auto":
            uid = secrets.randbelow(_UID_RANGE[1] - _UID_RANGE[0]) + _UID_RANGE[0]
            if not _valid_uid(uid):
                uid = 65534  # the usual "nobody", valid in nearly every uid map
            return uid, uid
        return int(self.config.user), int(self.config.user)

    def _required_paths(self, workdir: str) -> list[str]:
        paths = [self.python]
        if os.path.realpath(self.python) == os.path.realpath(sys.executable):
            sc = sysconfig.get_paths()
            paths += [sc["stdlib"], sc["platstdlib"], sc["purelib"], sc["platlib"]]
        paths.append(workdir)
        return list(dict.fromkeys(p for p in paths if p and os.path.exists(p)))

    def _env(self, workdir: str) -> dict[str, str]:
        env = {"PATH": f"{os.path.dirname(self.python)}:/usr/local/bin:/usr/bin:/bin", "HOME": workdir,
               "TMPDIR": workdir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0",
               "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
        env.update(dict(self.config.env))
        return env

    async def _execute(self, code: str, workdir: str) -> ToolResult:
        cfg = self.config
        uid, gid = self._user()
        script = os.path.join(workdir, _SCRIPT)
        with open(script, "w", encoding="utf-8") as f:
            f.write(code)
        os.chmod(script, 0o644)
        if uid is not None:
            os.chown(workdir, uid, gid)
        os.chmod(workdir, 0o700)
        env = self._env(workdir)
        launch = {"network": cfg.network, "pid_namespace": cfg.pid_namespace, "strict": cfg.strict,
                  "uid": uid, "gid": gid, "workdir": workdir, "required_paths": self._required_paths(workdir),
                  "argv": [self.python, "-B", "-s", _SCRIPT], "env": env,
                  "limits": {"cpu_s": cfg.cpu_limit_s, "memory_bytes": cfg.memory_mb << 20,
                             "file_bytes": cfg.max_file_mb << 20, "processes": cfg.max_processes,
                             "open_files": cfg.max_open_files, "disk_mb": cfg.max_disk_mb}}
        read_fd, write_fd = os.pipe()
        launch["report_fd"] = write_fd
        start = time.perf_counter()
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(launch), stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, pass_fds=(write_fd,), env=env,
                cwd=workdir, start_new_session=True)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        try:
            outcome = await self._collect(proc)
        finally:
            if proc.returncode is None:  # cancelled: leave nothing running
                _kill_group(proc.pid)
            report, wait_status = _read_report(read_fd)
        if "pid" in report and report["pid"] != "pidns":
            _kill_group(proc.pid)  # without a PID namespace, stray children may outlive the launcher
        return self._result(outcome, report, wait_status, proc.returncode, uid, time.perf_counter() - start)

    async def _collect(self, proc: asyncio.subprocess.Process) -> dict[str, Any]:
        cfg = self.config
        keep = cfg.max_output_chars * 4 + 4  # bytes enough for max_output_chars UTF-8 characters
        state = {"overflow": False, "timed_out": False}

        def overflow() -> None:
            state["overflow"] = True
            _kill_group(proc.pid)

        tasks = [asyncio.ensure_future(_drain(proc.stdout, keep, cfg.output_hard_limit, overflow)),
                 asyncio.ensure_future(_drain(proc.stderr, keep, cfg.output_hard_limit, overflow)),
                 asyncio.ensure_future(proc.wait())]
        try:
            _, pending = await asyncio.wait(tasks, timeout=cfg.timeout_s)
            if pending:
                state["timed_out"] = not state["overflow"]
                _kill_group(proc.pid)
                _, pending = await asyncio.wait(pending, timeout=5.0)
                for task in pending:  # a pipe still held open by an escaped process: stop reading it
                    task.cancel()
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
        out, err = (t.result() if t.done() and not t.cancelled() else (b"", 0) for t in tasks[:2])
        return {"stdout": out, "stderr": err, **state}

    def _result(self, outcome: dict[str, Any], report: dict[str, Any], wait_status: int | None,
                returncode: int | None, uid: int | None, wall_s: float) -> ToolResult:
        cfg = self.config
        (out_bytes, out_total), (err_bytes, err_total) = outcome["stdout"], outcome["stderr"]
        stdout = out_bytes.decode("utf-8", errors="replace")
        stderr = err_bytes.decode("utf-8", errors="replace")
        truncated = out_total > len(out_bytes) or len(stdout) > cfg.max_output_chars
        content = stdout[: cfg.max_output_chars]
        if truncated:
            content += f"\n... [output truncated: {out_total} bytes written, first {cfg.max_output_chars} chars shown]"
        exit_code, sig = None, None
        if wait_status is not None:
            if os.WIFSIGNALED(wait_status):
                sig = os.WTERMSIG(wait_status)
            else:
                exit_code = os.WEXITSTATUS(wait_status)
        elif returncode is not None:
            exit_code, sig = (returncode, None) if returncode >= 0 else (None, -returncode)
        error = self._error(outcome, report, exit_code, sig, stderr)
        self._note_isolation(report)
        metadata = {"exit_code": exit_code, "signal": _signal_name(sig) if sig else None,
                    "stderr": stderr[: cfg.max_output_chars * 4], "stdout_bytes": out_total, "stderr_bytes": err_total,
                    "truncated": truncated, "timed_out": outcome["timed_out"], "wall_s": round(wall_s, 4),
                    "uid": uid, "isolation": report}
        return ToolResult(content=content, error=error, metadata=metadata)

    def _error(self, outcome: dict[str, Any], report: dict[str, Any], exit_code: int | None, sig: int | None,
               stderr: str) -> str | None:
        cfg = self.config
        if outcome["overflow"]:
            return f"OutputLimitError: the program wrote more than {cfg.output_hard_limit} bytes and was stopped"
        if outcome["timed_out"]:
            return f"TimeoutError: the program did not finish within {cfg.timeout_s:g} s and was stopped"
        if "fatal" in report:
            logger.warning("sandbox could not start the code: %s", report["fatal"])
            return f"SandboxError: {report['fatal']}"
        if sig is not None:
            if sig == signal.SIGXCPU:
                return f"CPUTimeLimitError: the program used more than {cfg.cpu_limit_s} s of CPU time"
            hint = " (CPU or memory limit?)" if sig == signal.SIGKILL else ""
            last = last_error_line(stderr)
            return f"ProcessKilled: the program was killed by {_signal_name(sig)}{hint}" + (
                f"; last stderr line: {last}" if last else "")
        if exit_code:
            return last_error_line(stderr) or f"ExitError: the program exited with status {exit_code}"
        return None

    def _note_isolation(self, report: dict[str, Any]) -> None:
        if not report or "fatal" in report:
            return
        if not self.config.network and report.get("network") != "netns":
            _warn_once("network", "sandbox: no network namespace ("
                       + report.get("network", "?") + "); " + report.get("network_tcp", "network NOT blocked"))
        if not str(report.get("filesystem", "")).startswith("landlock"):
            _warn_once("filesystem", f"sandbox: {report.get('filesystem')}")
        if os.geteuid() != 0:
            _warn_once("user", "sandbox: not running as root, so the code runs as your own uid (no uid drop)")


async def _drain(stream: asyncio.StreamReader | None, keep: int, hard: int, overflow: Any) -> tuple[bytes, int]:
    """Read a pipe to EOF, keeping the first `keep` bytes; call `overflow()` past `hard` bytes."""
    buf = bytearray()
    total = 0
    if stream is None:
        return b"", 0
    while True:
        chunk = await stream.read(1 << 16)
        if not chunk:
            break
        total += len(chunk)
        if len(buf) < keep:
            buf += chunk[: keep - len(buf)]
        if total > hard:
            overflow()
            break
    return bytes(buf), total


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_report(fd: int) -> tuple[dict[str, Any], int | None]:
    """The launcher's isolation report and the user process's wait status (non-blocking read)."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    report: dict[str, Any] = {}
    wait_status = None
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "wait_status" in item:
            wait_status = int(item["wait_status"])
        else:
            report = item
    return report, wait_status


def _remove_tree(path: str) -> None:
    def retry(func: Any, target: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            os.chmod(target, stat.S_IRWXU)
            func(target)
        except OSError:
            logger.warning("sandbox: could not remove %s", target)
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)
