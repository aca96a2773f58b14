"""Where datatrove steps run: on this machine, on a Ray cluster or on Slurm, behind one config and one call.

    from agentic_infer.executors import ExecutorConfig, run_steps
    run_steps(steps, ExecutorConfig(kind="ray", tasks=4, workers=2), logging_dir=out / "logs", job_name="synth")

synth pipelines (`agentic synth run|rollouts|filter --executor ray`) and sharded eval runs
(`agentic eval run --executor slurm --tasks 8`) both call `run_steps`, so the three executors take the same step
list and leave the same files: per task `stats/<rank>.json`, a completion marker `completions/<rank>` (a finished
task is skipped on the next run, a killed one reruns whole) and datatrove's logs, under `logging_dir`.

- `local`: datatrove's LocalPipelineExecutor (`workers` processes at once, `start_method`).
- `ray`: datatrove's RayPipelineExecutor. `ray_address` names a running cluster (`auto`, `HOST:PORT`; its auth token,
  if it has one, from RAY_AUTH_TOKEN or ~/.ray/auth_token); without one a private Ray instance starts on loopback
  with `workers x cpus_per_task` CPUs and stops at the end. A task whose
  worker dies (a killed process, a lost node) is resubmitted by datatrove (up to 3 times).
- `slurm`: datatrove's SlurmPipelineExecutor submits a job array (`sbatch`, partition `slurm_partition`, time
  limit `slurm_time`, this venv activated in the job) and returns; `run_steps` then waits for the array to leave
  the queue. The job logs are in `logging_dir/slurm_logs/`. `make slurm-up` starts a one-node cluster here.
Every kind raises `ExecutorError` naming the tasks that did not finish and where their logs are.

`logging_dir` must be on a filesystem every worker sees (a shared one on a real cluster).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_infer.errors import AgenticError, ConfigError

log = logging.getLogger(__name__)
KINDS = ("local", "ray", "slurm")


class ExecutorError(AgenticError):
    """Some tasks of a distributed run did not finish; rerunning the same command resumes them."""


@dataclass
class ExecutorConfig:
    """How a list of datatrove steps is run (YAML `executor:`; CLI `--executor`, `--tasks`, `--workers`)."""

    kind: str = "local"  # local | ray | slurm
    tasks: int = 1  # shards of the input; each a datatrove task with its own rank
    workers: int = 1  # tasks at once (local: processes; ray: concurrent actors; slurm: array throttle)
    start_method: str = "fork"  # local, workers > 1: multiprocess start method ("forkserver", "spawn")
    progress: bool = True  # a progress bar of the items (on a terminal, local kind, one worker)
    cpus_per_task: int = 1  # ray / slurm: CPUs reserved per task
    mem_per_cpu_gb: float = 2.0  # ray / slurm: memory reserved per CPU
    ray_address: str | None = None  # ray: a running cluster ("auto", "HOST:PORT"); None: a private local Ray
    slurm_partition: str = "debug"  # slurm: the partition to submit to
    slurm_time: str = "01:00:00"  # slurm: the array's time limit (HH:MM:SS)
    slurm_args: dict[str, Any] = field(default_factory=dict)  # slurm: extra sbatch options (`qos`, `account`, ...)
    poll_s: float = 2.0  # slurm: how often to look at the queue while waiting

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"executor.kind={self.kind!r}: choose one of {list(KINDS)}")
        for name in ("tasks", "workers", "cpus_per_task"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"executor.{name}={v!r}: must be an integer >= 1")
        if self.mem_per_cpu_gb <= 0:
            raise ConfigError(f"executor.mem_per_cpu_gb={self.mem_per_cpu_gb!r}: must be > 0")

    @property
    def sharded(self) -> bool:
        """True when a command's items are split over tasks (any executor but one local task): each rank loads its
        own model, so a command then takes backends by URI, never as objects."""
        return self.kind != "local" or self.tasks > 1

    @property
    def in_process(self) -> bool:
        """True when the steps run in this process (local, one worker): a progress bar can be drawn."""
        return self.kind == "local" and min(self.workers, self.tasks) == 1


def incomplete_ranks(logging_dir: Path, tasks: int) -> list[int]:
    """The ranks without a completion marker under `logging_dir`."""
    return [r for r in range(tasks) if not (Path(logging_dir) / "completions" / f"{r:05d}").exists()]


def run_steps(steps: list[Any], cfg: ExecutorConfig, *, logging_dir: Path, job_name: str = "agentic") -> None:
    """Run `steps` over `cfg.tasks` ranks on `cfg.kind`; returns when every rank finished, else raises
    `ExecutorError` (a rerun resumes the unfinished ranks)."""
    logging_dir = Path(logging_dir).resolve()
    if cfg.kind == "local":
        from datatrove.executor.local import LocalPipelineExecutor

        LocalPipelineExecutor(steps, tasks=cfg.tasks, workers=min(cfg.workers, cfg.tasks), logging_dir=str(logging_dir),
                              start_method=cfg.start_method).run()
    elif cfg.kind == "ray":
        _run_ray(steps, cfg, logging_dir)
    else:
        _run_slurm(steps, cfg, logging_dir, job_name)
    missing = incomplete_ranks(logging_dir, cfg.tasks)
    if missing:
        where = logging_dir / ("slurm_logs" if cfg.kind == "slurm" else "logs")
        raise ExecutorError(f"{cfg.kind} executor: {len(missing)} of {cfg.tasks} tasks did not finish (ranks "
                            f"{missing[:10]}{' ...' if len(missing) > 10 else ''}); their logs are in {where}. "
                            "Rerun the same command to resume them.")


def _run_ray(steps: list[Any], cfg: ExecutorConfig, logging_dir: Path) -> None:
    if cfg.ray_address:
        _ray_token_auth()  # before ray is imported: it reads the auth mode once
    try:
        import ray
    except ImportError as e:
        raise ConfigError("executor.kind=ray needs ray: pip install 'agentic-infer[ray]'") from e
    from datatrove.executor.ray import RayPipelineExecutor

    started = False
    if not ray.is_initialized():
        if cfg.ray_address:
            try:
                ray.init(address=cfg.ray_address, log_to_driver=False)
            except ConnectionError as e:
                raise ExecutorError(f"executor.ray_address={cfg.ray_address!r}: {e}. Is the head running (`ray "
                                    "status`)? A cluster started with token auth needs its token here "
                                    "(RAY_AUTH_TOKEN, or the file ~/.ray/auth_token) and RAY_AUTH_MODE=token.") from e
        else:  # a private instance on loopback, bounded to the CPUs the run asks for
            ray.init(address="local", num_cpus=cfg.workers * cfg.cpus_per_task, include_dashboard=False,
                     log_to_driver=False, _node_ip_address="127.0.0.1")  # "local": even beside a `ray start` head
        started = True
    try:
        RayPipelineExecutor(steps, tasks=cfg.tasks, workers=cfg.workers, logging_dir=str(logging_dir),
                            cpus_per_task=cfg.cpus_per_task, mem_per_cpu_gb=cfg.mem_per_cpu_gb).run()
    finally:
        if started:
            ray.shutdown()


def _ray_token_auth() -> None:
    """Ray enables token auth for `ray.init("auto")` when a token is at hand, but never for an explicit address,
    so a head started by `ray start` (token auth on by default) refuses us: do what "auto" does. Ray reads the mode
