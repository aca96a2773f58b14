"""Launcher for one `PythonSandbox` run: isolate, limit, drop privileges, then exec the user's code.

Not a public API. `sandbox.py` starts this file as a fresh interpreter
(`python -I -S _sandbox_launch.py CONFIG_JSON`) in a new session (process group). It uses only the
standard library and never imports `agentic_infer`, so all of this runs in a clean, single-threaded
process (no `preexec_fn` in a threaded parent, which can deadlock).

Three processes, each step detected at run time and reported in one JSON line on the report fd:

1. launcher: new namespaces with `unshare(2)`: a network namespace (only a loopback that is down:
   no connection anywhere, not even to 127.0.0.1) and a PID namespace. Not root: an unprivileged
   user namespace (identity uid/gid map) first, where the kernel allows one.
2. init (PID 1 of the new PID namespace): a private mount namespace with a fresh /proc (the host's
   processes are invisible); as root, directories the sandbox uid may not traverse but that hold
   the interpreter (e.g. /root for a pyenv under /root) are covered by an empty tmpfs into which
   only the needed subtree is bind-mounted back (this also hides the rest of /root). Then it forks
   the user process, reaps orphans, and exits with the user process's status; when init exits the
   kernel kills every process left in the namespace.
3. user process: resource limits (CPU, address space, file size, processes, open files, core),
   a Landlock ruleset (writes only under the work dir and to /dev/null; TCP bind/connect denied
   when the network is off; signals and abstract unix sockets scoped to the sandbox),
   `no_new_privs`, setgroups/setgid/setuid to an unprivileged uid (root only), the parent-death
   signal, a check that the interpreter is readable, and exec of the user's script.

Not done here: seccomp filters, cgroups (no limit on total memory of all processes together).
See the docstring of `sandbox.py` for what the sandbox does not protect against.
"""

import ctypes
import json
import os
import resource
import signal
import stat
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
SYS_OPEN_TREE, SYS_MOVE_MOUNT = 428, 429  # the same numbers on every Linux architecture
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
OPEN_TREE_CLONE, AT_RECURSIVE, AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = 1, 0x8000, -100, 0x4

FS_WRITE_FILE, FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR = 1 << 1, 1 << 4, 1 << 5, 1 << 6
FS_MAKE_DIR, FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO = 1 << 7, 1 << 8, 1 << 9, 1 << 10
FS_MAKE_BLOCK, FS_MAKE_SYM, FS_REFER, FS_TRUNCATE = 1 << 11, 1 << 12, 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def _unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source, target: str, fstype, flags: int, data) -> None:
    def enc(text):
        return None if text is None else text.encode()
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


# ----------------------------------------------------------------------------- 1. launcher


def _enter_namespaces(cfg: dict, report: dict) -> None:
    """Network and PID namespaces (plus a user namespace first when not root)."""
    report["network"] = "host (allowed by config)" if cfg["network"] else "not isolated"
    report["pid"] = "process group only"
    wanted = [("pid", CLONE_NEWPID, "pidns")] + ([] if cfg["network"] else [("network", CLONE_NEWNET, "netns")])
    if os.geteuid() != 0:
        uid, gid = os.getuid(), os.getgid()
        try:
            _unshare(CLONE_NEWUSER)
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
            report["userns"] = "unprivileged user namespace"
        except OSError as exc:
            report["userns"] = f"unavailable ({exc.strerror})"
            return
    for key, flag, label in wanted:
        try:
            _unshare(flag)
            report[key] = label
        except OSError as exc:
            report[key] += f" (unshare failed: {exc.strerror})"


# ----------------------------------------------------------------------------- 2. init


def _blocked_ancestor(path: str):
    """(A, C): the first directory A on the way to `path` that others may not enter, and its child C."""
    parts = os.path.realpath(path).split("/")[1:]
    current = "/"
    for name in parts:
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current, os.path.join(current, name)
        current = os.path.join(current, name)
    return None


