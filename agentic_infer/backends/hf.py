"""A local transformers model (`hf:///path/to/model`, also GGUF: `hf:///dir?gguf_file=x.gguf`).

Options: `device` (cpu | cuda | auto; default: cuda when available), `dtype` (auto | float32 |
bfloat16 | float16), `gguf_file` (a GGUF file inside the directory, dequantised by transformers),
`tokenizer` (a separate local tokenizer directory), `batch` (1: one sequence at a time; N > 1: up to N
concurrent generations decoded together, `agentic_infer.backends.hf_batch`). Only local files are read (no hub
downloads).

Decoding is a plain token-by-token loop with the KV cache, sampling here (temperature, top-k,
top-p, repetition penalty) so that streaming, cancellation, stop strings and untempered top-k
logprobs behave exactly as in the other backends. One sequence at a time unless `batch` > 1 (lockstep
batches of concurrent generations, for RL rollouts on a CPU); for throughput on a GPU use the vLLM backend.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.backends.base import BaseLLM, thread_tokens, without_double_bos
from agentic_infer.backends.chat_template import ChatTemplate
from agentic_infer.errors import ConfigError, ContextLengthError
from agentic_infer.types import Message, SamplingParams, TokenLogprob, TopLogprob


class HFTokenizer:
    """A transformers tokenizer with the encode semantics of `agentic_infer.backends.base`.

    `add_special=True` is transformers' `add_special_tokens=True` (the tokenizer's own BOS policy), never
    a second BOS in front of one the text begins with; `add_special=False` adds nothing. `decode` keeps
    special tokens and spaces as they are (no clean-up), so it inverts `encode`.
    """

    def __init__(self, hf: Any):
        self.hf = hf

    def encode(self, text: str, add_special: bool = True) -> list[int]:
        ids = list(self.hf.encode(text, add_special_tokens=add_special))
        return without_double_bos(ids, self.hf.bos_token_id) if add_special else ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _pick(logits: Any, params: SamplingParams, prev: Sequence[int], generator: Any) -> int:
    """Sample one token id from raw logits with the HF-style processors (penalty, temperature, top-k, top-p)."""
    import torch

    x = logits.float().clone()
    if params.repetition_penalty != 1.0 and prev:
        idx = torch.tensor(sorted(set(prev)), device=x.device)
        vals = x[idx]
        x[idx] = torch.where(vals > 0, vals / params.repetition_penalty, vals * params.repetition_penalty)
    if params.greedy:
        return int(torch.argmax(x))
    x = x / params.temperature
    if params.top_k > 0:
        kth = torch.topk(x, min(params.top_k, x.numel())).values[-1]
        x[x < kth] = -float("inf")
    if params.top_p < 1.0:
        sorted_x, order = torch.sort(x, descending=True)
        cum = torch.softmax(sorted_x, -1).cumsum(-1)
        drop = cum - torch.softmax(sorted_x, -1) > params.top_p
        x[order[drop]] = -float("inf")
    probs = torch.softmax(x, -1)
    return int(torch.multinomial(probs, 1, generator=generator))


class HFLLM(BaseLLM):
    """A transformers causal LM run locally (CPU or GPU)."""

    name = "hf"
    max_concurrency = 1
    model_path: str | None = None  # the checkpoint loaded; None for a model handed over in memory (`from_model`)

    def __init__(self, path: str, *, device: str = "auto", dtype: str = "auto", gguf_file: str | None = None,
                 tokenizer: str | None = None, batch: int = 1):
        self._set_batch(batch)
        super().__init__()
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise ConfigError("the hf backend needs transformers and torch: pip install 'agentic-infer[hf]'") from e
        if not Path(path).exists():
            raise ConfigError(f"hf model path {path!r} does not exist; pass a local directory (hub names are "
                              "not downloaded)")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtypes = {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
        if dtype not in dtypes:
            raise ConfigError(f"dtype={dtype!r}: must be one of {sorted(dtypes)}")
        kw: dict[str, Any] = {"local_files_only": True}
        if gguf_file:
            kw["gguf_file"] = gguf_file
        hf_tok = AutoTokenizer.from_pretrained(tokenizer or path, **kw)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtypes[dtype], **kw).to(device).eval()
        self._attach(model, hf_tok, device)
        self.model_path = str(path)  # what an eval run records (eval.summary.model_info: its lineage.json)

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, *, device: str | None = None, batch: int = 1) -> HFLLM:
        """The backend over an already loaded transformers model and tokenizer (no files read): e.g. the
        policy a trainer is updating, generated from with its current weights. The model is used as it is
        (not moved, not switched to eval mode); `device` defaults to where its parameters are; `batch` > 1
        decodes up to that many concurrent generations together."""
        llm = cls.__new__(cls)
        llm._set_batch(batch)
        BaseLLM.__init__(llm)
        llm._attach(model, tokenizer, device or str(next(model.parameters()).device))
        return llm

    def _set_batch(self, batch: int) -> None:
        from agentic_infer.backends.hf_batch import LockstepBatcher

        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ConfigError(f"hf backend batch={batch!r}: an int >= 1 (1 = one sequence at a time)")
        self.max_concurrency = batch
        self._batcher = LockstepBatcher(self, batch) if batch > 1 else None

    def _attach(self, model: Any, hf_tok: Any, device: str) -> None:
        self.model = model
        self._hf_tok = hf_tok
        self.device = device
        self.context_length = int(getattr(model.config, "max_position_embeddings", 0) or 0) or None
        self._tokenizer = HFTokenizer(hf_tok)
        self._template = ChatTemplate(hf_tok.chat_template or _chatml(), bos_token=hf_tok.bos_token or "",
                                      eos_token=hf_tok.eos_token or "")
        gen = getattr(model, "generation_config", None)
        eos = gen.eos_token_id if gen is not None else None
        eos = eos if isinstance(eos, list) else [eos] if eos is not None else []
        self.eos_ids = {int(e) for e in eos} | ({hf_tok.eos_token_id} if hf_tok.eos_token_id is not None else set())
        pad = hf_tok.pad_token_id if hf_tok.pad_token_id is not None else hf_tok.eos_token_id
        self.pad_id = int(pad) if pad is not None else 0  # left padding of batched prompts (masked out)
        self.model_lock = threading.Lock()
        params = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"

    pick = staticmethod(_pick)

    def detokenizer(self) -> _Detokenizer:
        return _Detokenizer(self._tokenizer)

    def check_fits(self, ids: Sequence[int]) -> None:
        if self.context_length and len(ids) + 1 > self.context_length:
            raise ContextLengthError(f"prompt of {len(ids)} tokens does not fit the model's {self.context_length}")

    def token_logprob(self, logits: Any, tok: int, k: int | None) -> TokenLogprob:
        """The sampled token's untempered log-prob and its top `k` alternatives (None: not computed)."""
        import torch

        if k is None:
            return TokenLogprob(tok, "", float("nan"))
        logp = torch.log_softmax(logits.float(), -1)
        top = torch.topk(logp, k) if k > 0 else None
        alts = () if top is None else tuple(TopLogprob(self._hf_tok.decode([int(i)]), float(v), int(i))
                                            for v, i in zip(top.values.tolist(), top.indices.tolist()))
        return TokenLogprob(tok, self._hf_tok.decode([tok]), float(logp[tok]), alts)

    @property
    def tokenizer(self) -> HFTokenizer:
        return self._tokenizer

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self._template.render(messages, add_generation_prompt=add_generation_prompt)

    def _run(self, ids: list[int], params: SamplingParams, seed: int, emit: Any, cancelled: threading.Event) -> None:
        import torch

        self.check_fits(ids)
        gen = torch.Generator(device=self.device).manual_seed(seed)
        with self.model_lock, torch.inference_mode():
            past = None
            inp = torch.tensor([ids], device=self.device)
            prev = list(ids)
            text = self.detokenizer()
            for step in range(params.max_tokens):
                if cancelled.is_set():
                    return
                out = self.model(input_ids=inp, use_cache=True, **{self.cache_arg: past})
                past = getattr(out, "cache", None) or out.past_key_values
                logits = out.logits[0, -1]
                tok = _pick(logits, params, prev, gen)
                if tok in self.eos_ids:
                    return
                prev.append(tok)
                emit((text.push(tok, last=step == params.max_tokens - 1), self.token_logprob(logits, tok, params.logprobs)))
                inp = torch.tensor([[tok]], device=self.device)

    def _stream_tokens(self, prompt, params, seed, cancelled) -> AsyncIterator[tuple[Any, Any]]:
        ids = self._tokenizer.encode(prompt) if isinstance(prompt, str) else list(prompt)
        run = self._batcher.run if self._batcher is not None else self._run
        return thread_tokens(lambda emit, flag: run(ids, params, seed, emit, flag), "transformers")


class _Detokenizer:
    """Incremental text of generated ids (vLLM's prefix/read offsets): a token's text is the difference
    of two decodes, so a multi-byte character split across tokens and a SentencePiece leading space come
    out right; text ending in an incomplete character is held back until it completes (or `last`)."""

    def __init__(self, tokenizer: HFTokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix = self.read = 0

    def push(self, tok: int, *, last: bool = False) -> str:
        self.ids.append(tok)
        before = self.tokenizer.decode(self.ids[self.prefix:self.read])
        after = self.tokenizer.decode(self.ids[self.prefix:])
        if len(after) > len(before) and (last or not after.endswith("\ufffd")):
            self.prefix, self.read = self.read, len(self.ids)
            return after[len(before):]
        return ""


def _chatml() -> str:
    from agentic_infer.backends.chat_template import CHATML

    return CHATML
