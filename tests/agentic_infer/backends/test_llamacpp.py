"""The embedded backend really generates: determinism, logprobs, stops, streaming, n, errors."""

import math

import pytest

from agentic_infer.errors import ContextLengthError
from agentic_infer.types import Message, SamplingParams

GREEDY = SamplingParams(max_tokens=24, temperature=0, logprobs=5)


@pytest.fixture(scope="module")
def prompt(embedded_llm):
    return embedded_llm.render([Message("user", "What is the capital of France?")])


async def test_greedy_is_deterministic_with_finite_logprobs(embedded_llm, prompt):
    [a] = await embedded_llm.generate(prompt, GREEDY)
    [b] = await embedded_llm.generate(prompt, GREEDY)
    assert a.text == b.text and a.token_ids == b.token_ids
    assert len(a.token_ids) == 24 or a.finish_reason == "stop"
    assert len(a.logprobs) == len(a.token_ids) > 0
    for lp in a.logprobs:
        assert math.isfinite(lp.logprob) and lp.logprob <= 0
        assert len(lp.top) == 5
        assert lp.top[0].token_id == lp.token_id  # greedy picks the argmax
        assert [t.logprob for t in lp.top] == sorted((t.logprob for t in lp.top), reverse=True)
    assert embedded_llm.tokenizer.decode(a.token_ids) == a.text
    assert a.prompt_tokens == len(embedded_llm.tokenizer.encode(prompt))


async def test_stop_strings_cut_where_they_should(embedded_llm, prompt):
    [full] = await embedded_llm.generate(prompt, GREEDY)
    word = full.text.split()[2]  # a word the greedy continuation is known to produce
    [cut] = await embedded_llm.generate(prompt, GREEDY.replace(stop=("never-said", word)))
    assert cut.finish_reason == "stop" and cut.stop_reason == word
    assert cut.text == full.text[: full.text.index(word)]
    assert len(cut.token_ids) < len(full.token_ids)  # generation really stopped there
    [kept] = await embedded_llm.generate(prompt, GREEDY.replace(stop=(word,), include_stop=True))
    assert kept.text == cut.text + word


async def test_length_finish_and_sampling_seeds(embedded_llm, prompt):
    [c] = await embedded_llm.generate(prompt, SamplingParams(max_tokens=3, temperature=0))
    assert c.finish_reason == "length" and len(c.token_ids) == 3 and c.logprobs is None
    hot = SamplingParams(max_tokens=12, temperature=1.0, n=2, seed=7)
    first = [c.text for c in await embedded_llm.generate(prompt, hot)]
    again = [c.text for c in await embedded_llm.generate(prompt, hot)]
    assert first == again  # seeded sampling is reproducible


async def test_stream_matches_generate(embedded_llm, prompt):
    # (cancelling a stream is tested where the tokens are made: test_llamacpp_cancel.py)
    [c] = await embedded_llm.generate(prompt, GREEDY)
    deltas = [d async for d in embedded_llm.stream(prompt, GREEDY)]
    assert "".join(d.text for d in deltas) == c.text
    assert [d.token.token_id for d in deltas if d.token] == c.token_ids


async def test_context_length_error(embedded_llm):
    with pytest.raises(ContextLengthError, match="n_ctx"):
        await embedded_llm.generate("word " * 5000, SamplingParams(max_tokens=4))


async def test_without_prefix_cache_calls_are_independent(prompt):
    from agentic_infer.backends import load_llm

    llm = load_llm("llamacpp://default?n_ctx=1024&prefix_cache=0")
    params = SamplingParams(max_tokens=6, temperature=0, logprobs=3)
    [a] = await llm.generate(prompt, params)
    await llm.generate(prompt + " Also", params)  # a run that shares a prefix with the next one
    [b] = await llm.generate(prompt, params)
    assert [t.logprob for t in a.logprobs] == [t.logprob for t in b.logprobs]


