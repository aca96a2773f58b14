"""vLLM offline engine (GPU only). Set AGENTIC_VLLM_MODEL to a local model directory to run."""

import os

import pytest

from agentic_infer.types import SamplingParams

pytestmark = pytest.mark.gpu


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
