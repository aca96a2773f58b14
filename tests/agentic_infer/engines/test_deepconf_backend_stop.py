"""DeepConf online really stops generation at the backend, counted where the tokens are made.

`FakeLLM` produces a token only when the engine pulls one, so its count cannot tell a stopped trace from
an abandoned one that runs on. Here the tokens are counted by the producer itself:
- `ThreadedFakeLLM` generates in a worker thread that runs ahead of the consumer, exactly as the
  llama.cpp and transformers backends do (`thread_tokens`); it stops only when the cancel reaches it;
- the embedded model (llama.cpp) with a counter on `Llama.generate`, in the worker thread.
A trace stopped below the threshold, or cancelled at consensus, must have been produced no further
than the engine consumed (plus the one or two tokens in flight), and nothing is produced after `run`
returns.
"""

import asyncio
import threading
import time

import pytest

from agentic_infer.backends.base import thread_tokens
from agentic_infer.engines.deepconf import DeepConf
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Message, SamplingParams, TokenLogprob, TopLogprob

K = 4
IN_FLIGHT = 3  # tokens a producer may be ahead of the engine when the cancel reaches it


def lp(_i: int, tid: int) -> float:
    """'#' -> confidence 6.5 (top-4 logprobs -5, -6, -7, -8), '~' -> 1.5, anything else -> 3.5."""
    return {ord("~"): 0.0, ord("#"): -5.0}.get(tid, -2.0)


def good(ans: str, n: int = 24) -> str:
    return "#" * n + f"\\boxed{{{ans}}}"


def bad(ans: str, n: int = 1000) -> str:
    return "~" * n + f"\\boxed{{{ans}}}"


class ThreadedFakeLLM(FakeLLM):
    """A FakeLLM whose tokens are made in a worker thread, `token_s` apart, whether or not anyone pulls them;
    `produced[i]` counts the tokens made for the i-th generation, `threads_alive` the producers still running."""

    def __init__(self, responses, *, token_s: float = 0.002, **kw):
        super().__init__(responses, logprob_fn=lp, **kw)
        self.token_s = token_s
        self.produced: list[int] = []
        self._alive = 0
        self._count_lock = threading.Lock()

    @property
    def threads_alive(self) -> int:
        return self._alive

    def _stream_tokens(self, prompt, params, seed, cancelled):
        text = prompt if isinstance(prompt, str) else self.tokenizer.decode(prompt)
        ids = self.tokenizer.encode(self._next_response(text))
        slot = len(self.produced)
        self.produced.append(0)
        k = params.logprobs or 0

        def run(emit, stop: threading.Event) -> None:
            with self._count_lock:
                self._alive += 1
            try:
                for i, tid in enumerate(ids):
                    if stop.is_set():
                        return
                    time.sleep(self.token_s)
                    v = self.logprob_fn(i, tid)
                    top = tuple(TopLogprob("", v - j, (tid + j) % 256) for j in range(k))
                    self.produced[slot] += 1
                    emit((bytes([tid]), TokenLogprob(tid, chr(tid), v, top)))
            finally:
                with self._count_lock:
                    self._alive -= 1

        return thread_tokens(run, "threaded-fake")


def engine(llm, sampling=None, **kw):
    sampling = {"logprobs": K, "temperature": 1.0, "top_p": 1.0, "max_tokens": 10_000, **(sampling or {})}
    return DeepConf(llm, **{"mode": "online", "window": 8, **kw}, sampling=sampling)


def fates(rollout):
    return [t.metadata["deepconf"] for t in rollout.trajectories]


async def settled(llm) -> int:
    """Total tokens produced, read again after a pause: a producer still running would have grown it."""
    total = sum(llm.produced)
    await asyncio.sleep(0.1)
    assert sum(llm.produced) == total and llm.threads_alive == 0
    return total


