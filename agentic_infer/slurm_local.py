"""A one-node Slurm cluster on this machine (slurmctld + slurmd + munge on loopback), for `--executor slurm`.

    make slurm-up      # = python -m agentic_infer.slurm_local up: installs, configures, starts; idempotent
    make slurm-down    # stops the daemons (the packages and the config stay)

`up` installs Debian's `slurm-wlm` and `munge` when `slurmctld` is missing (root and apt needed), writes
`/etc/slurm/slurm.conf` for one node named `localhost` (all its CPUs, 80 % of its memory; partition `debug`,
the executor's default), starts munged, slurmctld and slurmd, and waits until the node accepts jobs. Daemon logs:
/var/log/slurm/. A job's output is wherever the job says (`--executor slurm` runs: `LOGS/slurm_logs/`).
No accounting database (sacct is off); cgroups are not used (processes are tracked by /proc).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from agentic_infer.errors import AgenticError

CONF = Path("/etc/slurm/slurm.conf")
LOGS = Path("/var/log/slurm")
SPOOL = Path("/var/spool")
PARTITION = "debug"


class SlurmSetupError(AgenticError):
    """The local Slurm cluster could not be installed or started."""


def _run(*cmd: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise SlurmSetupError(f"`{' '.join(cmd)}` failed ({out.returncode}): {(out.stderr or out.stdout).strip()[-800:]}")
    return out


def install() -> None:
    """Debian's slurm-wlm and munge, once."""
    if shutil.which("slurmctld") and shutil.which("munged"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SlurmSetupError("installing Slurm needs root and apt-get (Debian/Ubuntu): run `apt-get install "
                              "slurm-wlm munge` as root, then `make slurm-up` again")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "slurm-wlm", "munge"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
        if r.returncode != 0:
            raise SlurmSetupError(f"`{' '.join(cmd)}` failed: {r.stderr.strip()[-800:]}")


def slurm_conf(cpus: int, memory_mb: int) -> str:
    """The config of a one-node cluster on loopback."""
    return f"""# Written by agentic_infer.slurm_local (make slurm-up): one node on loopback.
ClusterName=agentic
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=300
StateSaveLocation={SPOOL}/slurmctld
SlurmdSpoolDir={SPOOL}/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile={LOGS}/slurmctld.log
SlurmdLogFile={LOGS}/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def _memory_mb() -> int:
    total_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                    if line.startswith("MemTotal:"))
    return int(total_kb / 1024 * 0.8)


def _pgrep(name: str) -> bool:
    return subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0


def is_up() -> bool:
    """Whether slurmctld answers and the node is idle or allocated (accepts jobs)."""
    if not shutil.which("sinfo") or _run("scontrol", "ping", check=False, timeout=30).returncode != 0:
        return False
    state = _run("sinfo", "-h", "-N", "-o", "%t", check=False, timeout=30).stdout.split()
    return bool(state) and all(s.rstrip("*") in ("idle", "alloc", "mix") for s in state)


def up(timeout_s: float = 60) -> None:
    """Install, configure and start the cluster; returns when the node accepts jobs (idempotent)."""
    if is_up():
        return
    install()
    conf = slurm_conf(os.cpu_count() or 1, _memory_mb())
    if not CONF.exists() or CONF.read_text() != conf:
        CONF.parent.mkdir(parents=True, exist_ok=True)
        CONF.write_text(conf)
    for d in (LOGS, SPOOL / "slurmctld", SPOOL / "slurmd"):
        d.mkdir(parents=True, exist_ok=True)
    if not _pgrep("munged"):
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        if not Path("/etc/munge/munge.key").exists():
            _run("mungekey", "--create")
            shutil.chown("/etc/munge/munge.key", "munge", "munge")
        _run("runuser", "-u", "munge", "--", "/usr/sbin/munged")
    if not _pgrep("slurmctld"):
        _run("/usr/sbin/slurmctld")
    if not _pgrep("slurmd"):
        _run("/usr/sbin/slurmd", "-N", "localhost")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if is_up():
            return
        if _run("scontrol", "ping", check=False, timeout=30).returncode == 0:  # a node left down by a past run
            _run("scontrol", "update", "NodeName=localhost", "State=RESUME", check=False, timeout=30)
        time.sleep(1)
    raise SlurmSetupError(f"the node did not become idle in {timeout_s:.0f} s; see {LOGS}/slurmctld.log and "
                          f"{LOGS}/slurmd.log (sinfo: {_run('sinfo', '-N', check=False).stdout.strip()})")


def down() -> None:
    """Stop slurmd, slurmctld and munged (started by `up` or otherwise)."""
    for name in ("slurmd", "slurmctld", "munged"):
        subprocess.run(["pkill", "-x", name], capture_output=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_pgrep(n) for n in ("slurmd", "slurmctld", "munged")):
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in (["up"], ["down"], ["status"]):
        print("usage: python -m agentic_infer.slurm_local up|down|status", file=sys.stderr)
        return 2
    try:
        if args == ["up"]:
            up()
            print(f"slurm up: partition {PARTITION!r} on node localhost ({CONF})")
        elif args == ["down"]:
            down()
            print("slurm down")
        else:
            print("up" if is_up() else "down")
    except SlurmSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
