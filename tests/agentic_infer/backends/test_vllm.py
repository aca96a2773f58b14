"""vLLM offline engine. The engine test needs a GPU (set AGENTIC_VLLM_MODEL to a local model directory);
the prompt and output handling around it runs here on stand-ins for vLLM's objects."""

import os
from types import SimpleNamespace

import pytest

from agentic_infer.types import SamplingParams


class StubHF:
    """A transformers tokenizer stand-in: one id per character, BOS 1 added at a sequence start, EOS 2."""

    bos_token_id, eos_token_id = 1, 2

    def encode(self, text, add_special_tokens=True):
        return ([1] if add_special_tokens else []) + [ord(c) for c in text]

    def decode(self, ids, **kw):
        return "".join(chr(i) for i in ids if i > 2)


def stub_vllm():
    from agentic_infer.backends.vllm import VLLMLLM

    llm = VLLMLLM.__new__(VLLMLLM)  # no engine: only the code around it
    llm._hf_tok = StubHF()
    return llm


def output(ids, finish="stop", stop_reason=None, text="ab"):
    lp = [{i: SimpleNamespace(logprob=-0.5, decoded_token=chr(i) if i > 2 else "")} for i in ids]
    return SimpleNamespace(token_ids=ids, logprobs=lp, finish_reason=finish, stop_reason=stop_reason, text=text)


def test_vllm_text_prompts_become_the_ids_encode_prompt_gives():
    from agentic_infer.backends.base import encode_prompt

    llm = stub_vllm()
    assert llm._as_prompt("ab") == encode_prompt(llm, "ab") == [1, 97, 98]
    assert llm._as_prompt([5, 6]) == [5, 6]


@pytest.mark.parametrize("out, ids", [
    (output([97, 98, 2]), [97, 98]),  # EOS: vLLM keeps its id, we drop it
    (output([97, 98, 7], stop_reason=7), [97, 98]),  # a stop token id
    (output([97, 98], stop_reason="b"), [97, 98]),  # a stop string: every token stays
    (output([97, 2], finish="length"), [97, 2]),  # cut by max_tokens: nothing is an end marker
])
def test_vllm_completions_never_carry_the_final_eos(out, ids):
    c = stub_vllm()._completion(out, want_logprobs=True)
    assert c.token_ids == ids and len(c.logprobs) == len(ids)


async def test_vllm_stream_drops_the_final_eos_token():
    from agentic_infer.backends.base import collect

    llm = stub_vllm()

    async def generate(inputs, params, request_id):
        assert inputs == {"prompt_token_ids": [1, 120]}
        yield SimpleNamespace(outputs=[output([97], finish=None, text="a")])
        yield SimpleNamespace(outputs=[output([97, 98, 2], text="ab")])

    llm.engine = SimpleNamespace(generate=generate)
    llm._vparams = lambda *args: None
    c = await collect(llm.stream("x", SamplingParams(logprobs=1)))
    assert c.token_ids == [97, 98] and c.text == "ab" and c.finish_reason == "stop"


@pytest.mark.gpu
async def test_vllm_generates_with_stops_logprobs_and_stream():
    pytest.importorskip("vllm")
    model = os.environ.get("AGENTIC_VLLM_MODEL")
    if not model:
        pytest.skip("set AGENTIC_VLLM_MODEL to a local model directory")
    from agentic_infer.backends import load_llm

    llm = load_llm(f"vllm://{model}?gpu_memory_utilization=0.3")
    params = SamplingParams(max_tokens=16, temperature=0, logprobs=5, stop=(".",), include_stop=True)
    [c] = await llm.generate("The capital of France is", params)
    assert c.text and len(c.logprobs) == len(c.token_ids) and len(c.logprobs[0].top) >= 5
    assert c.finish_reason == "length" or c.stop_reason == "."
    deltas = [d async for d in llm.stream("The capital of France is", params)]
    assert "".join(d.text for d in deltas) == c.text