async def test_text_and_its_encode_prompt_ids_condition_identically(embedded_llm, prompt):
    from agentic_infer.backends.base import encode_continuation, encode_prompt

    ids = encode_prompt(embedded_llm, prompt)
    assert embedded_llm._as_prompt(prompt) == ids and embedded_llm.tokenizer.decode(ids) == prompt
    [by_text] = await embedded_llm.generate(prompt, GREEDY)
    [by_ids] = await embedded_llm.generate(ids, GREEDY)
    assert by_ids.token_ids == by_text.token_ids and by_ids.prompt_tokens == by_text.prompt_tokens == len(ids)
    # mid-sequence pieces get nothing added; special-token strings are parsed in both
    assert encode_continuation(embedded_llm, "<|im_end|>\n") == [embedded_llm.llama.token_eos(), 198]


async def test_prompt_states_resume_an_earlier_prompt_after_another(prompt, monkeypatch):
    """A, then B, then A extended: the third call resumes A's saved state and evaluates only the extension
    (counted where llama.cpp evaluates), and generates exactly what a from-scratch evaluation generates."""
    from agentic_infer.backends import load_llm

    params = SamplingParams(max_tokens=6, temperature=0, logprobs=2)
    other = "Tell me about mountains. " * 4  # shares no prefix with `prompt`
    longer = prompt + "The capital"
    scratch = load_llm("llamacpp://default?n_ctx=1024&prefix_cache=0")
    [want] = await scratch.generate(longer, params)
    [again] = await scratch.generate(prompt, params)
    for states, resumed in ((8, True), (0, False)):
        llm = load_llm(f"llamacpp://default?n_ctx=1024&prefix_states={states}")
        evaluated: list[int] = []
        real_eval = llm.llama.eval
        monkeypatch.setattr(llm.llama, "eval", lambda toks, real_eval=real_eval, seen=evaluated: (
            seen.append(len(toks)), real_eval(toks))[1])
        await llm.generate(prompt, params)
        await llm.generate(other, params)
        evaluated.clear()
        [got] = await llm.generate(longer, params)
        n_longer, n_prompt = len(llm.tokenizer.encode(longer)), len(llm.tokenizer.encode(prompt))
        if resumed:
            assert llm.states.restored == 1 and evaluated[0] <= n_longer - n_prompt + 1, evaluated
        else:
            assert llm.states.restored == 0 and evaluated[0] > n_prompt - 10, evaluated
        assert got.token_ids == want.token_ids
        assert max(abs(a.logprob - b.logprob) for a, b in zip(got.logprobs, want.logprobs)) < 0.1
        await llm.generate(other, params)
        [same] = await llm.generate(prompt, params)  # exactly a saved prompt: resumed, its last token re-evaluated
        assert same.token_ids == again.token_ids and same.token_ids


def test_asked_threads_bound_prompt_evaluation_too():
    """`n_threads=1` must hold for prompt batches as well (llama-cpp-python's default there is every core): read
    back from the llama.cpp context itself."""
    import llama_cpp

    from agentic_infer.backends import load_llm

    one = load_llm("llamacpp://default?n_threads=1&n_ctx=256")
    assert (llama_cpp.llama_n_threads(one.llama.ctx), llama_cpp.llama_n_threads_batch(one.llama.ctx)) == (1, 1)
    split = load_llm("llamacpp://default?n_threads=1&n_threads_batch=2&n_ctx=256")
    assert llama_cpp.llama_n_threads_batch(split.llama.ctx) == 2


async def test_thread_count_changes_speed_not_results(prompt):
    """What lets a resumed eval run change `n_threads` (backends.SPEED_OPTIONS): the same greedy tokens and the
    same logprobs, to the last bit, on 1 and 2 threads (prompt and generation)."""
    from agentic_infer.backends import load_llm

    outs = []
    for n in (1, 2):
        llm = load_llm(f"llamacpp://default?n_threads={n}&n_ctx=512&prefix_cache=0")
        [c] = await llm.generate(prompt, GREEDY)
        outs.append((c.token_ids, [lp.logprob for lp in c.logprobs], [[t.logprob for t in lp.top] for lp in c.logprobs]))
    assert outs[0] == outs[1]


def test_result_uri_drops_only_speed_options():
    from agentic_infer.backends import result_uri

    assert result_uri("llamacpp:///m.gguf?n_threads=1&n_ctx=512&n_threads_batch=2") == "llamacpp:///m.gguf?n_ctx=512"
    assert result_uri("openai://h:1/v1?model=x&concurrency=4&timeout=9") == "openai://h:1/v1?model=x"
    assert result_uri("hf:///p?batch=8") == "hf:///p?batch=8"
