"""GRPO with bounded staleness through TRL 1.16's experimental `AsyncGRPOTrainer`, our engines' rollouts on CPU.

    agentic train grpo --config grpo.yaml --set async_staleness=1      # -1 (default): the synchronous trainer

TRL's async trainer learns from a queue that a rollout worker fills while it trains; its default worker is a
vLLM server with NCCL weight sync. It also takes any object with the worker's and the weight transfer's methods
(`rollout_worker=`, `weight_transfer=`), and that is the whole of what this module adds, in this process:
- `EngineRolloutWorker`: a thread that runs our `RolloutFunc` (Search-o1, TIR, the env agent: multi-turn,
  token-exact, observations masked through `completion_mask` = 0) on a generation copy of the policy, scores
  the episodes with our reward functions, gives each a scalar group advantage (`grpo`, `dr_grpo`, `grpo_batch`,
  `rloo`: `train.core.advantages`; TRL's samples carry one advantage each, so GiGPO's and ARPO's token-level
  advantages cannot be expressed and are refused), recomputes the old log-probs of each sequence with the copy's
  weights at the trainer's temperature (so at equal weights the trainer's ratio is 1 on every token, the appended
  end-of-turn token included), and queues `RolloutSample`s stamped with the weight version they came from, at
  most (`max_staleness` + 2) steps' worth (what the trainer can still take, its one-batch lookahead included:
  more would be generated only to be dropped as stale, on the cores the trainer needs);
- `MemoryWeightTransfer`: TRL pushes the trainer's weights after every `weight_sync_steps` optimizer steps; they
  are copied into the generation copy between two rollout calls (`pause` waits for the call in progress).
TRL drops a sample whose version is more than `max_staleness` behind the trainer's. Measured here (BENCHMARKS
"Async GRPO"): accelerate's dataloader fetches the next batch before the current one trains, so a trained batch
is up to `max_staleness` + 1 versions old, and `async_staleness=0` is not the synchronous trainer.
Two TRL pieces assume CUDA and are replaced on CPU by `patch_for_cpu` (checked against TRL 1.16): the peak-FLOPs
lookup (`torch.cuda.get_device_name`) and the FlashAttention-3 Hub kernel behind its packed tree attention
(here `CPUVarlenAttention`, the same varlen call in torch's SDPA). Not covered: β·KL, our loss options and
diagnostics (TRL's async loss is PPO-clip without KL), branching, several processes, resuming a stopped run.
"""

from __future__ import annotations

import queue
import random
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentic_infer.errors import ConfigError

SCALAR_ESTIMATORS = ("grpo", "dr_grpo", "grpo_batch", "rloo")
TRL_VERSION = "1.16"


class CPUVarlenAttention:
    """`flash_attn_varlen_func` in torch: segment s attends its queries `q[cu_q[s]:cu_q[s+1]]` to its keys
    `k[cu_k[s]:cu_k[s+1]]` (grouped-query heads repeated), causal aligned bottom-right as FlashAttention does when
    a segment has more keys than queries (TRL's tree layout: the keys are the path from the root)."""

    @staticmethod
    def flash_attn_varlen_func(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: torch.Tensor,
                               cu_k: torch.Tensor, max_q: int, max_k: int, softmax_scale: float | None = None,
                               causal: bool = True, window_size: tuple[int, int] = (-1, -1), softcap: float = 0.0,
                               **_: Any) -> torch.Tensor:
        if tuple(window_size) != (-1, -1) or softcap:
            raise ConfigError("CPU varlen attention: sliding windows and softcap are not implemented")
        out = torch.empty_like(q)
        heads, kv_heads = q.shape[1], k.shape[1]
        cq, ck = cu_q.tolist(), cu_k.tolist()
        for s in range(len(cq) - 1):
            qs = q[cq[s]:cq[s + 1]].transpose(0, 1)
            ks, vs = k[ck[s]:ck[s + 1]].transpose(0, 1), v[ck[s]:ck[s + 1]].transpose(0, 1)
            if kv_heads != heads:
                ks, vs = ks.repeat_interleave(heads // kv_heads, 0), vs.repeat_interleave(heads // kv_heads, 0)
            lq, lk = qs.shape[1], ks.shape[1]
            mask = torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=lk - lq) if causal else None
            o = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, attn_mask=mask, scale=softmax_scale)
            out[cq[s]:cq[s + 1]] = o.transpose(0, 1)
        return out


