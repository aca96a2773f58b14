"""The OpenAI backend against a real OpenAI-compatible server (llama-cpp-python's) on loopback.

Parity with the in-process backend, stop strings matched client-side, streaming, the chat API,
and retries through a fault-injecting proxy: 500s, 429 + Retry-After, dropped connections and a
response slower than the timeout succeed within the retry bound; a 400 is not retried; an
exhausted budget raises a clear BackendError.
"""

import time

import pytest

from agentic_infer.backends import load_llm
from agentic_infer.errors import BackendError
from agentic_infer.fault_proxy import FaultProxy
from agentic_infer.types import Message, SamplingParams

GREEDY = SamplingParams(max_tokens=24, temperature=0, logprobs=5)


@pytest.fixture(scope="module")
def server_llm(llama_server):
    return load_llm(llama_server.uri)


@pytest.fixture(scope="module")
def prompt(embedded_llm):
    return embedded_llm.render([Message("user", "Name three colours of the rainbow.")])


async def test_parity_with_in_process_llamacpp(embedded_llm, server_llm, prompt):
    [local] = await embedded_llm.generate(prompt, GREEDY)
    [remote] = await server_llm.generate(prompt, GREEDY)
    assert server_llm.flavor == "llamacpp"
    assert remote.text == local.text
    assert remote.prompt_tokens == local.prompt_tokens > 0
    assert len(remote.logprobs) == len(local.logprobs)
    for r, loc in zip(remote.logprobs, local.logprobs):
        assert r.token == loc.token
        assert abs(r.logprob - loc.logprob) < 1e-3
        assert [t.token for t in r.top] == [t.token for t in loc.top]
        assert max(abs(a.logprob - b.logprob) for a, b in zip(r.top, loc.top)) < 1e-3


async def test_client_side_stops_report_which_matched(embedded_llm, server_llm, prompt):
    [full] = await embedded_llm.generate(prompt, SamplingParams(max_tokens=24, temperature=0))
    word = full.text.split()[2]
    params = SamplingParams(max_tokens=24, temperature=0, stop=(word, "zzz-never"), include_stop=True)
    [local] = await embedded_llm.generate(prompt, params)
    [remote] = await server_llm.generate(prompt, params)
    assert remote.stop_reason == local.stop_reason == word
    assert remote.text == local.text and remote.text.endswith(word)


async def test_stream_and_chat_api(llama_server, server_llm, prompt):
    deltas = [d async for d in server_llm.stream(prompt, GREEDY)]
    [c] = await server_llm.generate(prompt, GREEDY)
    assert "".join(d.text for d in deltas) == c.text
    chat = load_llm(f"openai://127.0.0.1:{llama_server.port}/v1?model=smollm2&flavor=llamacpp")
    [reply] = await chat.generate([Message("user", "Say hello.")], SamplingParams(max_tokens=8, temperature=0,
                                                                                 logprobs=2))
    assert reply.text and reply.logprobs and len(reply.logprobs[0].top) == 2


@pytest.fixture()
def proxy(llama_server):
    with FaultProxy(f"127.0.0.1:{llama_server.port}") as p:
        yield p


def _via(proxy, **opts) -> object:
    extra = "".join(f"&{k}={v}" for k, v in opts.items())
    return load_llm(f"openai://127.0.0.1:{proxy.port}/v1?model=smollm2&flavor=llamacpp&max_wait=2{extra}")


SHORT = SamplingParams(max_tokens=4, temperature=0)


@pytest.mark.parametrize("faults", [["500", "503"], ["drop", "drop"], ["500", "drop", "502"]])
async def test_transient_faults_are_retried(proxy, faults):
    proxy.set_faults(faults)
    [c] = await _via(proxy, retries=4).generate("Hello", SHORT)
    assert c.text
    assert [f for f, _ in proxy.log] == faults + ["ok"]


async def test_429_honours_retry_after(proxy):
    proxy.set_faults(["429:1"])
    t0 = time.monotonic()
    [c] = await _via(proxy, retries=3).generate("Hello", SHORT)
    assert c.text and time.monotonic() - t0 >= 1.0
    assert [f for f, _ in proxy.log] == ["429:1", "ok"]


async def test_slow_response_times_out_then_succeeds(proxy):
    proxy.set_faults(["slow:3"])
    [c] = await _via(proxy, retries=3, timeout=1.5).generate("Hello", SHORT)
    assert c.text
    assert [f for f, _ in proxy.log] == ["slow:3", "ok"]


async def test_400_is_not_retried(proxy):
    proxy.set_faults(["400"])
    with pytest.raises(BackendError, match="HTTP 400.*not retried") as e:
        await _via(proxy, retries=5).generate("Hello", SHORT)
    assert e.value.status_code == 400 and not e.value.retryable
    assert len(proxy.log) == 1


async def test_exhausted_budget_raises_clear_error(proxy):
    proxy.set_faults(["500"] * 10)
    with pytest.raises(BackendError, match=r"HTTP 500.*after 3 attempts") as e:
        await _via(proxy, retries=3).generate("Hello", SHORT)
    assert e.value.retryable and len(proxy.log) == 3


async def test_unreachable_server_raises_backend_error():
    from agentic_infer.backends.llamacpp_server import free_port

    llm = load_llm(f"openai://127.0.0.1:{free_port()}/v1?model=x&flavor=openai&retries=2&max_wait=0.1")
    with pytest.raises(BackendError, match="after 2 attempts"):
        await llm.generate("Hello", SHORT)


async def test_leaving_a_stream_aborts_it_at_the_server(server_llm, prompt):
    import time as _time

    seen = 0
    async for _ in server_llm.stream(prompt, SamplingParams(max_tokens=600, temperature=0)):
        seen += 1
        if seen == 3:
            break
    # llama.cpp's server runs one generation at a time: had the abandoned one gone on for its 600
    # tokens, this request would queue behind it for tens of seconds
    t0 = _time.monotonic()
    [c] = await server_llm.generate(prompt, SamplingParams(max_tokens=4, temperature=0))
    assert c.text and _time.monotonic() - t0 < 10