async def test_traces_stopped_below_threshold_stop_at_the_backend():
    # warm-up: two confident traces (42, 43) and two unconfident ones -> threshold 3.5; then four traces of
    # 1,000 low-confidence tokens, each stopped after its first full window of 8
    script = [good("42"), good("43"), bad("7", 40), bad("7", 40)] + [bad("9")] * 4
    llm = ThreadedFakeLLM(script)
    res = await engine(llm, budget=8, warmup=4).run({"question": "q"})
    assert res.metadata["deepconf"]["traces_stopped_early"] == 4
    total = await settled(llm)
    for fate, made in zip(fates(res), llm.produced):
        if fate["stopped_early"]:
            assert fate["tokens"] == 8 and made <= 8 + IN_FLIGHT, (fate["index"], made)
        else:
            assert made == fate["tokens"]  # a completed trace: everything made was consumed
    assert total <= res.metadata["deepconf"]["tokens_generated"] + 4 * IN_FLIGHT


async def test_traces_cancelled_at_consensus_stop_at_the_backend():
    long_ok = "#" * 3000 + "\\boxed{42}"
    script = [good("42"), good("42"), good("43"), bad("7", 40)] + [long_ok, good("42"), long_ok]
    llm = ThreadedFakeLLM(script)
    res = await engine(llm, budget=7, warmup=4, tau=0.75, concurrency=3).run({"question": "q"})
    rep = res.metadata["deepconf"]
    assert rep["stop_reason"] == "consensus" and rep["traces_cancelled"] == 2
    await settled(llm)
    for fate, made in zip(fates(res), llm.produced):
        if fate["cancelled"]:
            assert made <= fate["tokens"] + IN_FLIGHT < len(long_ok), (fate["index"], made)


# ---------------------------------------------------------------------------------------------------------
# the embedded model


@pytest.fixture(scope="module")
def independent_llm():
    """The embedded model with every call independent of the previous one (no prefix cache), so a seeded run
    samples the same traces whatever ran before it in the session."""
    pytest.importorskip("llama_cpp")
    from agentic_infer.backends.llamacpp import LlamaCppLLM

    return LlamaCppLLM(n_ctx=512, prefix_cache=False)


@pytest.fixture()
def llama_produced(independent_llm, count_llama_tokens):
    return count_llama_tokens(independent_llm)


async def test_online_on_the_embedded_model_stops_at_the_backend(independent_llm, llama_produced):
    question = "What is 12 + 30? Answer briefly."
    deepconf = DeepConf(independent_llm, mode="online", budget=4, warmup=2, window=4, tail=4, tau=None,
                        sampling={"max_tokens": 16, "logprobs": 5, "seed": 2, "temperature": 0.9, "top_p": 0.95})
    res = await deepconf.run({"question": question})
    rep = res.metadata["deepconf"]
    assert rep["traces_total"] == 4 == len(llama_produced)  # one generation per trace, in trace order
    stopped = [f for f in fates(res) if f["stopped_early"]]
    assert stopped, "seed 2 stops at least one trace on this model; pick another seed if the model changed"
    for fate, made in zip(fates(res), llama_produced):
        traj = res.trajectories[fate["index"]]
        assert traj.token_exact and len(traj.segments[1].token_ids) == fate["tokens"]
        if fate["stopped_early"]:
            assert traj.finish_reason == "abort" and fate["tokens"] >= 4
            assert made <= fate["tokens"] + IN_FLIGHT, (fate["index"], made)
        else:  # ran to the end: the tokens it sampled, plus the end-of-sequence token when it stopped by itself
            assert fate["tokens"] <= made <= fate["tokens"] + 1
    assert sum(llama_produced) <= rep["tokens_generated"] + len(llama_produced) * IN_FLIGHT
    # the model is free at once and nothing more is produced for the stopped traces
    before = list(llama_produced)
    [one] = await independent_llm.generate(independent_llm.render([Message("user", question)]),
                                           SamplingParams(max_tokens=1, temperature=0))
    assert llama_produced[:-1] == before and llama_produced[-1] == 1 and one.token_ids