def patch_for_cpu() -> None:
    """Replace the two CUDA-only pieces of TRL's async trainer (see the module docstring); a no-op on a GPU."""
    if torch.cuda.is_available():
        return
    import trl
    import trl.experimental.async_grpo.async_grpo_trainer as agt
    import trl.experimental.async_grpo.packing as packing

    if not trl.__version__.startswith(TRL_VERSION):
        raise ConfigError(f"async GRPO on CPU replaces internals of TRL {TRL_VERSION}; trl {trl.__version__} is "
                          f"installed: pip install 'trl=={TRL_VERSION}.*', or run on a GPU")
    agt.get_peak_flops_per_device = lambda *a, **k: None
    packing._flash_attn = lambda: CPUVarlenAttention


class MemoryWeightTransfer:
    """TRL's weight transfer protocol for a worker in this process: the pushed tensors are copied into the
    worker's generation model while no rollout call runs."""

    def __init__(self, worker: EngineRolloutWorker):
        self.worker, self.pushes = worker, 0

    def init_weight_transfer(self) -> None:
        pass

    def pause(self) -> None:
        self.worker.weights.acquire()

    def send_weights(self, iterator: Any) -> None:
        params = dict(self.worker.model.named_parameters())
        with torch.no_grad():
            for name, tensor in iterator:
                if name not in params:
                    raise ConfigError(f"weight sync: the trainer sent {name!r}, which the generation model lacks")
                params[name].copy_(tensor)

    def resume(self) -> None:
        self.pushes += 1
        self.worker.loaded_version = self.pushes  # the trainer's model_version after this push
        self.worker.weights.release()

    def destroy(self) -> None:
        pass


