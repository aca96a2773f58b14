"""`train.precision`: `auto` resolved from a given machine (flags passed in, not this machine's), explicit modes,
threads, the settings checks, the retired `dtype` key, and launch files that say what the trainer does."""

from __future__ import annotations

import logging

import pytest

from agentic_infer.config import build_config
from agentic_infer.errors import ConfigError
from train.precision import Compute, Hardware, Precision, resolve_compute, resolve_precision, resolve_threads

ZEN2 = Hardware(cpu_flags=frozenset({"avx2", "fma", "f16c"}), cores=16)  # AVX2-only EPYC: no native bf16
ZEN4 = Hardware(cpu_flags=frozenset({"avx2", "avx512f", "avx512_bf16"}), cores=2)
SAPPHIRE = Hardware(cpu_flags=frozenset({"avx512f", "amx_tile", "amx_bf16"}), cores=64)
SKYLAKE = Hardware(cpu_flags=frozenset({"avx2", "avx512f", "avx512bw"}), cores=4)  # AVX-512 but no bf16 unit
A100 = Hardware(cuda=True, cuda_bf16=True, cores=8)
V100 = Hardware(cuda=True, cuda_bf16=False, cores=8)


@pytest.mark.parametrize(("hw", "name", "reason"), [
    (ZEN4, "bf16", "auto: CPU has avx512_bf16"),
    (SAPPHIRE, "bf16", "auto: CPU has amx_bf16"),
    (ZEN2, "fp32", "auto: CPU has no native bf16 (avx512_bf16 / amx_bf16)"),
    (SKYLAKE, "fp32", "auto: CPU has no native bf16 (avx512_bf16 / amx_bf16)"),
    (A100, "bf16", "auto: the CUDA device supports bf16"),
    (V100, "fp32", "auto: the CUDA device has no bf16; set fp16 for loss-scaled mixed precision"),
])
def test_auto_resolves_from_the_machine(hw, name, reason):
    assert resolve_precision("auto", hw) == Precision(name, reason)


def test_explicit_modes_and_their_trl_flags(caplog):
    assert resolve_precision("fp32", ZEN4) == Precision("fp32", "set")
    assert resolve_precision("fp16", V100) == Precision("fp16", "set")
    assert Precision("fp32", "set").trl_args() == {"bf16": False, "fp16": False}  # both explicit: TRL defaults bf16
    assert Precision("bf16", "set").trl_args() == {"bf16": True, "fp16": False}
    assert Precision("fp16", "set").trl_args() == {"bf16": False, "fp16": True}
    with caplog.at_level(logging.WARNING, logger="train.precision"):
        assert resolve_precision("bf16", ZEN2) == Precision("bf16", "set; CPU has no native bf16")
    assert "slow kernel" in caplog.text
    with pytest.raises(ConfigError, match="fp16 needs a CUDA device"):
        resolve_precision("fp16", ZEN4)
    with pytest.raises(ConfigError, match="does not support bf16"):
        resolve_precision("bf16", V100)
    with pytest.raises(ConfigError, match="'fp64'"):
        resolve_precision("fp64", ZEN4)


def test_threads_default_to_the_cores_up_to_eight():
    assert resolve_threads(0, SAPPHIRE) == (8, "auto: 64 usable cores, at most 8")
    assert resolve_threads(0, ZEN4) == (2, "auto: 2 usable cores, at most 8")
    assert resolve_threads(3, SAPPHIRE) == (3, "set")
    compute = resolve_compute("auto", 0, ZEN2)
    assert str(compute) == ("precision=fp32 (auto: CPU has no native bf16 (avx512_bf16 / amx_bf16)), "
                            "threads=8 (auto: 16 usable cores, at most 8)")
    assert compute.record() == {"precision": "fp32", "precision_reason": "auto: CPU has no native bf16 "
                                "(avx512_bf16 / amx_bf16)", "threads": 8, "threads_reason": "auto: 16 usable cores, at most 8"}


