"""Scale-out launch configs: `accelerate launch` with DeepSpeed ZeRO-2/3 or FSDP, and TRL's vLLM server mode.

    agentic train grpo --config grpo.yaml --print-launch --gpus 8 --strategy zero3 [--nodes 2]
    files = write_launch(Path("launch/"), "grpo", gpus=8, strategy="zero3", train_args=[...])

Writes `accelerate.yaml` (+ `deepspeed.json` for ZeRO) into a folder and returns the commands: for GRPO
with `vllm_gpus > 0`, `trl vllm-serve` on the last GPUs (`CUDA_VISIBLE_DEVICES`) and the trainer on the
others with `use_vllm=true, vllm_mode=server`; `colocate` runs vLLM inside the training processes.
Mixed precision follows the run's `precision` setting (`train.precision`): `mixed_precision` is `no` / `bf16` /
`fp16` for fp32 / bf16 / fp16, and `no` for `auto`, which the trainer resolves on the node it runs on and passes
to TRL as explicit `bf16`/`fp16` flags (those override the launch file; with both off the launch file's value
would be used, so it must never say more than the setting). DeepSpeed's `bf16`/`fp16` sections are `auto`: they
take the trainer's flags.
Nothing is run or checked against a GPU here (the configs follow accelerate's and TRL's documented keys).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from agentic_infer.errors import ConfigError
from train.precision import ACCELERATE_MIXED_PRECISION, PRECISIONS

STRATEGIES = ("ddp", "zero2", "zero3", "fsdp")


def deepspeed_config(stage: int) -> dict:
    cfg: dict = {"zero_optimization": {"stage": stage, "overlap_comm": True, "contiguous_gradients": True},
                 "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}, "gradient_accumulation_steps": "auto",
                 "train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto"}
    if stage == 3:
        cfg["zero_optimization"].update({"stage3_gather_16bit_weights_on_model_save": True,
                                         "reduce_bucket_size": "auto"})
    return cfg


def accelerate_config(strategy: str, *, processes: int, nodes: int = 1, deepspeed_file: str | None = None,
                      precision: str = "auto") -> dict:
    if strategy not in STRATEGIES:
        raise ConfigError(f"strategy={strategy!r}: choose one of {STRATEGIES}")
    if precision not in PRECISIONS:
        raise ConfigError(f"precision={precision!r}: choose one of {PRECISIONS}")
    cfg: dict = {"compute_environment": "LOCAL_MACHINE", "num_machines": nodes, "num_processes": processes,
                 "machine_rank": 0, "main_training_function": "main",
                 "mixed_precision": ACCELERATE_MIXED_PRECISION.get(precision, "no"),
                 "rdzv_backend": "static", "same_network": True, "use_cpu": False}
    if strategy == "ddp":
        cfg["distributed_type"] = "MULTI_GPU"
    elif strategy == "fsdp":
        cfg["distributed_type"] = "FSDP"
        cfg["fsdp_config"] = {"fsdp_version": 2, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                              "fsdp_state_dict_type": "FULL_STATE_DICT", "fsdp_cpu_ram_efficient_loading": True,
                              "fsdp_reshard_after_forward": True}
    else:
        cfg["distributed_type"] = "DEEPSPEED"
        cfg["deepspeed_config"] = {"deepspeed_config_file": deepspeed_file, "zero3_init_flag": strategy == "zero3"}
    return cfg


def write_launch(folder: Path, command: str, *, gpus: int, strategy: str = "zero2", nodes: int = 1,
                 vllm_gpus: int = 0, vllm_mode: str = "server", model: str = "MODEL",
                 train_args: list[str] | None = None, precision: str = "auto") -> dict[str, object]:
    """Write the configs into `folder`; return {"files": [...], "commands": [...]} (see the module docstring);
    `precision`: the run's setting (auto | fp32 | bf16 | fp16)."""
    import yaml

    if gpus < 1 or nodes < 1 or vllm_gpus < 0:
        raise ConfigError(f"gpus={gpus}, nodes={nodes}, vllm_gpus={vllm_gpus}: need gpus >= 1, nodes >= 1")
    if vllm_mode not in ("server", "colocate"):
        raise ConfigError(f"vllm_mode={vllm_mode!r}: 'server' or 'colocate'")
    server = command == "grpo" and vllm_gpus > 0 and vllm_mode == "server"
    train_gpus = gpus - vllm_gpus if server else gpus
    if train_gpus < 1:
        raise ConfigError(f"gpus={gpus} with vllm_gpus={vllm_gpus} leaves no GPU for training")
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    ds_file = None
    if strategy in ("zero2", "zero3"):
        ds_file = str(folder / "deepspeed.json")
        Path(ds_file).write_text(json.dumps(deepspeed_config(2 if strategy == "zero2" else 3), indent=2))
        files.append(ds_file)
    acc = folder / "accelerate.yaml"
    acc.write_text(yaml.safe_dump(accelerate_config(strategy, processes=train_gpus * nodes, nodes=nodes,
                                                    deepspeed_file=ds_file, precision=precision), sort_keys=False))
    files.append(str(acc))
    args = list(train_args or [])
    commands = []
    if server:
        vis = ",".join(str(i) for i in range(train_gpus, gpus))
        commands.append(f"CUDA_VISIBLE_DEVICES={vis} trl vllm-serve --model {shlex.quote(model)} "
                        f"--tensor-parallel-size {vllm_gpus}")
        args += ["--set", "trl.use_vllm=true", "--set", "trl.vllm_mode=server"]
    elif command == "grpo" and vllm_gpus > 0:
        args += ["--set", "trl.use_vllm=true", "--set", "trl.vllm_mode=colocate"]
    prefix = f"CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(train_gpus))} " if server else ""
    node_args = " --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR --main_process_port 29500" if nodes > 1 else ""
    commands.append(f"{prefix}accelerate launch --config_file {shlex.quote(str(acc))}{node_args} "
                    f"-m agentic_infer train {command} " + " ".join(shlex.quote(a) for a in args))
    (folder / "launch.sh").write_text("#!/bin/sh\n# generated by agentic train ... --print-launch\n"
                                      + "\n".join(c + (" &" if server and i == 0 else "")
                                                  for i, c in enumerate(commands)) + "\n")
    files.append(str(folder / "launch.sh"))
    return {"files": files, "commands": commands}