class EngineRolloutWorker:
    """TRL's rollout worker protocol over our `RolloutFunc` (see the module docstring)."""

    def __init__(self, rollout_func: Any, reward_funcs: Sequence[Callable[..., list[float]]],
                 rows: Sequence[dict[str, Any]], model: Any, tokenizer: Any, *, num_generations: int,
                 groups_per_call: int, estimator: str = "grpo", temperature: float = 1.0, seed: int = 0,
                 queue_maxsize: int = 64):
        from trl.experimental.async_grpo.async_rollout_worker import RolloutSample

        if estimator not in SCALAR_ESTIMATORS:
            raise ConfigError(f"estimator {estimator!r} with async GRPO: TRL's async samples carry one advantage "
                              f"each; choose one of {SCALAR_ESTIMATORS} (or async_staleness=-1)")
        self.sample_cls = RolloutSample
        self.rollout_func, self.reward_funcs, self.rows = rollout_func, list(reward_funcs), list(rows)
        self.model, self.tokenizer = model.eval(), tokenizer
        self.group_size, self.groups_per_call = num_generations, groups_per_call
        self.estimator, self.temperature = estimator, temperature
        self.rollout_func.llm_factory = lambda _trainer: self._llm
        from agentic_infer.backends.hf import HFLLM

        self._llm = HFLLM.from_model(self.model, tokenizer, batch=rollout_func.rollout_batch)
        self.rollout_buffer: queue.Queue = queue.Queue(maxsize=queue_maxsize)
        self.metrics_queue: queue.Queue = queue.Queue(maxsize=4096)
        self.weights = threading.Lock()  # held during a rollout call and during a weight push
        self.model_version = self.loaded_version = 0
        self.produced, self.calls, self.generate_s = 0, 0, 0.0
        self._order = random.Random(seed)
        self._next: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._beat = time.time()

    # -- the protocol -------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._beat = time.time()
        self._thread = threading.Thread(target=self._loop, name="engine-rollout-worker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=600)

    def update_model_version(self, model_version: int) -> None:
        self.model_version = model_version

    def check_health(self, stale_after_s: float) -> None:
        if self._error is not None:
            raise RuntimeError(f"the rollout worker failed: {self._error!r}") from self._error
        if self._thread is not None and not self._thread.is_alive() and not self._stop.is_set():
            raise RuntimeError("the rollout worker thread stopped")
        if time.time() - self._beat > stale_after_s:
            raise RuntimeError(f"the rollout worker made no progress for {stale_after_s:.0f} s")

    # -- the worker ---------------------------------------------------------------------------------------------
    def _prompts(self) -> list[dict[str, Any]]:
        """The next `groups_per_call` rows (each epoch reshuffled), each repeated `num_generations` times."""
        picked = []
        for _ in range(self.groups_per_call):
            if not self._next:
                self._next = self.rows[:]
                self._order.shuffle(self._next)
            picked.append(self._next.pop())
        return [row for row in picked for _ in range(self.group_size)]

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._beat = time.time()
                with self.weights:
                    version, t0 = self.loaded_version, time.perf_counter()
                    samples, metrics = self.rollout(self._prompts(), version)
                    metrics["rollout/generate_s"] = time.perf_counter() - t0
                    self.generate_s += metrics["rollout/generate_s"]
                for s in samples:
                    while not self._stop.is_set():
                        try:
                            s.enqueued_at = time.time()
                            self.rollout_buffer.put(s, timeout=0.5)
                            break
                        except queue.Full:
                            self._beat = time.time()
                self.produced += len(samples)
                self.calls += 1
                try:
                    self.metrics_queue.put_nowait(metrics)
                except queue.Full:
                    pass
        except BaseException as e:  # reported to the trainer by check_health
            self._error = e
            traceback.print_exc()

    def rollout(self, rows: list[dict[str, Any]], version: int) -> tuple[list[Any], dict[str, float]]:
        """One call: the episodes of `rows` (whole groups), scored, as RolloutSamples of weight `version`."""
        out = self.rollout_func([r["prompt"] for r in rows], None)
        n = len(rows)
        completions = [self.tokenizer.decode(ids, skip_special_tokens=True) for ids in out["completion_ids"]]
        columns = {k: [r.get(k) for r in rows] for k in dict.fromkeys(k for r in rows for k in r) if k != "prompt"}
        extra = {k: out[k] for k in ("trajectory", "rollout_answer")}
        rewards = np.zeros(n)
        for fn in self.reward_funcs:
            rewards += np.asarray(fn(completions=completions, prompts=[r["prompt"] for r in rows], **columns, **extra),
                                  dtype=float)
        advantages = self.advantages(rewards)
        samples = []
        for i in range(n):
            prompt_ids, completion_ids = list(out["prompt_ids"][i]), list(out["completion_ids"][i])
            ids = prompt_ids + completion_ids
            mask = [0] * len(prompt_ids) + [int(m) for m in out["env_mask"][i]]
            samples.append(self.sample_cls(
                prompt=[{"role": "user", "content": str(rows[i]["prompt"])}],
                completion=[{"role": "assistant", "content": completions[i]}],
                input_ids=np.asarray(ids, dtype=np.int64), completion_mask=np.asarray(mask, dtype=np.int64),
                old_log_probs=self.sequence_logprobs(ids, mask), advantage=float(advantages[i]),
                model_version=version, group_id=self.calls * self.groups_per_call + i // self.group_size,
                metrics={"reward": float(rewards[i])}))
        groups = rewards.reshape(-1, self.group_size)
        metrics = {"rollout/reward_mean": float(rewards.mean()),
                   "rollout/zero_std_share": float((groups.std(axis=1) == 0).mean()),
                   "rollout/worker_version": float(version), "rollout/samples_total": float(n)}
        return samples, metrics

    def advantages(self, rewards: np.ndarray) -> np.ndarray:
        from train.core.advantages.grpo import grpo_advantages, rloo_advantages

        if self.estimator == "rloo":
            return rloo_advantages(rewards.tolist(), group_size=self.group_size).numpy()
        scale = {"grpo": "group", "dr_grpo": "none", "grpo_batch": "batch"}[self.estimator]
        return grpo_advantages(rewards.tolist(), group_size=self.group_size, scale=scale).numpy()

    @torch.no_grad()
    def sequence_logprobs(self, ids: list[int], mask: list[int]) -> np.ndarray:
        """log p(token p | tokens < p) under the generation weights at the trainer's temperature, on the trained
        positions (0 elsewhere), aligned with `ids` as TRL's samples are."""
        x = torch.tensor([ids])
        logits = self.model(input_ids=x).logits[0, :-1].float() / self.temperature
        lp = torch.log_softmax(logits, -1).gather(-1, x[0, 1:, None])[:, 0]
        out = np.zeros(len(ids), dtype=np.float32)
        out[1:] = lp.numpy()
        return out * np.asarray(mask, dtype=np.float32)


def build_async_trainer(settings: Any, model: Any, tokenizer: Any, rows: list[dict[str, Any]], *, precision: Any,
                        factory: Any = None, reward_funcs: list | None = None) -> Any:
    """TRL's `AsyncGRPOTrainer` for these settings, fed by an `EngineRolloutWorker` generating with `model` (the
    trainer loads its own copy from `settings.out`/start/); `factory` and `reward_funcs` as in
    `train.grpo.run.build_grpo_trainer`."""
    from datasets import Dataset
    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer

    from train.grpo.run import reward_function, rollout_func_for

    patch_for_cpu()
    start = Path(settings.out) / "start"  # TRL's async trainer loads its policy from a folder
    if not (start / "config.json").exists():
        model.save_pretrained(start)
        tokenizer.save_pretrained(start)
    accumulation = int(settings.trl.get("gradient_accumulation_steps", 1))
    temperature = float(settings.engine_config.get("sampling", {}).get("temperature", 1.0))
    kw: dict[str, Any] = dict(
        output_dir=str(Path(settings.out) / "trainer"), per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=accumulation, num_generations=settings.num_generations,
        max_steps=settings.max_steps, learning_rate=settings.learning_rate,
        max_completion_length=settings.max_completion_length, seed=settings.seed, logging_steps=1,
        save_strategy="no", report_to="none", use_cpu=not torch.cuda.is_available(), token_budget=0,
        max_staleness=settings.async_staleness, weight_sync_steps=1, temperature=temperature, dtype="float32",
        gradient_checkpointing=False, heartbeat_stale_after_s=1800, **precision.trl_args())
    known = set(AsyncGRPOConfig.__dataclass_fields__)
    unknown = sorted(k for k in settings.trl if k not in known and k != "beta")
    if unknown or settings.trl.get("beta", 0.0):
        raise ConfigError(f"trl settings {unknown or ['beta']} with async GRPO: TRL's AsyncGRPOConfig has no such "
                          "field (its loss has no KL term); drop them or use async_staleness=-1")
    kw.update({k: v for k, v in settings.trl.items() if k != "beta"})
    rollout_func = rollout_func_for(settings, tokenizer, factory)
    per_step = settings.batch_size * accumulation
    worker = EngineRolloutWorker(rollout_func, reward_funcs or [reward_function(settings)], rows, model, tokenizer,
                                 num_generations=settings.num_generations,
                                 groups_per_call=per_step // settings.num_generations,
                                 estimator=settings.estimator.name, temperature=temperature, seed=settings.seed,
                                 queue_maxsize=(settings.async_staleness + 2) * per_step)
    return AsyncGRPOTrainer(model=str(start), args=AsyncGRPOConfig(**kw), train_dataset=Dataset.from_list(rows),
                            processing_class=tokenizer, rollout_worker=worker,
                            weight_transfer=MemoryWeightTransfer(worker))


def train_grpo_async(settings: Any, compute: Any) -> dict[str, Any]:
    """`train_grpo` with `async_staleness` >= 0: train, save the checkpoint (and GGUF) into `settings.out`."""
    from train.grpo.run import read_env_rows, read_examples
    from train.model_io import load_trainable, save_trained

    model, tokenizer = load_trainable(settings.model)
    rows = read_env_rows(settings) if settings.env else read_examples(settings.data)
    trainer = build_async_trainer(settings, model, tokenizer, rows, precision=compute.precision)
    worker = trainer.rollout_worker
    t0 = time.perf_counter()
    result = trainer.train()
    wall = time.perf_counter() - t0
    dest, gguf, _ = save_trained(trainer, tokenizer, settings.out, gguf=settings.gguf)
    return {"out": str(dest), "gguf": gguf, "steps": int(result.global_step), "log_history": trainer.state.log_history,
            "timings": {**worker.rollout_func.timings, "train_s": wall, "generate_s": worker.generate_s},
            "compute": compute.record(), "processes": 1,
            "async": {"max_staleness": settings.async_staleness, "samples_generated": worker.produced,
                      "rollout_calls": worker.calls}}


__all__ = ["CPUVarlenAttention", "EngineRolloutWorker", "MemoryWeightTransfer", "build_async_trainer", "patch_for_cpu",
           "train_grpo_async"]
