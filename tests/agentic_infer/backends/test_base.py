"""Shared backend machinery through FakeLLM: stop strings, max_tokens, n, streaming, cancellation, URIs."""

import asyncio

import pytest

from agentic_infer.backends import load_llm
from agentic_infer.backends.base import StopMatcher
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Message, SamplingParams


def test_stop_matcher_finds_earliest_stop_across_pieces():
    m = StopMatcher(["</a>", "<b>"])
    assert m.feed("x </") is None
    assert m.safe_len() == 2  # "</" may start a stop string: held back
    assert m.feed("a> y <b>") == ("x ", "</a>")
    m = StopMatcher(["END"], include_stop=True)
    assert m.feed("abcEN") is None
    assert m.feed("Dzz") == ("abcEND", "END")


async def test_fake_llm_cuts_at_first_stop_and_reports_it():
    llm = FakeLLM(["think <q>cats</q> more </q>", "plain"])
    p = SamplingParams(stop=("</q>", "<end>"), include_stop=True)
    [c] = await llm.generate("prompt", p)
    assert (c.text, c.finish_reason, c.stop_reason) == ("think <q>cats</q>", "stop", "</q>")
    assert c.token_ids == list(b"think <q>cats</q>")
    [c] = await llm.generate("prompt", p.replace(include_stop=False))
    assert (c.text, c.stop_reason) == ("plain", None)


async def test_fake_llm_stop_excluded_and_max_tokens():
    llm = FakeLLM(["abc</q>def", "abcdef"])
    [c] = await llm.generate("p", SamplingParams(stop=("</q>",)))
    assert (c.text, c.stop_reason) == ("abc", "</q>")
    [c] = await llm.generate("p", SamplingParams(max_tokens=4))
    assert (c.text, c.finish_reason) == ("abcd", "length")


async def test_n_samples_logprobs_and_script_exhaustion():
    llm = FakeLLM(["a", "b", "c"])
    cs = await llm.generate("p", SamplingParams(n=2, logprobs=3))
    assert [c.text for c in cs] == ["a", "b"]
    assert len(cs[0].logprobs) == 1 and len(cs[0].logprobs[0].top) == 3
    assert cs[0].logprobs[0].logprob == cs[0].logprobs[0].top[0].logprob
    [c] = await llm.generate("p", SamplingParams())
    assert c.logprobs is None and c.token_ids == [ord("c")]
    with pytest.raises(BackendError, match="ran out of scripted responses"):
        await llm.generate("p", SamplingParams())


async def test_callable_script_and_chat_render():
    llm = FakeLLM(lambda prompt: f"len={len(prompt)}")
    [c] = await llm.generate([Message("user", "hi")], SamplingParams())
    assert llm.prompts[0] == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert c.text == f"len={len(llm.prompts[0])}"


async def test_stream_cancellation_stops_generation():
    llm = FakeLLM(["x" * 1000], token_delay_s=0.001)
    got = []
    async for d in llm.stream("p", SamplingParams(max_tokens=2000)):
        got.append(d.text)
        if len(got) == 10:
            break
    await asyncio.sleep(0.05)
    assert llm.tokens_generated <= 11  # nothing generated after the consumer left


async def test_stream_yields_one_delta_per_token_and_final_reason():
    llm = FakeLLM(["ab</q>zz"])
    deltas = [d async for d in llm.stream("p", SamplingParams(stop=("</q>",), logprobs=1))]
    assert "".join(d.text for d in deltas) == "ab"
    assert deltas[-1].finish_reason == "stop" and deltas[-1].stop_reason == "</q>"
    with pytest.raises(ConfigError, match="n=2"):
        async for _ in llm.stream("p", SamplingParams(n=2)):
            pass