def test_compute_sets_torch_threads():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    try:
        Compute(Precision("fp32", "set"), 3, "set").apply()
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_this_machine_is_detected():
    pytest.importorskip("torch")
    hw = Hardware.detect()
    assert hw.cores >= 1 and isinstance(hw.cpu_flags, frozenset) and hw.cpu_flags  # torch.cpu.get_capabilities


@pytest.mark.parametrize("cls_path", ["train.sft:SFTSettings", "train.grpo.config:GRPOSettings"])
def test_settings_check_precision_threads_and_the_old_dtype_key(cls_path):
    import importlib

    module, name = cls_path.split(":")
    cls = getattr(importlib.import_module(module), name)
    assert (cls().precision, cls().threads) == ("auto", 0)
    with pytest.raises(ConfigError, match="'dtype' is renamed 'precision'.*dtype=float32 is precision=fp32"):
        build_config(cls, overrides=["dtype=float32"])
    with pytest.raises(ConfigError, match="'dtype' is renamed 'precision'"):
        cls(dtype="bfloat16")
    with pytest.raises(ConfigError, match="precision='float32'"):
        build_config(cls, overrides=["precision=float32"])
    with pytest.raises(ConfigError, match="threads=-1"):
        build_config(cls, overrides=["threads=-1"])
    with pytest.raises(ConfigError, match="trl.bf16=False.*set precision=fp32"):
        build_config(cls, overrides=["trl.bf16=false"])  # one setting: TRL's flags are not a second one
    with pytest.raises(ConfigError, match="trl.fp16=True.*set precision=fp16"):
        build_config(cls, overrides={"trl": {"fp16": True}})


@pytest.mark.parametrize(("precision", "mixed"), [("fp32", "no"), ("bf16", "bf16"), ("fp16", "fp16"), ("auto", "no")])
def test_launch_files_follow_precision(tmp_path, precision, mixed):
    import json

    import yaml

    from train.launch import write_launch

    write_launch(tmp_path, "sft", gpus=2, strategy="zero2", precision=precision)
    assert yaml.safe_load((tmp_path / "accelerate.yaml").read_text())["mixed_precision"] == mixed
    ds = json.loads((tmp_path / "deepspeed.json").read_text())
    assert ds["bf16"] == ds["fp16"] == {"enabled": "auto"}  # DeepSpeed takes the trainer's explicit flags
    with pytest.raises(ConfigError, match="precision='half'"):
        write_launch(tmp_path, "sft", gpus=2, precision="half")


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_launched_trainer_runs_the_precision_it_was_set_to(monkeypatch, tmp_path, precision):
    """`accelerate launch` exports the launch file's mixed_precision; transformers reads it whenever TRL's
    flags are both off, so the file must agree with the setting (it used to say bf16 for every run)."""
    pytest.importorskip("trl")
    from train.launch import accelerate_config
    from train.sft import SFTSettings, sft_config

    env = accelerate_config("ddp", processes=2, precision=precision)["mixed_precision"]
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", env)
    args = sft_config(SFTSettings(out=str(tmp_path), precision=precision))
    assert (args.bf16, args.fp16, args.mixed_precision) == {"fp32": (False, False, "no"),
                                                            "bf16": (True, False, "bf16")}[precision]


def test_cli_launch_writes_the_settings_precision(tmp_path):
    import yaml

    from agentic_infer.cli import main

    with pytest.raises(SystemExit) as e:
        main(["train", "sft", "--data", "d.jsonl", "--out", str(tmp_path), "--print-launch", "--gpus", "2",
              "--set", "precision=fp32"])
    assert e.value.code == 0
    assert yaml.safe_load((tmp_path / "launch" / "accelerate.yaml").read_text())["mixed_precision"] == "no"
    assert yaml.safe_load((tmp_path / "launch" / "settings.yaml").read_text())["precision"] == "fp32"
