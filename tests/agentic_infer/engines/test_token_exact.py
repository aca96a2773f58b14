"""Token-in, token-out with a real BPE tokenizer: SmolLM2's, through llama.cpp in process.

In every test the ids the backend really evaluated are recorded (llama.cpp's worker is wrapped), and
`traj.token_ids()` must equal the ids it conditioned on for the last generation plus what it generated;
every earlier generation's conditioning is a prefix of it; the decoded ids are the trajectory's text.
Cases: (a) a stop string that ends inside a token, (b) an observation that starts with a space or a
newline, (c) several turns, (d) teacher forcing: logprobs recomputed over `traj.token_ids()` in one
evaluation equal the recorded sampling logprobs: with transformers in fp32 (the `hf_smollm2` fixture:
the same GGUF, dequantised) to 1e-4, and with llama.cpp itself within a measured tolerance.

The model is steered by a worked pattern in the forced assistant prefix (it continues ```python blocks),
and the stop string of (a) is derived from the model's own greedy continuation, so the cut falls
inside a token whatever the exact text is. The prefix cache is off: the first turn then repeats the
probe exactly, and the teacher-forcing comparison has one documented tolerance.
"""

import math

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from agentic_infer.backends.base import encode_continuation, encode_prompt  # noqa: E402
from agentic_infer.engines.dialects import SEARCH_R1, TIR, ActionTag, Dialect  # noqa: E402
from agentic_infer.engines.loop import AgentLoop, LoopLimits, Outcome  # noqa: E402
from agentic_infer.testing import FakeLLM  # noqa: E402
from agentic_infer.types import Message, SamplingParams  # noqa: E402

QUESTION = [Message("user", "Compute 2+3 and then 4*5 with python, one block each.")]
PATTERN = "```python\nprint(2 + 3)\n```\n```output\n5\n```\n```python\nprint(4 * 5)\n"
GREEDY = SamplingParams(max_tokens=16, temperature=0, logprobs=1)
# Teacher forcing with llama.cpp (the fast variant; the fp32 transformers one is marked slow). With the
# prefix cache off, each turn's prompt is evaluated in one batch, exactly as the teacher-forcing pass
# evaluates those positions, so the first sampled token of every turn must match to float precision.
# Later tokens were sampled one at a time (batch of 1) against a KV cache written in batch: Q4_1 weights
# with Q8_1-quantised activations then differ from the one-batch pass by rounding only. Measured on this
# run (28 tokens): median 0.0024, max 0.057 nats. A wrong id or a shifted position costs whole nats.
LLAMACPP_FIRST_TOL = 1e-4
LLAMACPP_MEDIAN_TOL = 0.01
LLAMACPP_MAX_TOL = 0.15
# transformers in fp32: KV-cached decoding vs one forward pass differ by float32 rounding only (measured
# max 1.2e-5 over ~30 tokens); the "recomputed in fp32 equal the sampling logprobs".
FP32_TOL = 1e-4


class Reply:
    """A handler answering every call with the same content."""

    def __init__(self, content: str):
        self.content = content

    async def __call__(self, calls):
        return [Outcome(self.content) for _ in calls]


def recording(backend, monkeypatch):
    """`backend` (llama.cpp or transformers in process) recording in `backend.seen` the ids each generation
    really evaluated: its worker `_run(ids, ...)` is wrapped."""
    seen: list[list[int]] = []
    run = backend._run

    def record(ids, *args):
        seen.append(list(ids))
        return run(ids, *args)

    monkeypatch.setattr(backend, "_run", record)
    monkeypatch.setattr(backend, "seen", seen, raising=False)
    return backend


@pytest.fixture()
def llm(embedded_llm, monkeypatch):
    """The embedded model, its prefix cache off, recording what it conditions on (`llm.seen`)."""
    monkeypatch.setattr(embedded_llm, "prefix_cache", False)
    return recording(embedded_llm, monkeypatch)


def agent(llm, dialect, content, *, max_turns=2):
    return AgentLoop(llm, dialect, {"python": Reply(content)}, sampling=GREEDY,
                     limits=LoopLimits(max_turns=max_turns, max_tokens_per_turn=GREEDY.max_tokens),
                     limit_message="No more code.", repeat_message=None, engine="token-exact")