when it is first imported, so a process that imported ray before must set RAY_AUTH_MODE itself."""
    import os

    token = os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH") or \
        (Path.home() / ".ray" / "auth_token").exists()
    if "RAY_AUTH_MODE" not in os.environ and token:
        os.environ["RAY_AUTH_MODE"] = "token"
        log.info("ray: token auth on (a token is available; RAY_AUTH_MODE=token)")


@contextlib.contextmanager
def local_ray_head(cpus: int) -> Iterator[str]:
    """A Ray head on this machine (`ray start --head` on a free port, `cpus` CPUs), as a cluster user has one running;
    yields its address for `ray_address` and stops it (`ray stop --force`) at the end."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray = str(Path(sys.executable).parent / "ray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([ray, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--num-cpus={cpus}",
                    "--include-dashboard=false", "--disable-usage-stats"], check=True, env=env, capture_output=True,
                   timeout=120)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=120)


def _run_slurm(steps: list[Any], cfg: ExecutorConfig, logging_dir: Path, job_name: str) -> None:
    if shutil.which("sbatch") is None:
        raise ConfigError("executor.kind=slurm: no `sbatch` on PATH; run on a Slurm login node (here: `make "
                          "slurm-up` starts a one-node cluster)")
    from datatrove.executor.slurm import SlurmPipelineExecutor

    mem = max(1, int(cfg.mem_per_cpu_gb))
    ex = SlurmPipelineExecutor(
        steps, tasks=cfg.tasks, workers=cfg.workers if cfg.workers < cfg.tasks else -1, time=cfg.slurm_time,
        partition=cfg.slurm_partition, cpus_per_task=cfg.cpus_per_task, mem_per_cpu_gb=mem, job_name=job_name,
        venv_path=str(Path(sys.prefix) / "bin" / "activate"), logging_dir=str(logging_dir),
        slurm_logs_folder=str(logging_dir / "slurm_logs"), sbatch_args=dict(cfg.slurm_args), qos="",
        requeue=False)
    ex.launch_job()
    if ex.job_id in (None, -1):  # nothing to run: every rank finished before
        return
    log.info("slurm job %s submitted (%d tasks); waiting for it to leave the queue", ex.job_id, cfg.tasks)
    while _in_queue(str(ex.job_id)):
        time.sleep(cfg.poll_s)


def _in_queue(job_id: str) -> bool:
    """Whether any task of job `job_id` (an array) is still pending or running."""
    out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%i"], capture_output=True, text=True)
    if out.returncode == 0:
        return bool(out.stdout.strip())
    if "Invalid job id" in out.stderr:  # squeue forgets a finished job after MinJobAge: gone means done
        return False
    raise ExecutorError(f"squeue -j {job_id} failed: {out.stderr.strip()}; is slurmctld running (`scontrol ping`)?")


__all__ = ["KINDS", "ExecutorConfig", "ExecutorError", "incomplete_ranks", "local_ray_head", "run_steps"]
