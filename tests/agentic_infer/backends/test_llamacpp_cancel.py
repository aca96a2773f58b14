"""Abandoning a llama.cpp stream stops generation in the worker thread, counted at the model.

The consumer's view cannot tell: it sees the tokens it pulled either way. So we count the tokens
`llama_cpp.Llama.generate` yields inside the backend's worker thread, one count per generation.
Without the backend's between-token `cancelled` check, the abandoned stream runs on to its
`max_tokens` (and the next call waits for it: 2.15 s instead of 0.03 s, as measured in issue 15).
"""

import time

import pytest

from agentic_infer.types import SamplingParams

PROMPT = "Count from one to one hundred: one, two, three, four,"
LONG = SamplingParams(max_tokens=48, temperature=0)


@pytest.fixture()
def produced(embedded_llm, count_llama_tokens):
    return count_llama_tokens(embedded_llm)


async def test_abandoned_stream_stops_generating_at_the_backend(embedded_llm, produced):
    [full] = await embedded_llm.generate(PROMPT, LONG)
    assert full.finish_reason == "length" and produced == [48]  # uncancelled, it would run 48 tokens
    seen = 0
    async for _ in embedded_llm.stream(PROMPT, LONG):
        seen += 1
        if seen == 3:
            break  # abandon the stream, as a consumer does
    t0 = time.monotonic()
    [one] = await embedded_llm.generate(PROMPT, SamplingParams(max_tokens=1, temperature=0))
    waited = time.monotonic() - t0
    assert one.token_ids == full.token_ids[:1]
    abandoned = produced[1]
    # the 3 tokens consumed, the few the thread ran ahead, and the one it sampled before seeing the cancel
    assert abandoned <= 3 + 4, f"{abandoned} tokens produced after abandoning at 3 (next call waited {waited:.2f} s)"
    assert produced[2] == 1
