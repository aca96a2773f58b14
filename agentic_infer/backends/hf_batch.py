"""Lockstep batching for the hf backend: concurrent generations decoded together, one forward per token.

    llm = HFLLM.from_model(model, tokenizer, batch=16)     # or hf:///path?batch=16
    await asyncio.gather(*(llm.generate(p, params) for p in prompts))   # one batched decode

Why: on a CPU a 135M model's decode step is bound by reading the weights, not by the batch, so 16
sequences decoded together cost little more than one (RL rollouts run many episodes at once;
`bench/rl_throughput.py` measures it). A worker thread takes the generations waiting in its queue (it waits
`window_s` after the last arrival, so episodes that resubmit together land in one batch, up to `max_batch`),
left-pads their prompts, prefills them in one forward with an attention mask and mask-derived position ids,
then decodes all of them one token per forward through the shared KV cache, each row with its own sampling
settings and its own seeded generator. Finished or cancelled rows leave the batch (the cache keeps only live
rows). Generations that arrive while a batch runs wait for the next one. The worker ends after `idle_s`
without work (a later generation starts a new one), so a dropped backend frees its model and store.

Prefix reuse: a finished row's keys and values are kept (`PrefixStore`, the last `2 x max_batch + 8` rows,
keyed by the token ids they cover), and a new generation starts from the longest common prefix with any of
them, so an agent's next turn (its previous prompt + the generated ids + the observation, token-in/token-out)
prefills only what is new, and episodes share their system prompt's. Each row's reused part is left-padded to
the batch's longest, then the new tokens follow (mask and position ids skip the padding between). The store
is dropped whenever the weights change in place (an optimizer step bumps the parameters' version counters),
so a trainer's rollouts never reuse keys computed by older weights.

Numerics: a padded batch does not give bit-identical logits to a sequence run alone (different kernel
shapes); greedy text matches in the tests here, and trainers recompute log-probs from the ids anyway.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.types import SamplingParams


@dataclass
class _Request:
    ids: list[int]
    params: SamplingParams
    seed: int
    emit: Any
    cancelled: threading.Event
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class PrefixStore:
    """Per-row KV of finished generations, keyed by the token ids they cover (the oldest dropped past `size`)."""

    def __init__(self, size: int):
        self.size = size
        self.rows: dict[tuple[int, ...], list[tuple[Any, Any]]] = {}  # ids -> per layer (keys, values) [H, L, D]
        self.version: int | None = None
        self.reused = 0  # prompt tokens not prefilled thanks to the store (tests and benchmarks read it)

    def check(self, version: int) -> None:
        """Drop everything when the weights changed since the rows were computed."""
        if version != self.version:
            self.rows.clear()
            self.version = version

    def longest(self, ids: list[int]) -> tuple[int, list[tuple[Any, Any]] | None]:
        """(reusable length, its per-layer KV) for `ids`: the longest common prefix with a stored row, at most
        len(ids) - 1 (the last prompt token is always fed, for its logits)."""
        best, kv = 0, None
        for key, value in self.rows.items():
            n, limit = 0, min(len(key), len(ids) - 1)
            while n < limit and key[n] == ids[n]:
                n += 1
            if n > best:
                best, kv = n, value
        return best, kv

    def put(self, ids: list[int], kv: list[tuple[Any, Any]]) -> None:
        self.rows.pop(tuple(ids), None)
        self.rows[tuple(ids)] = kv
        while len(self.rows) > self.size:
            self.rows.pop(next(iter(self.rows)))


def weights_version(model: Any) -> int:
    """A number that changes when any parameter is modified in place (the sum of their version counters)."""
    return sum(p._version for p in model.parameters())


class LockstepBatcher:
    """The worker thread that batches one HFLLM's concurrent generations (see the module docstring)."""

    def __init__(self, llm: Any, max_batch: int, window_s: float = 0.05, idle_s: float = 2.0):
        self.llm, self.max_batch, self.window_s, self.idle_s = llm, max_batch, window_s, idle_s
        self._queue: queue.Queue[_Request] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.batches: list[int] = []  # the size of every batch run (tests and benchmarks read it)
        self.store = PrefixStore(2 * max_batch + 8)

    def run(self, ids: list[int], params: SamplingParams, seed: int, emit: Any, cancelled: threading.Event) -> None:
        """Blocking: queue one generation and return when its row has finished (as `HFLLM._run`)."""
        req = _Request(list(ids), params, seed, emit, cancelled)
        with self._start_lock:
            self._queue.put(req)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="hf-batch", daemon=True)
                self._thread.start()
        req.done.wait()
        if req.error is not None:
            raise req.error

    def _take(self, first: _Request) -> list[_Request]:
        batch = [first]
        while len(batch) < self.max_batch:
            try:
                batch.append(self._queue.get(timeout=self.window_s))
            except queue.Empty:
                break
        return batch

    def _work(self) -> None:
        """Batches until idle for `idle_s`, then the thread ends (and no longer holds the backend and its store)."""
        while True:
            try:
                first = self._queue.get(timeout=self.idle_s)
            except queue.Empty:
                with self._start_lock:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            batch = self._take(first)
            self.batches.append(len(batch))
            try:
                self._decode(batch)
            except BaseException as e:  # every waiting row gets the error
                for r in batch:
                    r.error = r.error or e
            finally:
                for r in batch:
                    r.done.set()

    def _decode(self, batch: list[_Request]) -> None:
        import torch
        from transformers import DynamicCache

        llm = self.llm
        model, device = llm.model, llm.device
        for r in batch:
            llm.check_fits(r.ids)
        self.store.check(weights_version(model))
        reuse = [self.store.longest(r.ids) for r in batch]
        cached = [n for n, _ in reuse]
        fresh = [len(r.ids) - n for r, n in zip(batch, cached)]
        self.store.reused += sum(cached)
        width_c, width_f, pad = max(cached), max(fresh), llm.pad_id
        ids = torch.tensor([[pad] * (width_f - f) + r.ids[n:] for r, n, f in zip(batch, cached, fresh)], device=device)
        mask = torch.tensor([[0] * (width_c - n) + [1] * n + [0] * (width_f - f) + [1] * f
                             for n, f in zip(cached, fresh)], device=device)
        positions = torch.tensor([[0] * (width_f - f) + list(range(n, n + f)) for n, f in zip(cached, fresh)],
                                 device=device)
        past = DynamicCache(ddp_cache_data=self._padded(reuse, width_c)) if width_c else None
        gens = [torch.Generator(device=device).manual_seed(r.seed) for r in batch]
        prev = [list(r.ids) for r in batch]
        texts = [llm.detokenizer() for _ in batch]
        live = list(range(len(batch)))  # batch rows still decoding, in cache order
        cache_arg = llm.cache_arg
        with llm.model_lock, torch.inference_mode():
            out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                        **{cache_arg: past})
            past = getattr(out, "cache", None) or out.past_key_values
            last = positions[:, -1]
            step = 0
            while live:
                logits = out.logits[:, -1]
                keep, nxt = [], []
                for row, i in enumerate(live):
                    r = batch[i]
                    tok = None
                    if not r.cancelled.is_set() and step < r.params.max_tokens:
                        tok = llm.pick(logits[row], r.params, prev[i], gens[i])
                    if tok is None or tok in llm.eos_ids:
                        self._keep(past, row, mask[row], prev[i])  # its cache covers prev[i] exactly
                        continue
                    prev[i].append(tok)
                    r.emit((texts[i].push(tok, last=step == r.params.max_tokens - 1),
                            llm.token_logprob(logits[row], tok, r.params.logprobs)))
                    keep.append(row)
                    nxt.append(tok)
                step += 1
                if not keep:
                    return
                if len(keep) < len(live):  # finished rows leave the batch and the cache
                    index = torch.tensor(keep, device=device)
                    past.batch_select_indices(index)
                    mask, last = mask[index], last[index]
                    live = [live[row] for row in keep]
                mask = torch.cat([mask, mask.new_ones(len(live), 1)], dim=1)
                last = last + 1
                out = model(input_ids=torch.tensor([[t] for t in nxt], device=device), attention_mask=mask,
                            position_ids=last[:, None], use_cache=True, **{cache_arg: past})
                past = getattr(out, "cache", None) or out.past_key_values

    def _keep(self, past: Any, row: int, mask: Any, ids: list[int]) -> None:
        """Store a finished row's KV (its unmasked columns) under the ids it covers."""
        cols = mask.bool()
        self.store.put(ids, [(layer.keys[row][:, cols].clone(), layer.values[row][:, cols].clone())
                             for layer in past.layers])

    @staticmethod
    def _padded(reuse: list[tuple[int, Any]], width: int) -> list[tuple[Any, Any]]:
        """Per layer (keys, values) [B, H, width, D]: each row's first n stored columns, left-padded with zeros."""
        import torch

        ref = next(kv for n, kv in reuse if n)
        out = []
        for layer, (k0, _) in enumerate(ref):
            h, d = k0.shape[0], k0.shape[-1]
            ks, vs = [], []
            for n, kv in reuse:
                z = k0.new_zeros(h, width - n, d)
                ks.append(torch.cat([z, kv[layer][0][:, :n]], 1) if n else k0.new_zeros(h, width, d))
                vs.append(torch.cat([z, kv[layer][1][:, :n]], 1) if n else k0.new_zeros(h, width, d))
            out.append((torch.stack(ks), torch.stack(vs)))
        return out


__all__ = ["LockstepBatcher", "PrefixStore", "weights_version"]