def assert_token_exact(llm, traj):
    """The trajectory's ids are what the backend conditioned on and generated, turn by turn."""
    assert traj.token_exact
    ids = traj.token_ids()
    model = [i for i, s in enumerate(traj.segments) if s.kind == "model"]
    assert len(llm.seen) == len(model) >= 1
    for conditioning, i in zip(llm.seen, model):
        start, end = traj.token_span(i)
        assert start == len(conditioning) and ids[:start] == conditioning  # generated from exactly these ids
    start, end = traj.token_span(model[-1])
    assert llm.seen[-1] + traj.segments[model[-1]].token_ids == ids[:end]
    for seg in traj.segments[model[-1] + 1:]:  # after the last generation: only spliced text (a last observation)
        assert seg.kind == "observation" and seg.token_ids == encode_continuation(llm, seg.text)
    for i in model:  # a model segment's text is its ids' text; the whole text is the ids' text
        assert traj.segments[i].text == llm.tokenizer.decode(traj.segments[i].token_ids)
    assert llm.tokenizer.decode(ids) == traj.text


def stop_inside_a_token(llm, generated: list[int]) -> tuple[str, str]:
    """(stop string, the token it ends inside): 3 characters ending one character into a multi-character
    token, occurring nowhere earlier in the generated text."""
    pieces = [llm.tokenizer.decode([t]) for t in generated]
    for k in range(2, len(pieces)):
        before = "".join(pieces[:k])
        if len(pieces[k]) < 2 or len(before) < 2:
            continue
        stop = before[-2:] + pieces[k][0]
        if stop.strip() and (before + pieces[k]).find(stop) == len(before) - 2:
            return stop, pieces[k]
    pytest.fail(f"no multi-character token to cut inside in {pieces!r}")


class Merging:
    """A handler whose observation starts with characters that BPE merges with the model's last token, so
    the trajectory's ids are not the canonical tokenization of its text: a loop that re-sent text would
    condition the next turn on other ids than the ones recorded."""

    def __init__(self, llm):
        self.llm = llm

    async def __call__(self, calls):
        return [Outcome(self.start(c.episode.ids[-1]) + "\nOutput: 5\n") for c in calls]

    def start(self, last: int) -> str:
        tail = self.llm.tokenizer.decode([last])
        for s in (tail[-1:] * 2, "s", "ing", "ed", "##", "==", "**"):
            if encode_continuation(self.llm, tail + s) != [last] + encode_continuation(self.llm, s):
                return s
        pytest.fail(f"nothing merges with {tail!r}")


async def test_stop_string_cut_inside_a_token(llm):
    prefix = "```python\nprint("
    prompt = encode_prompt(llm, llm.render(QUESTION)) + encode_continuation(llm, prefix)
    [probe] = await llm.generate(prompt, GREEDY.replace(logprobs=None))
    stop, token = stop_inside_a_token(llm, probe.token_ids)
    llm.seen.clear()
    cut = Dialect(name="cut", actions=(ActionTag("```python", stop, "python"),), result_begin="", result_end="",
                  answer="boxed", result_template="{content}")
    loop = AgentLoop(llm, cut, {"python": Merging(llm)}, sampling=GREEDY,
                     limits=LoopLimits(max_turns=2, max_tokens_per_turn=GREEDY.max_tokens),
                     limit_message="No more code.", engine="token-exact")
    traj = await loop.run({}, QUESTION, assistant_prefix=prefix)
    first = traj.segments[2]
    assert first.kind == "model" and first.metadata["stop_reason"] == stop
    # the backend's text ended at the stop string; the segment holds the whole last token, as its ids do
    assert first.text.endswith(token) and not first.text.endswith(stop)
    [step] = traj.steps[:1]
    assert step.segment == 2 and step.metadata["status"] == "executed"  # parsed despite the characters after the tag
    assert step.arguments["query"] == (prefix + first.text).split(stop)[0].split("```python")[-1].strip()
    assert [s.kind for s in traj.segments[3:5]] == ["observation", "model"]
    assert_token_exact(llm, traj)
    # re-encoding the text would not give these ids: the old text-in loop's drift
    assert encode_prompt(llm, traj.text) != traj.token_ids()


