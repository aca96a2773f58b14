"""The transformers backend on the embedded GGUF (dequantised by transformers): real generation.

Marked slow: importing torch + transformers and dequantising the GGUF takes ~30-70 s on 2 cores.
"""

import math

import pytest

from agentic_infer.types import Message, SamplingParams

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hf_llm():
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from agentic_infer.backends import load_llm
    from agentic_infer.backends.llamacpp import default_model_path

    path = default_model_path()
    return load_llm(f"hf://{path.parent}?gguf_file={path.name}&device=cpu&dtype=float32")


async def test_hf_greedy_logprobs_stops_and_stream(hf_llm):
    prompt = hf_llm.render([Message("user", "What is the capital of France?")])
    params = SamplingParams(max_tokens=16, temperature=0, logprobs=3)
    [a] = await hf_llm.generate(prompt, params)
    [b] = await hf_llm.generate(prompt, params)
    assert a.text == b.text and "Paris" in a.text
    assert all(math.isfinite(t.logprob) and len(t.top) == 3 and t.top[0].token_id == t.token_id for t in a.logprobs)
    [cut] = await hf_llm.generate(prompt, params.replace(stop=("Paris",), include_stop=True))
    assert cut.stop_reason == "Paris" and cut.text.endswith("Paris") and len(cut.text) <= len(a.text)
    deltas = [d async for d in hf_llm.stream(prompt, params)]
    assert "".join(d.text for d in deltas) == a.text


def test_hf_encode_semantics_and_incremental_text(hf_llm, embedded_llm):
    from agentic_infer.backends.base import encode_continuation, encode_prompt
    from agentic_infer.backends.hf import _Detokenizer

    prompt = hf_llm.render([Message("user", "hi")])
    assert encode_prompt(hf_llm, prompt) == encode_prompt(embedded_llm, prompt)  # one vocabulary, one BOS policy
    text = "naïve café 🚀 done"
    ids = encode_continuation(hf_llm, text)
    assert ids == encode_continuation(embedded_llm, text) and hf_llm.tokenizer.decode(ids) == text
    # streamed text: the emoji spans several byte tokens and comes out whole, never as U+FFFD pieces
    detok = _Detokenizer(hf_llm.tokenizer)
    pieces = [detok.push(t) for t in ids]
    assert "".join(pieces) == text and not any("\ufffd" in p for p in pieces)
