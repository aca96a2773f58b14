"""How a training run computes: one `precision` setting and one `threads` setting, resolved once per run.

    compute = resolve_compute("auto", 0)   # precision=bf16 (auto: CPU has avx512_bf16), threads=2 (auto: ...)
    compute.apply()                         # torch.set_num_threads
    SFTConfig(**compute.precision.trl_args(), ...)

`precision` has one meaning in every mode: the weights are loaded and kept in float32 (the master weights the
optimizer updates) and the mode picks the autocast dtype of the forward and backward passes, as TRL's and
transformers' `bf16=` / `fp16=` flags do. `fp32`: no autocast; `bf16`: bf16 autocast (CPU or CUDA); `fp16`:
fp16 autocast with loss scaling (CUDA only). Both flags are always passed explicitly: TRL 1.16 defaults to
`bf16=True`, and a launch file's `mixed_precision` would otherwise leak in through `ACCELERATE_MIXED_PRECISION`.

`auto` resolves on the machine it runs on: a CUDA device with bf16 support -> bf16; a CUDA device without it ->
fp32 (set fp16 to choose loss-scaled mixed precision); a CPU with native bf16 instructions (`avx512_bf16` or
`amx_bf16` in `torch.cpu.get_capabilities()`) -> bf16; any other CPU -> fp32, since bf16 matmuls there fall back
to a slow kernel (an AVX2-only EPYC took 883 s for a first SFT step that takes ~20 s in fp32). Other CPUs with
bf16 units (ARM) get fp32 under `auto`: set `bf16` where it measures faster.
`threads` is torch's intra-op thread count: 0 means every core this process may use, at most 8 (torch's own
default is every physical core, which oversubscribes shared machines).
Not covered: pure-bf16 weights (no fp32 master copy), tf32 switches, quantised (8/4-bit) training.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentic_infer.errors import ConfigError

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # native bf16 matmul instructions (x86)
MAX_AUTO_THREADS = 8
TRL_FLAGS = ("bf16", "fp16")  # the TRL/transformers arguments `precision` sets (not settable through `trl`)
ACCELERATE_MIXED_PRECISION = {"fp32": "no", "bf16": "bf16", "fp16": "fp16"}
DTYPE_RENAMED = ("precision", "auto | fp32 | bf16 | fp16; the old dtype=float32 is precision=fp32")  # for one release
WEIGHT_DTYPE = "float32"  # the weights every mode loads and updates (`train.model_io.load_trainable`)


@dataclass(frozen=True)
class Hardware:
    """What `auto` looks at: CUDA (and its bf16 support), the CPU's capability flags, the usable cores."""

    cuda: bool = False
    cuda_bf16: bool = False
    cpu_flags: frozenset[str] = frozenset()
    cores: int = 1

    @classmethod
    def detect(cls) -> Hardware:
        import torch

        cuda = torch.cuda.is_available()
        flags = frozenset(k for k, v in torch.cpu.get_capabilities().items() if v is True)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        native = cuda and torch.cuda.is_bf16_supported(including_emulation=False)  # Ampere+ (V100 only emulates)
        return cls(cuda=cuda, cuda_bf16=native, cpu_flags=flags, cores=cores)


@dataclass(frozen=True)
class Precision:
    """A resolved precision (`fp32` | `bf16` | `fp16`) and why it was chosen."""

    name: str
    reason: str

    def trl_args(self) -> dict[str, bool]:
        """TRL's / transformers' mixed-precision flags for this mode, both explicit."""
        return {"bf16": self.name == "bf16", "fp16": self.name == "fp16"}

    def __str__(self) -> str:
        return f"{self.name} ({self.reason})"


@dataclass(frozen=True)
class Compute:
    """A run's resolved precision and torch threads (what it prints and records)."""

    precision: Precision
    threads: int
    threads_reason: str

    def apply(self) -> None:
        import torch

        torch.set_num_threads(self.threads)

    def record(self) -> dict[str, Any]:
        """The run metadata: resolved values and reasons."""
        return {"precision": self.precision.name, "precision_reason": self.precision.reason,
                "threads": self.threads, "threads_reason": self.threads_reason}

    def __str__(self) -> str:
        return f"precision={self.precision}, threads={self.threads} ({self.threads_reason})"


def check_settings(precision: str, threads: int, trl: Mapping[str, Any]) -> None:
    """Validate a settings object's `precision`, `threads` and its free TRL arguments (for `__post_init__`)."""
    if precision not in PRECISIONS:
        raise ConfigError(f"precision={precision!r}: choose one of {PRECISIONS} (fp32 master weights; bf16/fp16 "
                          "add autocast)")
    if not isinstance(threads, int) or threads < 0:
        raise ConfigError(f"threads={threads!r}: a number of torch threads, or 0 for every core (at most "
                          f"{MAX_AUTO_THREADS})")
    for k in TRL_FLAGS:
        if k in trl:
            raise ConfigError(f"trl.{k}={trl[k]!r}: mixed precision is the `precision` setting "
                              f"({' | '.join(PRECISIONS)}), not a TRL argument; remove trl.{k} and set "
                              f"precision={k if trl[k] else 'fp32'}")


def resolve_precision(requested: str, hardware: Hardware | None = None) -> Precision:
    """`requested` (one of PRECISIONS) as the mode `hardware` (default: this machine) runs (see the module
    docstring)."""
    if requested not in PRECISIONS:
        raise ConfigError(f"precision={requested!r}: choose one of {PRECISIONS}")
    hardware = hardware or Hardware.detect()
    native = [f for f in CPU_BF16_FLAGS if f in hardware.cpu_flags]
    if requested == "auto":
        if hardware.cuda:
            return (Precision("bf16", "auto: the CUDA device supports bf16") if hardware.cuda_bf16 else
                    Precision("fp32", "auto: the CUDA device has no bf16; set fp16 for loss-scaled mixed precision"))
        if native:
            return Precision("bf16", f"auto: CPU has {native[0]}")
        return Precision("fp32", f"auto: CPU has no native bf16 ({' / '.join(CPU_BF16_FLAGS)})")
    if requested == "fp16" and not hardware.cuda:
        raise ConfigError("precision=fp16 needs a CUDA device (this machine has none); use auto, fp32 or bf16")
    if requested == "bf16" and hardware.cuda and not hardware.cuda_bf16:
        raise ConfigError("precision=bf16: this CUDA device does not support bf16; use fp16 or fp32")
    if requested == "bf16" and not hardware.cuda and not native:
        log.warning("precision=bf16 on a CPU without native bf16 (%s): bf16 matmuls fall back to a slow kernel; "
                    "precision=fp32 or auto is likely much faster", " / ".join(CPU_BF16_FLAGS))
        return Precision("bf16", "set; CPU has no native bf16")
    return Precision(requested, "set")


def resolve_threads(requested: int, hardware: Hardware) -> tuple[int, str]:
    """`requested` torch threads (0: every usable core, at most MAX_AUTO_THREADS) and why."""
    if requested > 0:
        return requested, "set"
    n = min(hardware.cores, MAX_AUTO_THREADS)
    return n, f"auto: {hardware.cores} usable cores, at most {MAX_AUTO_THREADS}"


def resolve_compute(precision: str, threads: int, hardware: Hardware | None = None) -> Compute:
    """Resolve both settings once for a run (on this machine unless `hardware` is given) and log the result."""
    hw = hardware or Hardware.detect()
    count, why = resolve_threads(threads, hw)
    compute = Compute(resolve_precision(precision, hw), count, why)
    log.info("training with %s", compute)
    return compute
