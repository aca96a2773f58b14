"""verl export (schema, reward shim; against verl itself: tests/train/verl), launch configs, the CLI, and TRL's
experimental API shapes (pinned)."""

from __future__ import annotations

import importlib.util
import inspect

import pytest

from agentic_infer.errors import ConfigError


def test_verl_export_schema_and_compute_score(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from train.verl_export import write_verl_export

    files = write_verl_export(tmp_path, [{"question": "Capital of France?", "answer": "Paris"},
                                         {"question": "2+2?", "answer": ["4", "four"]}], data_source="toy",
                              reward="em", reward_options={"answer_format": None}, estimator="dr_grpo")
    rows = pq.read_table(files["data"]).to_pylist()
    assert set(rows[0]) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    assert rows[0]["prompt"] == [{"role": "user", "content": "Capital of France?"}]
    assert rows[1]["reward_model"] == {"style": "rule", "ground_truth": {"target": ["4", "four"]}}  # Search-R1's
    spec = importlib.util.spec_from_file_location("reward_fn", files["reward"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gt = rows[0]["reward_model"]["ground_truth"]
    assert mod.compute_score(data_source="toy", solution_str="Paris", ground_truth=gt, extra_info={}) == 1.0
    assert mod.compute_score("toy", "Lyon", gt, {}) == 0.0
    ov = (tmp_path / "overrides.txt").read_text().split()
    assert "algorithm.adv_estimator=agentic_dr_grpo" in ov and f"reward.custom_reward_function.path={files['reward']}" in ov
    assert "+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook=train.verl_estimators.register_estimators" in ov
    with pytest.raises(ConfigError, match="question"):
        write_verl_export(tmp_path, [{"q": 1}], data_source="x")
    with pytest.raises(ConfigError, match="stock verl"):  # no step data reaches a verl estimator (tests/train/verl)
        write_verl_export(tmp_path, [{"question": "q", "answer": "a"}], data_source="x", estimator="gigpo")


@pytest.mark.parametrize("strategy", ["zero2", "zero3", "fsdp", "ddp"])
def test_launch_configs(tmp_path, strategy):
    import yaml

    from train.launch import write_launch

    res = write_launch(tmp_path, "grpo", gpus=8, strategy=strategy, vllm_gpus=2, model="/m", train_args=["--config", "g.yaml"])
    acc = yaml.safe_load((tmp_path / "accelerate.yaml").read_text())
    assert acc["num_processes"] == 6
    from accelerate.commands.config.config_args import load_config_from_file

    loaded = load_config_from_file(str(tmp_path / "accelerate.yaml"))  # Accelerate's own loader: unknown keys refused
    assert loaded.distributed_type.value == acc["distributed_type"] and loaded.num_processes == 6
    if strategy == "fsdp":  # the plugin Accelerate builds from these keys accepts them
        from accelerate.utils import FullyShardedDataParallelPlugin

        plugin = FullyShardedDataParallelPlugin(**{k if k == "fsdp_version" else k.removeprefix("fsdp_"): v
                                                   for k, v in acc["fsdp_config"].items()})
        assert plugin.fsdp_version == 2 and plugin.reshard_after_forward
    assert acc["distributed_type"] == {"zero2": "DEEPSPEED", "zero3": "DEEPSPEED", "fsdp": "FSDP", "ddp": "MULTI_GPU"}[strategy]
    if strategy.startswith("zero"):  # the DeepSpeed plugin Accelerate builds from the file: its own checks run
        from accelerate.utils import DeepSpeedPlugin

        ds_cfg = dict(acc["deepspeed_config"])
        plugin = DeepSpeedPlugin(hf_ds_config=ds_cfg.pop("deepspeed_config_file"), **ds_cfg)
        assert plugin.zero_stage == int(strategy[-1]) and plugin.hf_ds_config.is_zero3() == (strategy == "zero3")
        assert plugin.zero3_init_flag == (strategy == "zero3")
    serve, train = res["commands"]
    assert serve.startswith("CUDA_VISIBLE_DEVICES=6,7 trl vllm-serve --model /m --tensor-parallel-size 2")
    assert train.startswith("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5 accelerate launch") and "trl.vllm_mode=server" in train
    with pytest.raises(ConfigError, match="no GPU"):
        write_launch(tmp_path, "grpo", gpus=2, vllm_gpus=2)


def test_cli_print_launch_and_show_config(tmp_path, capsys):
    from agentic_infer.cli import main

    with pytest.raises(SystemExit) as e:
        main(["train", "sft", "--data", "d.jsonl", "--out", str(tmp_path), "--print-launch", "--gpus", "4",
              "--strategy", "fsdp"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "accelerate launch" in out and f"train sft --config {tmp_path}/launch/settings.yaml" in out
    assert "data: d.jsonl" in (tmp_path / "launch" / "settings.yaml").read_text()
    with pytest.raises(SystemExit):
        main(["train", "grpo", "--show-config", "--set", "estimator.name=gigpo"])
    assert "name: gigpo" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["train", "grpo", "--set", "estimator.name=ppo"])
    assert e.value.code == 2


def test_trl_experimental_api_shapes():
    """TRL's rollout_func / env_mask contract as of 1.16: a TRL upgrade that changes it fails here first."""
    import trl
    from trl import GRPOTrainer

    assert trl.__version__.startswith("1.16"), trl.__version__
    assert "rollout_func" in inspect.signature(GRPOTrainer.__init__).parameters
    gen = inspect.getsource(GRPOTrainer._generate)
    assert "self.rollout_func(prompts, self)" in gen  # raw prompts and the trainer
    assert 'required_keys = {"prompt_ids", "completion_ids", "logprobs"}' in gen
    assert 'extra_fields.pop("env_mask", None)' in gen  # env_mask becomes the tool mask
    score = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    assert "completion_mask * tool_mask" in score and "inp[key] = values[i]" in score  # extra keys -> rewards
    assert "advantages.dim() == 1" in inspect.getsource(GRPOTrainer._compute_loss)  # (B, T) advantages accepted
    assert "rewards_per_func" in inspect.getsource(GRPOTrainer._calculate_rewards)
