"""The OpenAI backend against a real OpenAI-compatible server (llama-cpp-python's) on loopback.

Parity with the in-process backend, stop strings matched client-side, streaming, the chat API,
and retries through a fault-injecting proxy: after 500s, dropped connections and a response slower than
the timeout, the reply equals the unfaulted one; a 400 is not retried; an exhausted budget raises a clear
BackendError. Retry-After and the concurrency limit are measured at the proxy in test_openai_server_side.py.
"""

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


@pytest.fixture(scope="module")
async def unfaulted(llama_server):
    """The greedy reply to "Hello" from the same server, configured as `_via` does, with no proxy between."""
    direct = load_llm(f"openai://127.0.0.1:{llama_server.port}/v1?model=smollm2&flavor=llamacpp")
    [ref] = await direct.generate("Hello", SHORT)
    assert ref.text and ref.finish_reason == "length"
    return ref


@pytest.mark.parametrize("faults", [["500", "503"], ["drop", "drop"], ["500", "drop", "502"]])
async def test_transient_faults_are_retried(proxy, faults, unfaulted):
    proxy.set_faults(faults)
    [c] = await _via(proxy, retries=4).generate("Hello", SHORT)
    assert (c.text, c.token_ids) == (unfaulted.text, unfaulted.token_ids)  # the retry sent the same request
    assert [f for f, _ in proxy.log] == faults + ["ok"]


async def test_slow_response_times_out_then_succeeds(proxy, unfaulted):
    proxy.set_faults(["slow:3"])
    [c] = await _via(proxy, retries=3, timeout=1.5).generate("Hello", SHORT)
    assert (c.text, c.token_ids) == (unfaulted.text, unfaulted.token_ids)
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


# -- token-in, token-out ------------------------------------------------------------------------------

async def test_token_id_prompts_reach_a_text_only_server_as_text(embedded_llm, server_llm, prompt):
    """llama-cpp-python's server takes text prompts only: ids are sent as their text, and no ids come back."""
    from agentic_infer.backends.base import encode_prompt

    ids = encode_prompt(embedded_llm, prompt)
    [by_text] = await server_llm.generate(prompt, SHORT)
    [by_ids] = await server_llm.generate(ids, SHORT)
    assert server_llm.token_prompts == "off" and by_ids.text == by_text.text
    assert by_ids.token_ids is None and by_ids.prompt_tokens == len(ids)


async def test_the_loop_marks_a_trajectory_from_a_server_without_ids_inexact(server_llm):
    from agentic_infer.engines.dialects import TIR
    from agentic_infer.engines.loop import AgentLoop, LoopLimits, Outcome

    async def reply(calls):
        return [Outcome("5") for _ in calls]

    loop = AgentLoop(server_llm, TIR, {"python": reply}, sampling=SamplingParams(max_tokens=12, temperature=0),
                     limits=LoopLimits(max_turns=2), limit_message="No more code.")
    traj = await loop.run({}, [Message("user", "What is 2 + 3? Use python.")],
                          assistant_prefix="```python\nprint(2 + 3)\n")
    assert not traj.token_exact
    assert all(s.token_ids is not None for s in traj.segments)  # encoded from text, for inexact views
    with pytest.raises(Exception, match="token_exact=False"):
        traj.sft_row()


class VLLMStub:
    """Answers like a vLLM server asked for `return_token_ids` / `return_tokens_as_token_ids` (canned
    replies, recorded requests): the OpenAI client and our parsing run for real, the model does not."""

    CHOICE = {"index": 0, "text": " Paris</q>", "finish_reason": "stop", "stop_reason": "</q>",
              "token_ids": [11, 12], "prompt_token_ids": [1, 2, 3],
              "logprobs": {"tokens": ["token_id:11", "token_id:12"], "token_logprobs": [-0.1, -0.2],
                           "top_logprobs": [{"token_id:11": -0.1, "token_id:13": -2.5}, {"token_id:12": -0.2}],
                           "text_offset": [0, 6]}}
    # streamed: the stop string ends inside the second token (" is</q>\n")
    CHUNKS = [{"index": 0, "text": " Par", "token_ids": [11], "finish_reason": None,
               "logprobs": {"tokens": ["token_id:11"], "token_logprobs": [-0.1], "top_logprobs": None,
                            "text_offset": [0]}},
              {"index": 0, "text": "is</q>\n", "token_ids": [12], "finish_reason": None,
               "logprobs": {"tokens": ["token_id:12"], "token_logprobs": [-0.2], "top_logprobs": None,
                            "text_offset": [4]}},
              {"index": 0, "text": " more", "token_ids": [14], "finish_reason": "length", "logprobs": None}]

    def __enter__(self):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stub = self
        self.requests = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, body: bytes, kind: str = "application/json"):
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(json.dumps({"object": "list", "data": [
                    {"id": "m", "object": "model", "created": 0, "owned_by": "vllm"}]}).encode())

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(req)
                head = {"id": "c", "object": "text_completion", "created": 0, "model": "m"}
                if not req.get("stream"):
                    self._send(json.dumps({**head, "choices": [stub.CHOICE],
                                           "usage": {"prompt_tokens": 3, "completion_tokens": 2,
                                                     "total_tokens": 5}}).encode())
                    return
                events = "".join(f"data: {json.dumps({**head, 'choices': [c]})}\n\n" for c in stub.CHUNKS)
                self._send((events + "data: [DONE]\n\n").encode(), "text/event-stream")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.uri = f"openai://127.0.0.1:{self.server.server_address[1]}/v1?model=m&retries=1"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


async def test_vllm_flavour_sends_ids_and_reads_ids_back():
    with VLLMStub() as stub:
        llm = load_llm(stub.uri)
        [c] = await llm.generate([1, 2, 3], SamplingParams(max_tokens=8, temperature=0, logprobs=2))
        req = stub.requests[-1]
        assert llm.flavor == "vllm" and req["prompt"] == [1, 2, 3]
        assert req["return_token_ids"] is True and req["return_tokens_as_token_ids"] is True
        assert c.token_ids == [11, 12] and c.stop_reason == "</q>" and c.prompt_tokens == 3
        assert [t.token_id for t in c.logprobs] == [11, 12] and c.logprobs[0].logprob == -0.1
        assert [(t.token_id, t.logprob) for t in c.logprobs[0].top] == [(11, -0.1), (13, -2.5)]

        [plain] = await llm.generate([1, 2, 3], SamplingParams(max_tokens=8, temperature=0))
        assert stub.requests[-1]["return_token_ids"] is True and "return_tokens_as_token_ids" not in stub.requests[-1]
        assert plain.token_ids == [11, 12] and plain.logprobs is None

        # client-side stops (streamed): the stop ends inside the second token, whose id is kept
        [cut] = await llm.generate([1, 2, 3], SamplingParams(max_tokens=8, temperature=0, stop=("</q>",),
                                                             include_stop=True))
        assert stub.requests[-1]["stream"] is True and stub.requests[-1]["prompt"] == [1, 2, 3]
        assert cut.text == " Paris</q>" and cut.stop_reason == "</q>" and cut.token_ids == [11, 12]
        await llm.aclose()
