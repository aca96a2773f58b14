"""Fixtures for the trainer tests: SmolLM2's tokenizer (local, from the embedded GGUF, cached once), a tiny
random Llama built from a config on it, saved as an HF folder, and token-exact trajectories with observations."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_infer.types import Rollout, TokenLogprob, Trajectory


@pytest.fixture(autouse=True)
def _one_thread():
    """Each test starts on one torch thread (2 shared cores: steadier); a `train_sft` / `train_grpo` run inside
    sets its own `threads` setting, undone after the test."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def smol_tokenizer_dir() -> Path:
    """SmolLM2's tokenizer as a local folder (read once from the embedded GGUF: ~7 s, then cached)."""
    pytest.importorskip("transformers")
    pytest.importorskip("trl")
    from agentic_infer.assets import cache_dir

    target = cache_dir() / "test-models" / "smollm2-tokenizer"
    if not (target / "tokenizer.json").exists():
        from transformers import AutoTokenizer

        from agentic_infer.backends.llamacpp import default_model_path

        gguf = default_model_path()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
        tok.save_pretrained(target)
    return target


@pytest.fixture(scope="session")
def tokenizer(smol_tokenizer_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smol_tokenizer_dir), local_files_only=True)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def tiny_model(tokenizer, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                      eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                      initializer_range=0.2)
    return LlamaForCausalLM(cfg)


@pytest.fixture()
def tiny_dir(tmp_path, tokenizer) -> Path:
    """A tiny random Llama (SmolLM2 vocabulary) saved as an HF folder: `hf://<dir>`."""
    model = tiny_model(tokenizer)
    d = tmp_path / "tiny"
    model.save_pretrained(d)
    tokenizer.save_pretrained(d)
    return d


def make_trajectory(tokenizer, question: str, parts: list[tuple[str, str]], *, exact: bool = True,
                    finish: str = "answer") -> Trajectory:
    """A token-exact trajectory: the chat-templated question as the prompt, then (kind, text) segments."""
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                           add_generation_prompt=True)
    t = Trajectory(token_exact=exact, engine="test")
    t.add("prompt", prompt, token_ids=tokenizer.encode(prompt, add_special_tokens=False))
    for kind, text in parts:
        ids = tokenizer.encode(text, add_special_tokens=False)
        lps = [TokenLogprob(i, "", -0.5) for i in ids] if kind == "model" else None
        t.add(kind, text, token_ids=ids, logprobs=lps)
    t.finish(finish)
    return t


@pytest.fixture()
def traj_factory(tokenizer):
    return lambda *a, **k: make_trajectory(tokenizer, *a, **k)


class ObservationEngine:
    """An engine doing what Search-o1 / TIR do to the token stream, deterministically: the policy writes,
    a fixed observation is spliced in (not trained), the policy writes again; token-in/token-out."""

    name = "observe"

    def __init__(self, llm, seed=None, *, observation: str = " <result>Paris is in France.</result> ",
                 max_tokens: int = 6):
        self.llm, self.seed, self.observation, self.max_tokens = llm, seed, observation, max_tokens

    async def run(self, example):
        from agentic_infer.types import Message, SamplingParams

        llm = self.llm
        params = SamplingParams(max_tokens=self.max_tokens, temperature=1.0, logprobs=0, seed=self.seed)
        prompt = llm.render([Message("user", example["question"])])
        t = Trajectory(token_exact=True, engine=self.name, example=dict(example))
        ids = llm.tokenizer.encode(prompt)
        t.add("prompt", prompt, token_ids=list(ids))
        for turn in range(2):
            [c] = await llm.generate(list(ids), params)
            t.add("model", c.text, token_ids=list(c.token_ids), logprobs=list(c.logprobs))
            ids += c.token_ids
            if turn == 0:
                obs = llm.tokenizer.encode(self.observation, add_special=False)
                t.add("observation", self.observation, token_ids=obs)
                ids += obs
        t.answer = "Paris" if "Paris" in t.completion_text else "unknown"
        t.finish("answer")
        return Rollout(example_id=str(example.get("id")), trajectories=[t], answer=t.answer, engine=self.name)
