"""The transformers backend on the real embedded model, fast enough for the default suite.

`hf_smollm2` (tests/conftest.py) loads SmolLM2-135M from a transformers directory converted once from
the embedded GGUF, so a session pays ~1 s to load it instead of ~40 s of dequantising (the `?gguf_file=`
path itself stays tested in the slow `test_hf.py`). Checked: greedy decoding is deterministic and
answers, every token carries a finite logprob and its top-k (the sampled token first under greedy),
a stop string cuts and is reported, streaming gives the same text, and abandoning a stream stops the
model: counted at the model's forward calls, not by the consumer.
"""

import functools
import math

import pytest

from agentic_infer.types import Message, SamplingParams

GREEDY = SamplingParams(max_tokens=12, temperature=0, logprobs=3)


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """One intra-op thread for this module: on 2 cores shared with other jobs, torch's default (2) makes a
    7-token call take 0.6-7.5 s; one thread takes a steady ~1 s. Restored afterwards."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def prompt(hf_smollm2):
    return hf_smollm2.render([Message("user", "What is the capital of France?")])


async def test_greedy_logprobs_stop_and_stream(hf_smollm2, prompt):
    [a] = await hf_smollm2.generate(prompt, GREEDY)
    [b] = await hf_smollm2.generate(prompt, GREEDY)
    assert a.text == b.text and "Paris" in a.text
    assert len(a.logprobs) == len(a.token_ids) > 0
    assert all(math.isfinite(t.logprob) and len(t.top) == 3 and t.top[0].token_id == t.token_id for t in a.logprobs)
    [cut] = await hf_smollm2.generate(prompt, GREEDY.replace(stop=("Paris",), include_stop=True))
    assert cut.stop_reason == "Paris" and cut.text.endswith("Paris") and a.text.startswith(cut.text)
    deltas = [d async for d in hf_smollm2.stream(prompt, GREEDY)]
    assert "".join(d.text for d in deltas) == a.text


async def test_abandoned_stream_stops_the_model(hf_smollm2, prompt, monkeypatch):
    model = hf_smollm2.model
    calls = []
    forward = model.forward

    @functools.wraps(forward)  # keeps the signature the backend inspects
    def counting_forward(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", counting_forward)
    params = SamplingParams(max_tokens=200, temperature=0)
    stream = hf_smollm2.stream("Count from one to two hundred: one, two, three,", params)
    seen = [await stream.__anext__() for _ in range(3)]
    await stream.aclose()  # returns once the worker thread has stopped
    after_close = len(calls)
    [one] = await hf_smollm2.generate("Hello", SamplingParams(max_tokens=1, temperature=0))
    assert len(seen) == 3 and one.text is not None
    # one forward pass per token: the 3 consumed plus at most the few produced before the cancel was seen
    assert 3 <= after_close <= 8, after_close
    assert len(calls) == after_close + 1  # the 1-token call: nothing of the abandoned stream ran after close
