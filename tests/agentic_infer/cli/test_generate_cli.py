"""`agentic generate` and `agentic backends` end to end, in a subprocess like a user runs them."""

import json
import subprocess
import sys

import pytest


def agentic(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentic_infer", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_generate_json_with_the_embedded_model():
    pytest.importorskip("llama_cpp")
    r = agentic("generate", "The capital of France is", "--max-tokens", "6", "--logprobs", "3", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["text"] and out["finish_reason"] in ("stop", "length")
    assert len(out["token_ids"]) == len(out["logprobs"]) <= 6
    first = out["logprobs"][0]
    assert set(first) >= {"token", "logprob", "top"} and len(first["top"]) == 3
    assert {"token", "logprob"} <= set(first["top"][0])


def test_generate_chat_plain_text_on_fake_backend():
    r = agentic("generate", "hi", "--backend", "fake://?reply=hello there", "--chat")
    assert r.returncode == 0 and r.stdout.strip() == "hello there"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["generate", "x", "--backend", "nope"], "has no scheme"),
        (["generate", "x", "--backend", "zzz://m"], "unknown scheme"),
        (["generate", "x", "--backend", "fake://", "--temperature", "-1"], "temperature=-1"),
        (["generate", "x", "--backend", "fake://", "--logprobs", "50"], "logprobs=50"),
        (["generate", "x", "--max-tokens", "many"], "--max-tokens"),
        (["generate"], "Missing argument"),
    ],
)
def test_bad_input_is_one_clear_line_exit_2(args, needle):
    r = agentic(*args)
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_backends_lists_every_scheme():
    r = agentic("backends")
    assert r.returncode == 0
    for scheme in ("llamacpp", "openai", "hf", "vllm"):
        assert scheme in r.stdout
