"""The OpenAI backend's retry waits and concurrency limit, measured where the server sees them.

A `FaultProxy` in front of llama.cpp's real server records when each request arrived and how many
it held at once, so these tests read the server side, not the client's own clock or counters:
- a 429 with `Retry-After: S` is retried no sooner than S seconds after the 429's request arrived
  (the backend's own backoff would retry after at most 0.5 s), and never later than `max_wait`;
- `?concurrency=N` holds exactly N requests in flight when more are waiting (not 1, not all).
"""

import asyncio

import pytest

from agentic_infer.backends import load_llm
from agentic_infer.types import SamplingParams

SHORT = SamplingParams(max_tokens=2, temperature=0)


def via(proxy, **opts):
    query = "".join(f"&{k}={v}" for k, v in opts.items())
    return load_llm(f"openai://127.0.0.1:{proxy.port}/v1?model=smollm2&flavor=llamacpp{query}")


def arrival_gaps(proxy) -> list[float]:
    times = [r.arrived for r in proxy.requests]
    return [b - a for a, b in zip(times, times[1:])]


async def test_retry_after_delays_the_retry_as_the_server_sees_it(fault_proxy):
    fault_proxy.set_faults(["429:1.5"])
    [c] = await via(fault_proxy, retries=3, max_wait=10).generate("Hello", SHORT)
    assert c.text
    assert [r.fault for r in fault_proxy.requests] == ["429:1.5", "ok"]
    [gap] = arrival_gaps(fault_proxy)
    assert 1.5 <= gap < 1.5 + 3.0, gap  # the header's delay, not the 0.25-0.5 s backoff of a first retry


async def test_retry_after_is_capped_by_max_wait(fault_proxy):
    fault_proxy.set_faults(["429:60"])
    [c] = await via(fault_proxy, retries=3, max_wait=1).generate("Hello", SHORT)
    assert c.text
    [gap] = arrival_gaps(fault_proxy)
    assert 1.0 <= gap < 1.0 + 3.0, gap


@pytest.mark.parametrize("limit", [1, 3])
async def test_concurrency_limit_is_the_peak_in_flight_at_the_server(fault_proxy, limit):
    # each request is held 0.3 s at the proxy, so the 7 issued at once pile up behind the client's limit
    fault_proxy.set_faults(["slow:0.3"] * 7)
    llm = via(fault_proxy, concurrency=limit)
    out = await asyncio.gather(*(llm.generate(f"Count to {i}:", SHORT) for i in range(7)))
    assert all(c.text for [c] in out)
    assert len(fault_proxy.requests) == 7
    assert fault_proxy.peak_in_flight == limit


async def test_concurrency_limit_holds_for_streamed_requests(fault_proxy):
    llm = via(fault_proxy, concurrency=2)
    params = SamplingParams(max_tokens=16, temperature=0, stop=("zzz-never",))  # streamed, stops matched here
    await asyncio.gather(*(llm.generate(f"Count to {i}:", params) for i in range(7)))
    assert len(fault_proxy.requests) == 7
    # A stream's end as the proxy sees it (its last relayed byte, e.g. the chunk terminator after `[DONE]`) can
    # trail the client's release of the slot by a moment, so one next request may overlap it (seen 1 in ~8 runs).
    # Without the limit on streams all 7 are open at once.
    assert 2 <= fault_proxy.peak_in_flight <= 3