def _private_mounts(cfg: dict, report: dict) -> None:
    """Mount namespace: fresh /proc; as root, mask untraversable ancestors of needed paths."""
    try:
        _unshare(CLONE_NEWNS)
        _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    except OSError as exc:
        report["mounts"] = f"no mount namespace ({exc.strerror})"
        return
    if report.get("pid") == "pidns":
        try:
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
            report["proc"] = "private /proc (host processes invisible)"
        except OSError as exc:
            report["proc"] = f"host /proc ({exc.strerror})"
    _private_workdir(cfg, report)
    if os.geteuid() != 0 or cfg["uid"] is None:
        return
    masks: dict = {}
    for path in cfg["required_paths"]:
        hit = _blocked_ancestor(path)
        if hit:
            masks.setdefault(hit[0], set()).add(hit[1])
    for parent, children in sorted(masks.items()):
        trees = []
        for child in sorted(children):
            fd = _check(_libc.syscall(SYS_OPEN_TREE, ctypes.c_int(AT_FDCWD), child.encode(),
                                      ctypes.c_uint(OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE)), "open_tree")
            trees.append((child, fd, os.path.isdir(child)))
        _mount("tmpfs", parent, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for child, fd, is_dir in trees:
            if is_dir:
                os.mkdir(child, 0o755)
            else:
                open(child, "w").close()
            _check(_libc.syscall(SYS_MOVE_MOUNT, ctypes.c_int(fd), b"", ctypes.c_int(AT_FDCWD), child.encode(),
                                 ctypes.c_uint(MOVE_MOUNT_F_EMPTY_PATH)), f"move_mount {child}")
            os.close(fd)
        report.setdefault("masked", []).append(f"{parent} (only {', '.join(sorted(children))} visible)")


def _private_workdir(cfg: dict, report: dict) -> None:
    """A size-limited tmpfs over the work dir (bounds disk use); the files already there are copied in."""
    disk_mb = cfg["limits"]["disk_mb"]
    if not disk_mb:
        report["disk"] = "host disk (no tmpfs limit requested)"
        return
    workdir = cfg["workdir"]
    files = {}
    for name in os.listdir(workdir):
        path = os.path.join(workdir, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                files[name] = (f.read(), os.stat(path).st_mode & 0o777)
    st = os.stat(workdir)
    options = f"size={disk_mb}m,nr_inodes={max(1024, disk_mb * 64)},mode=0700,uid={st.st_uid},gid={st.st_gid}"
    try:
        _mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, options)
    except OSError as exc:
        report["disk"] = f"host disk ({exc.strerror}): only the per-file size limit applies"
        return
    for name, (data, mode) in files.items():
        path = os.path.join(workdir, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
    report["disk"] = f"private tmpfs of {disk_mb} MiB"


def _init(cfg: dict, report: dict, report_fd: int) -> None:
    """PID 1 of the namespace: set up mounts, run the user process, reap, exit with its status."""
    try:
        _check(_libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0), "prctl(PDEATHSIG)")
        try:
            _private_mounts(cfg, report)
        except OSError as exc:
            report["mounts"] = f"mount setup failed: {exc}"
        pid = os.fork()
    except BaseException as exc:  # noqa: BLE001 - init must never return into the launcher
        _fatal(report, report_fd, exc)
    if pid == 0:
        _user(cfg, report, report_fd)
    status = _wait_for(pid)
    # PID 1 cannot re-raise a signal on itself, so the user's raw wait status goes to the parent.
    os.write(report_fd, (json.dumps({"wait_status": status}) + "\n").encode())
    os.close(report_fd)
    os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))


# ----------------------------------------------------------------------------- 3. user process


