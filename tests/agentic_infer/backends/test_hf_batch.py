"""Lockstep batching in the hf backend (`batch=N`), on the real embedded model: concurrent generations decoded
together give the text each gives alone (greedy), in one batch, with rows that finish early leaving the batch;
the batched backend over the same model object as `HFLLM.from_model`."""

import asyncio

import pytest

from agentic_infer.types import Message, SamplingParams

GREEDY = SamplingParams(max_tokens=10, temperature=0, logprobs=0)
QUESTIONS = ("What is the capital of France?", "Name a colour.",
             "Write the numbers from one to five, separated by commas, and then say which is the largest.")


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


async def test_a_batch_decodes_what_each_prompt_decodes_alone(hf_smollm2):
    from agentic_infer.backends.hf import HFLLM

    prompts = [hf_smollm2.render([Message("user", q)]) for q in QUESTIONS]  # three different lengths
    alone = [(await hf_smollm2.generate(p, GREEDY))[0] for p in prompts]
    batched = HFLLM.from_model(hf_smollm2.model, hf_smollm2._hf_tok, batch=4)
    batched._batcher.window_s = 1.0  # a loaded test machine must not split the batch
    together = [c for [c] in await asyncio.gather(*(batched.generate(p, GREEDY) for p in prompts))]
    assert [c.text for c in together] == [c.text for c in alone]
    assert [c.token_ids for c in together] == [c.token_ids for c in alone]
    for a, b in zip(alone, together):  # log-probs agree to float noise (padding changes kernel shapes)
        assert max(abs(x.logprob - y.logprob) for x, y in zip(a.logprobs, b.logprobs)) < 1e-3
    assert batched._batcher.batches == [3]  # one forward per token for all three


async def test_rows_that_stop_early_leave_the_batch(hf_smollm2):
    from agentic_infer.backends.hf import HFLLM

    prompts = [hf_smollm2.render([Message("user", q)]) for q in QUESTIONS[:2]]
    short, long = GREEDY.replace(max_tokens=2), GREEDY.replace(max_tokens=8)
    alone = (await hf_smollm2.generate(prompts[1], long))[0]
    batched = HFLLM.from_model(hf_smollm2.model, hf_smollm2._hf_tok, batch=2)
    batched._batcher.window_s = 1.0
    [a], [b] = await asyncio.gather(batched.generate(prompts[0], short), batched.generate(prompts[1], long))
    assert len(a.token_ids) == 2 and a.finish_reason == "length"
    assert b.token_ids == alone.token_ids  # the survivor's cache rows were kept in place


def test_batch_must_be_a_positive_int(hf_smollm2):
    from agentic_infer.backends.hf import HFLLM
    from agentic_infer.errors import ConfigError

    with pytest.raises(ConfigError, match="batch=0"):
        HFLLM.from_model(hf_smollm2.model, hf_smollm2._hf_tok, batch=0)


async def test_a_next_turn_reuses_the_previous_turns_keys_and_values(hf_smollm2):
    """Token-in/token-out: turn 2's prompt is turn 1's ids + the generated ids + new ones; only the new part is
    prefilled, and the text is what an uncached run gives."""
    import torch

    from agentic_infer.backends.hf import HFLLM

    first = hf_smollm2.tokenizer.encode(hf_smollm2.render([Message("user", QUESTIONS[0])]))
    batched = HFLLM.from_model(hf_smollm2.model, hf_smollm2._hf_tok, batch=2)
    [a] = await batched.generate(first, GREEDY)
    follow = hf_smollm2.tokenizer.encode("<|im_end|>\n<|im_start|>user\nAnd of Italy?<|im_end|>\n"
                                         "<|im_start|>assistant\n", add_special=False)
    second = first + list(a.token_ids) + follow
    [b] = await batched.generate(second, GREEDY)
    assert batched._batcher.store.reused == len(first) + len(a.token_ids)  # all but the new turn's ids
    [alone] = await hf_smollm2.generate(second, GREEDY)
    assert b.token_ids == alone.token_ids
    with torch.no_grad():  # an in-place weight change (an optimizer step) drops every stored row
        p = next(hf_smollm2.model.parameters())
        p.mul_(1.0)
    [c] = await batched.generate(second, GREEDY)
    assert batched._batcher.store.reused == len(first) + len(a.token_ids) and c.token_ids == alone.token_ids