async def test_scripted_non_canonical_ids_and_a_cut_token_are_kept(embedded_llm):
    """Deterministic, no model: FakeLLM scripted in SmolLM2's vocabulary. The first turn spells "France" as
    "F" + "rance" (BPE would write one token) and ends on ">." while the stop string is "</search>"."""
    tok = embedded_llm.tokenizer
    enc = lambda text: tok.encode(text, add_special=False)  # noqa: E731
    france = enc("F") + enc("rance")
    assert france != enc("France") and len(enc(">.")) == 1
    turn1 = enc("I will search. <search>capital of ") + france + enc("</search") + enc(">.")
    turn2 = enc("<answer>") + france + enc("</answer>")
    llm = FakeLLM([turn1, turn2], tokenizer=tok)
    loop = AgentLoop(llm, SEARCH_R1, {"search": Reply("Paris is the capital of France.")}, sampling=GREEDY,
                     limits=LoopLimits(max_turns=3), limit_message="No more searches.")
    traj = await loop.run({}, QUESTION)
    model = [s for s in traj.segments if s.kind == "model"]
    assert [s.token_ids for s in model] == [turn1, turn2]  # exactly what was generated, not re-encoded
    assert model[0].metadata["stop_reason"] == "</search>" and model[0].text.endswith("</search>.")
    assert traj.steps[0].arguments == {"query": "capital of France"} and traj.steps[0].segment == 1
    ids = traj.token_ids()
    assert llm.prompt_ids[1] == ids[: len(llm.prompt_ids[1])] and llm.prompt_ids[1] + turn2 == ids
    assert traj.token_exact and traj.answer == "France" and tok.decode(ids) == traj.text
    assert encode_prompt(llm, traj.text) != ids  # what a text-in loop would have sent instead


@pytest.mark.parametrize("lead", [" ", "\n"])
async def test_observation_starting_with_whitespace(llm, lead):
    bare = Dialect(name="bare", actions=TIR.actions, result_begin="", result_end="", answer="boxed",
                   result_template="{content}", message_template="{content}")
    traj = await agent(llm, bare, f"{lead}Output: 5\n").run({}, QUESTION, assistant_prefix=PATTERN)
    kinds = [s.kind for s in traj.segments]
    assert kinds[:5] == ["prompt", "prompt", "model", "observation", "model"]
    obs = traj.segments[3]
    assert obs.text.startswith(lead) and obs.token_ids == encode_continuation(llm, obs.text)
    assert_token_exact(llm, traj)


def log_softmax_at(logits: np.ndarray, token: int) -> float:
    x = logits.astype(np.float64)
    m = x.max()
    return float(x[token] - m - math.log(np.exp(x - m).sum()))


def sampled_and_forced(traj, forced) -> list[tuple[float, float]]:
    """(recorded sampling logprob, teacher-forced logprob) for every model token; `forced(position)`."""
    pairs = []
    for i, seg in enumerate(traj.segments):
        if seg.kind != "model":
            continue
        start, _ = traj.token_span(i)
        pairs += [(lp.logprob, forced(start + j)) for j, lp in enumerate(seg.logprobs)]
    return pairs


async def test_several_turns_and_teacher_forcing_llamacpp(llm):
    traj = await agent(llm, TIR, "20", max_turns=3).run({}, QUESTION, assistant_prefix=PATTERN)
    assert sum(s.kind == "model" for s in traj.segments) == 3 and traj.finish_reason in ("max_turns", "answer")
    assert all(s.segment is not None and traj.segments[s.segment].kind == "model" for s in traj.steps)
    assert_token_exact(llm, traj)
    ids = traj.token_ids()
    from llama_cpp import Llama

    # one evaluation of the whole sequence, from scratch, in a context that keeps every position's logits
    llama = Llama(model_path=str(llm.model_path), n_ctx=2048, logits_all=True, verbose=False)
    llama.eval(ids)
    logits = np.array(llama.scores[: len(ids)])
    pairs = sampled_and_forced(traj, lambda p: log_softmax_at(logits[p - 1], ids[p]))
    assert len(pairs) >= 10
    diffs = [abs(a - b) for a, b in pairs]
    firsts = [d for d, first in zip(diffs, first_of_turn(traj)) if first]
    assert len(firsts) == 3 and max(firsts) < LLAMACPP_FIRST_TOL, firsts
    assert np.median(diffs) < LLAMACPP_MEDIAN_TOL and max(diffs) < LLAMACPP_MAX_TOL, diffs


def first_of_turn(traj) -> list[bool]:
    return [j == 0 for seg in traj.segments if seg.kind == "model" for j in range(len(seg.logprobs))]


async def test_teacher_forcing_fp32_transformers(hf_smollm2, monkeypatch):
    """Generated by transformers in fp32 (the same GGUF, dequantised), recomputed in one forward pass."""
    import torch

    hf = recording(hf_smollm2, monkeypatch)
    traj = await agent(hf, TIR, "20", max_turns=2).run({}, QUESTION, assistant_prefix=PATTERN)
    assert_token_exact(hf, traj)
    ids = traj.token_ids()
    with torch.inference_mode():
        logp = torch.log_softmax(hf.model(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    pairs = sampled_and_forced(traj, lambda p: float(logp[p - 1, ids[p]]))
    assert len(pairs) >= 10
    worst = max(abs(a - b) for a, b in pairs)
    assert worst < FP32_TOL, f"max |sampled - forced| = {worst:.1e}"
