"""vLLM's offline async engine in process (`vllm://MODEL_OR_PATH`, GPU only, extra `vllm`).

Options: `tensor_parallel_size`, `gpu_memory_utilization`, `max_model_len`, `dtype`, `seed`.
vLLM matches stop strings itself and reports which one matched (`stop_reason`), samples `n`
completions in one request, and continuous-batches concurrent requests; streaming is cancelled with
`engine.abort(request_id)`. Logprobs are requested from the raw (untempered) distribution where the
installed vLLM supports `logprobs_mode="raw_logprobs"` (DeepConf needs that).

Token-in, token-out: text prompts are tokenized here (`tokenizer.encode(text, add_special=True)`, the
encode semantics of `backends/base.py`) and every prompt reaches the engine as `prompt_token_ids`,
so a text prompt and its `encode_prompt` ids condition identically. Completions carry vLLM's
generated ids; the final EOS / stop token id that vLLM includes is dropped, as the other backends
never return it (the text never shows it either).

Not tested in the default suite (no GPU, no vLLM wheel here): its tests are marked `gpu`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agentic_infer.backends.base import BaseLLM, StreamDelta
from agentic_infer.backends.chat_template import ChatTemplate
from agentic_infer.backends.hf import HFTokenizer
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.types import Completion, Message, SamplingParams, TokenLogprob, TopLogprob


class VLLMLLM(BaseLLM):
    name = "vllm"

    def __init__(self, model: str, **engine_kwargs: Any):
        super().__init__()
        try:
            from vllm import AsyncEngineArgs, AsyncLLMEngine
        except ImportError as e:
            raise ConfigError("the vllm backend needs vLLM and a GPU: pip install 'agentic-infer[vllm]'") from e
        args = dict(engine_kwargs)
        args.setdefault("logprobs_mode", "raw_logprobs")
        try:
            engine_args = AsyncEngineArgs(model=model, **args)
        except TypeError:  # older vLLM without logprobs_mode
            args.pop("logprobs_mode")
            engine_args = AsyncEngineArgs(model=model, **args)
        self.engine = AsyncLLMEngine.from_engine_args(engine_args)
        self.model = model
        self._hf_tok = None

    @property
    def tokenizer(self) -> HFTokenizer:
        if self._hf_tok is None:
            from transformers import AutoTokenizer

            self._hf_tok = AutoTokenizer.from_pretrained(self.model, local_files_only=True)
        return HFTokenizer(self._hf_tok)

    def _as_prompt(self, prompt: Any) -> list[int]:
        """Token ids (text is tokenized here, with the same encode semantics as `encode_prompt`)."""
        p = super()._as_prompt(prompt)
        return self.tokenizer.encode(p) if isinstance(p, str) else list(p)

    def render(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        hf = self.tokenizer.hf
        return ChatTemplate(hf.chat_template, bos_token=hf.bos_token or "", eos_token=hf.eos_token or "").render(
            messages, add_generation_prompt=add_generation_prompt)

    def _vparams(self, params: SamplingParams, n: int, seed: int | None) -> Any:
        from vllm import SamplingParams as VSP

        return VSP(n=n, max_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p,
                   top_k=params.top_k if params.top_k > 0 else -1, seed=seed, stop=list(params.stop),
                   include_stop_str_in_output=params.include_stop, logprobs=params.logprobs,
                   repetition_penalty=params.repetition_penalty)

    @staticmethod
    def _inputs(prompt: str | list[int]) -> Any:
        return prompt if isinstance(prompt, str) else {"prompt_token_ids": list(prompt)}

    @staticmethod
    def _token(tid: int, entry: dict | None) -> TokenLogprob:
        entry = entry or {}
        own = entry.get(tid)
        top = sorted(((i, lp) for i, lp in entry.items()), key=lambda x: -x[1].logprob)
        return TokenLogprob(tid, (own.decoded_token if own else "") or "", own.logprob if own else float("nan"),
                            tuple(TopLogprob(lp.decoded_token or "", lp.logprob, i) for i, lp in top))

    def _ends_on_stop_token(self, out: Any) -> bool:
        """vLLM keeps the EOS (or stop-token) id that ended a sequence in `token_ids`; we drop it."""
        if out.finish_reason != "stop" or not out.token_ids or isinstance(out.stop_reason, str):
            return False
        last = out.token_ids[-1]
        return last == out.stop_reason if isinstance(out.stop_reason, int) else last == self.tokenizer.hf.eos_token_id

    def _completion(self, out: Any, want_logprobs: bool) -> Completion:
        ids = list(out.token_ids)
        lps = [self._token(t, e) for t, e in zip(ids, out.logprobs)] if want_logprobs and out.logprobs else None
        if self._ends_on_stop_token(out):
            ids = ids[:-1]
            lps = lps[:-1] if lps is not None else None
        finish = out.finish_reason if out.finish_reason in ("stop", "length") else "abort"
        stop = out.stop_reason if isinstance(out.stop_reason, str) else None
        return Completion(out.text, ids, lps, finish, stop)

    async def generate(self, prompt: Any, params: SamplingParams) -> list[Completion]:
        p = self._as_prompt(prompt)
        final = None
        try:
            async for out in self.engine.generate(self._inputs(p), self._vparams(params, params.n, params.seed),
                                                  uuid.uuid4().hex):
                final = out
        except Exception as e:
            raise BackendError(f"vLLM generation failed: {e!r}") from e
        return [self._completion(o, params.logprobs is not None) for o in final.outputs]

    async def stream(self, prompt: Any, params: SamplingParams) -> AsyncIterator[StreamDelta]:
        if params.n != 1:
            raise ConfigError(f"SamplingParams.n={params.n}: stream() yields one sample")
        p = self._as_prompt(prompt)
        rid = uuid.uuid4().hex
        seen_tokens, seen_text, done = 0, 0, False
        try:
            async for out in self.engine.generate(self._inputs(p), self._vparams(params, 1, params.seed), rid):
                o = out.outputs[0]
                new = list(o.token_ids)[seen_tokens:]
                eos = self._ends_on_stop_token(o)
                for j, tid in enumerate(new):
                    entry = o.logprobs[seen_tokens + j] if o.logprobs else None
                    last = j == len(new) - 1
                    text = o.text[seen_text:] if last else ""
                    finish = (o.finish_reason if o.finish_reason in ("stop", "length") else None) if last else None
                    token = None if last and eos else self._token(tid, entry)  # the final EOS is no token of ours
                    yield StreamDelta(text, token, finish,
                                      o.stop_reason if finish and isinstance(o.stop_reason, str) else None)
                seen_tokens, seen_text = len(o.token_ids), len(o.text)
            done = True
        finally:
            if not done:
                await self.engine.abort(rid)