def _set_limits(cfg: dict) -> None:
    lim = cfg["limits"]
    cpu = int(lim["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim["memory_bytes"], lim["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"], lim["open_files"]))


def _landlock(cfg: dict, report: dict) -> None:
    """Writes only under the work dir (+ /dev/null); no TCP unless allowed; scoped signals."""
    abi = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        report["filesystem"] = "no landlock in this kernel: writes limited by file permissions only"
        return
    write_fs = (FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG
                | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM)
    write_fs |= (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0)
    attr, size = _RulesetAttr(handled_access_fs=write_fs), 8
    if abi >= 4 and not cfg["network"]:
        attr.handled_access_net, size = NET_BIND_TCP | NET_CONNECT_TCP, 16  # no rules: every port denied
    if abi >= 6:
        attr.scoped, size = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL, 24
    ruleset = _check(_libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                                   ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for path, access in ((cfg["workdir"], write_fs), ("/dev/null", write_fs & (FS_WRITE_FILE | FS_TRUNCATE))):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
                _check(_libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1),
                                     ctypes.byref(rule), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _check(_libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(ruleset)
    report["filesystem"] = f"landlock abi {abi}: writes only under the work dir"
    if attr.handled_access_net:
        report["network_tcp"] = "landlock: TCP bind/connect denied"
    if attr.scoped:
        report["signals"] = "landlock: signals and abstract unix sockets scoped to the sandbox"


def _drop_privileges(cfg: dict, report: dict) -> None:
    if os.geteuid() != 0:
        report["user"] = f"unchanged uid {os.getuid()} (not root: no uid drop)"
        return
    if cfg["uid"] is None:
        report["user"] = "root (uid drop disabled by config: user=None)"
        return
    uid, gid = cfg["uid"], cfg["gid"]
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:
        raise OSError("the uid drop did not hold: the process could become root again")
    report["user"] = f"dropped to uid {uid} gid {gid}"


def _check_readable(cfg: dict) -> None:
    for path in cfg["required_paths"]:
        mode = os.X_OK if path == cfg["argv"][0] or os.path.isdir(path) else os.R_OK
        if not os.access(path, mode):
            raise PermissionError(
                f"the sandbox uid {os.getuid()} cannot access {path!r}; use an interpreter that others may "
                "read (e.g. python='/usr/bin/python3') or run without the uid drop (user=None)")


def _missing_isolation(cfg: dict, report: dict) -> list:
    missing = []
    if not cfg["network"] and report.get("network") != "netns" and "network_tcp" not in report:
        missing.append("network")
    if not report.get("filesystem", "").startswith("landlock") and not report.get("user", "").startswith("dropped"):
        missing.append("filesystem")
    return missing


def _user(cfg: dict, report: dict, report_fd: int) -> None:
    try:
        _set_limits(cfg)
        try:
            _landlock(cfg, report)
        except OSError as exc:
            report["filesystem"] = f"landlock failed ({exc}): writes limited by file permissions only"
        _drop_privileges(cfg, report)
        _check_readable(cfg)
        _check(_libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0), "prctl(PDEATHSIG)")
        missing = _missing_isolation(cfg, report)
        if missing and cfg["strict"]:
            raise OSError(f"strict isolation requested but not available for: {', '.join(missing)}")
        os.chdir(cfg["workdir"])
        os.write(report_fd, (json.dumps(report) + "\n").encode())
        os.close(report_fd)
        os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the launcher
        _fatal(report, report_fd, exc)


# ----------------------------------------------------------------------------- shared


def _fatal(report: dict, report_fd: int, exc: BaseException) -> None:
    report["fatal"] = f"{type(exc).__name__}: {exc}"
    try:
        os.write(report_fd, (json.dumps(report) + "\n").encode())
    except OSError:  # already closed: execve itself failed after the report was sent
        os.write(2, f"sandbox: could not start the interpreter: {report['fatal']}\n".encode())
    finally:
        os._exit(126)


def _wait_for(pid: int) -> int:
    """Reap every child (orphans land on PID 1) until `pid` exits; return its wait status."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 126 << 8
        except InterruptedError:
            continue
        if done == pid:
            return status


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status))


def main() -> None:
    cfg = json.loads(sys.argv[1])
    report_fd = cfg["report_fd"]
    report: dict = {}
    _enter_namespaces(cfg, report)
    pid = os.fork()
    if pid == 0:
        _init(cfg, report, report_fd)
    os.close(report_fd)
    _exit_like(_wait_for(pid))


if __name__ == "__main__":
    main()