@pytest.mark.parametrize(
    ("uri", "needle"),
    [
        ("nonsense", "has no scheme"),
        ("foo://x", "unknown scheme 'foo'"),
        ("openai://127.0.0.1:1/v1", r"missing \?model=NAME"),
        ("openai://127.0.0.1:1/v1?model=m&concurrency=abc", "concurrency='abc'"),
        ("openai://127.0.0.1:1/v1?model=m&bogus=1", "unknown option 'bogus'"),
        ("llamacpp:///no/such/file.gguf", "does not exist"),
        ("hf://", "missing model path"),
    ],
)
def test_bad_uris_raise_config_errors(uri, needle):
    with pytest.raises(ConfigError, match=needle):
        load_llm(uri)


async def test_fake_uri():
    llm = load_llm("fake://?reply=hello")
    [c] = await llm.generate("p", SamplingParams())
    assert c.text == "hello"


# -- one encode semantics for every tokenizer ------------------------------------------------------------

class StubLlama:
    """llama-cpp-python's `Llama.tokenize` for a vocabulary that adds BOS (id 1): one id per character."""

    def tokenize(self, data, add_bos=True, special=False):
        text = data.decode()
        ids = [1] if add_bos else []
        while text:
            if special and text.startswith("<s>"):
                ids.append(1)
                text = text[3:]
            else:
                ids.append(ord(text[0]))
                text = text[1:]
        return ids

    def token_bos(self):
        return 1


class StubHF:
    """A transformers tokenizer whose `add_special_tokens` adds BOS (1) and parses `<s>`."""

    bos_token_id = 1

    def encode(self, text, add_special_tokens=True):
        return StubLlama().tokenize(text.encode(), add_bos=add_special_tokens, special=True)


@pytest.mark.parametrize("make", ["llamacpp", "hf", "local"])
def test_add_special_means_the_same_for_every_tokenizer(make):
    from agentic_infer.backends.hf import HFTokenizer
    from agentic_infer.backends.llamacpp import LlamaCppTokenizer
    from agentic_infer.backends.tokenizer import LocalTokenizer

    tok = {"llamacpp": lambda: LlamaCppTokenizer(StubLlama()), "hf": lambda: HFTokenizer(StubHF()),
           "local": lambda: LocalTokenizer(LlamaCppTokenizer(StubLlama()), None, "stub")}[make]()
    assert tok.encode("ab") == tok.encode("ab", add_special=True) == [1, 97, 98]  # a sequence start: BOS
    assert tok.encode("ab", add_special=False) == [97, 98]  # mid-sequence: nothing added
    assert tok.encode("<s>ab", add_special=False) == [1, 97, 98]  # special-token strings are parsed
    assert tok.encode("<s>ab") == [1, 97, 98]  # never a second BOS before the one the text begins with


def test_encode_prompt_and_continuation_follow_the_flag():
    from agentic_infer.backends.base import count_prompt_tokens, encode_continuation, encode_prompt
    from agentic_infer.backends.llamacpp import LlamaCppTokenizer

    class Stub:
        tokenizer = LlamaCppTokenizer(StubLlama())

    class Plain:  # a tokenizer without the flag adds nothing and is called without it
        class tokenizer:  # noqa: N801
            @staticmethod
            def encode(text):
                return [ord(c) for c in text]

    assert encode_prompt(Stub(), "ab") == [1, 97, 98] and encode_continuation(Stub(), "ab") == [97, 98]
    assert encode_prompt(Plain(), "ab") == encode_continuation(Plain(), "ab") == [97, 98]
    assert encode_prompt(object(), "ab") is None  # no tokenizer
    assert count_prompt_tokens(Stub(), "ab") == 3 and count_prompt_tokens(Stub(), [5, 6]) == 2
    assert count_prompt_tokens(Stub(), "ab", reported=7) == 7 and count_prompt_tokens(object(), "ab") == 0


async def test_fake_llm_scripts_token_ids_exactly():
    llm = FakeLLM([[104, 105, 60, 47, 97, 62, 33]])  # "hi</a>!" as ids; the stop ends before "!"
    [c] = await llm.generate([1, 2], SamplingParams(stop=("</a>",), include_stop=True, logprobs=1))
    assert c.text == "hi</a>" and c.token_ids == [104, 105, 60, 47, 97, 62] and len(c.logprobs) == 6
    assert llm.prompt_ids == [[1, 2]] and llm.prompts == ["\x01\x02"]
