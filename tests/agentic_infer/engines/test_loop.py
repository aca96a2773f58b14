"""The agent loop itself, with FakeLLM: ids kept and generated from, limits and their messages, malformed
tool calls, finish reasons, the step → segment link, the text fallback, checkpoints.

The real-tokenizer (BPE) counterparts live in test_token_exact.py.
"""

import json

import pytest

from agentic_infer.engines.dialects import SEARCH_R1, TOOL_CALLS
from agentic_infer.engines.loop import AgentLoop, Episode, LoopLimits, Outcome
from agentic_infer.errors import ContextLengthError
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Message, SamplingParams

S, ES = "<search>", "</search>"
MESSAGES = [Message("user", "Who wrote Hamlet?")]
LIMIT, REPEAT = "Search limit reached.", "Already searched."


class Echo:
    """A search handler whose observation names the query (and records the calls it got)."""

    def __init__(self):
        self.calls = []

    async def __call__(self, calls):
        self.calls.append([c.arguments for c in calls])
        return [Outcome(f"results for {c.arguments['query']}") for c in calls]


def make_loop(llm, *, dialect=SEARCH_R1, handlers=None, **limits):
    handlers = handlers if handlers is not None else {"search": Echo()}
    return AgentLoop(llm, dialect, handlers, sampling=SamplingParams(max_tokens=64, temperature=0, logprobs=1),
                     limits=LoopLimits(**limits), limit_message=LIMIT, repeat_message=REPEAT, engine="test")


async def test_ids_are_the_conditioning_sequence_and_generation_runs_from_them():
    llm = FakeLLM([f"Let me look. {S}hamlet author{ES}", f"Again {S}shakespeare{ES}", "<answer>Shakespeare</answer>"])
    traj = await make_loop(llm).run({"question": "q"}, MESSAGES)
    assert traj.finish_reason == "answer" and traj.answer == "Shakespeare" and traj.token_exact
    assert [s.kind for s in traj.segments] == ["prompt", "model", "observation", "model", "observation", "model"]
    # every turn was generated from ids, and each prompt is exactly the trajectory's ids so far
    assert all(p is not None for p in llm.prompt_ids)
    ids = traj.token_ids()
    for prompt in llm.prompt_ids:
        assert ids[:len(prompt)] == prompt
    last = traj.segments[-1]
    assert llm.prompt_ids[-1] + last.token_ids == ids
    assert len(last.logprobs) == len(last.token_ids)
    # text and ids agree segment by segment, and the prompt is counted as the ids sent
    assert all(llm.tokenizer.decode(s.token_ids) == s.text for s in traj.segments)
    assert traj.usage.prompt_tokens == sum(len(p) for p in llm.prompt_ids)
    assert traj.usage.completion_tokens == sum(len(s.token_ids) for s in traj.segments if s.kind == "model")


async def test_each_step_links_the_model_segment_that_wrote_it():
    llm = FakeLLM([f"{S}a{ES}", f"{S}b{ES}", "<answer>x</answer>"])
    traj = await make_loop(llm).run({"question": "q"}, MESSAGES)
    assert [s.segment for s in traj.steps] == [1, 3]
    for step in traj.steps:
        seg = traj.segments[step.segment]
        assert seg.kind == "model" and seg.text.endswith(f"{S}{step.arguments['query']}{ES}")
        start, end = traj.token_span(step.segment)
        assert traj.token_ids()[start:end] == seg.token_ids


async def test_action_limit_and_repeat_messages():
    handler = Echo()
    llm = FakeLLM([f"{S}a{ES}", f"{S}a{ES}", f"{S}b{ES}", f"{S}c{ES}", "<answer>done</answer>"])
    traj = await make_loop(llm, handlers={"search": handler}, max_actions=2).run({"question": "q"}, MESSAGES)
    assert [s.metadata["status"] for s in traj.steps] == ["executed", "repeat", "executed", "limit"]
    assert [s.segment for s in traj.steps] == [1, 3, 5, 7]
    assert handler.calls == [[{"query": "a"}], [{"query": "b"}]]  # repeats and over-limit calls never run
    obs = [s.text for s in traj.segments if s.kind == "observation"]
    assert obs[1] == SEARCH_R1.message(REPEAT) and obs[3] == SEARCH_R1.message(LIMIT)
    assert traj.usage.tool_calls == 2 and traj.metadata["actions"] == 2
    assert traj.finish_reason == "answer" and traj.answer == "done" and traj.token_exact


async def test_malformed_and_unknown_tool_calls_are_observations():
    calls = ['<tool_call>{"name": "search", "arguments": {"query": "x"}</tool_call>',  # broken JSON
             '<tool_call>["search"]</tool_call>',
             '<tool_call>{"name": "search", "arguments": "{bad"}</tool_call>',
             '<tool_call>{"name": "calc", "arguments": {}}</tool_call>',
             '<tool_call>{"name": "search", "arguments": {"query": "y"}}</tool_call>',
             "<answer>y</answer>"]
    handler = Echo()
    traj = await make_loop(FakeLLM(calls), dialect=TOOL_CALLS, handlers={"search": handler}).run({}, MESSAGES)
    status = [s.metadata["status"] for s in traj.steps]
    assert status == ["malformed", "malformed", "malformed", "unknown_tool", "executed"]
    assert [s.segment for s in traj.steps] == [1, 3, 5, 7, 9]
    assert "malformed tool call" in traj.steps[0].error and "at char" in traj.steps[0].error
    assert "Unknown tool 'calc'" in traj.steps[3].observation
    assert handler.calls == [[{"query": "y"}]]
    assert traj.usage.tool_errors == 4 and traj.usage.tool_calls == 1
    assert traj.finish_reason == "answer" and traj.answer == "y"


@pytest.mark.parametrize("script, limits, reason", [
    (["<answer>a</answer>"], {}, "answer"),
    (["no action and no answer"], {}, "answer"),
    (["x" * 80], {"max_tokens_per_turn": 64}, "length"),  # the turn hit its token cap
    ([f"{S}a{ES}", f"{S}b{ES}", f"{S}c{ES}"], {"max_turns": 2}, "max_turns"),
    ([f"{S}a{ES}", "y" * 30], {"max_total_tokens": 20}, "max_tokens"),
    ([f"{S}a{ES}"], {}, "error"),  # the script runs out: a BackendError
])
async def test_finish_reasons(script, limits, reason):
    traj = await make_loop(FakeLLM(script), **limits).run({"question": "q"}, MESSAGES)
    assert traj.finish_reason == reason
    assert traj.metadata["unfinished"] == (reason in ("max_turns", "max_tokens", "error"))
    if reason == "error":
        assert "ran out of scripted responses" in traj.metadata["error"]
    if reason == "max_tokens":
        assert sum(len(s.token_ids) for s in traj.segments if s.kind == "model") == 20


async def test_context_length_ends_the_episode():
    class Short(FakeLLM):
        async def generate(self, prompt, params):
            if len(prompt) > 60:
                raise ContextLengthError(f"prompt of {len(prompt)} tokens does not fit")
            return await super().generate(prompt, params)

    traj = await make_loop(Short([f"{S}a{ES}"])).run({}, [Message("user", "q")])
    assert traj.finish_reason == "context_length" and "does not fit" in traj.metadata["error"]


async def test_forced_prefix_is_prompt_text_and_part_of_the_action():
    llm = FakeLLM([f"ok{ES}", "<answer>z</answer>"])
    loop = make_loop(llm)
    traj = await loop.run({}, MESSAGES, assistant_prefix=f"I will search. {S}")
    assert [s.kind for s in traj.segments] == ["prompt", "prompt", "model", "observation", "model"]
    assert traj.segments[1].metadata["forced"] and traj.loss_mask().count(1) == len(f"ok{ES}") + len("<answer>z</answer>")
    assert traj.steps[0].arguments == {"query": "ok"} and traj.steps[0].segment == 2
    assert llm.prompt_ids[0] == traj.segments[0].token_ids + traj.segments[1].token_ids


class NoIds(FakeLLM):
    """A backend that gives text but no token ids (an OpenAI-compatible server that returns none)."""

    async def generate(self, prompt, params):
        comps = await super().generate(prompt, params)
        for c in comps:
            c.token_ids = None
            c.logprobs = None
        return comps


async def test_a_backend_without_ids_falls_back_to_text_and_marks_the_trajectory_inexact():
    llm = NoIds([f"{S}a{ES}", "<answer>b</answer>"])
    traj = await make_loop(llm).run({}, MESSAGES)
    assert not traj.token_exact and traj.answer == "b"
    assert llm.prompt_ids[0] is not None and llm.prompt_ids[1] is None  # the first turn from ids, then text
    assert llm.prompts[1] == traj.text[: -len("<answer>b</answer>")]
    assert all(s.token_ids is not None for s in traj.segments)  # encoded from text
    with pytest.raises(Exception, match="token_exact=False"):
        traj.trl_rollout()


async def test_server_logprobs_that_do_not_align_with_encoded_ids_are_dropped_not_fatal():
    class ServerTokens(FakeLLM):  # no ids; logprobs over the server's own (different) tokenization
        async def generate(self, prompt, params):
            comps = await super().generate(prompt, params)
            for c in comps:
                c.token_ids, c.logprobs = None, (c.logprobs or [])[:-1]
            return comps

    traj = await make_loop(ServerTokens([f"{S}a{ES}", "<answer>b</answer>"])).run({}, MESSAGES)
    model = [s for s in traj.segments if s.kind == "model"]
    assert traj.answer == "b" and all(s.logprobs is None and "logprobs_dropped" in s.metadata for s in model)


async def test_without_a_tokenizer_the_loop_runs_on_text():
    class NoTokenizer(FakeLLM):
        @property
        def tokenizer(self):
            raise AttributeError("no tokenizer")

    llm = NoTokenizer([f"{S}a{ES}", "<answer>b</answer>"])
    traj = await make_loop(llm).run({}, MESSAGES)
    assert llm.prompt_ids == [None, None] and not traj.token_exact and traj.answer == "b"
    assert traj.usage.prompt_tokens == 0  # nothing to count with (FakeLLM reports no count for text)


async def test_checkpoint_mid_episode_resumes_with_the_same_ids():
    script = [f"{S}a{ES}", f"{S}b{ES}", "<answer>c</answer>"]
    whole = await make_loop(FakeLLM(script)).run({"question": "q"}, MESSAGES)

    llm = FakeLLM(script)
    loop = make_loop(llm)
    ep = loop.start({"question": "q"}, MESSAGES)
    await loop.step([ep])
    state = json.loads(json.dumps(ep.to_state()))  # through JSON, as a checkpointer stores it
    assert state["ids"] == ep.ids == ep.trajectory.token_ids()
    resumed = Episode.from_state(state)
    while not resumed.done:
        await loop.step([resumed])
    traj = resumed.trajectory
    assert traj.token_ids() == whole.token_ids() and traj.token_exact
    assert [(s.kind, s.text) for s in traj.segments] == [(s.kind, s.text) for s in whole.segments]
    assert [s.segment for s in traj.steps] == [s.segment for s in whole.steps]
    assert llm.prompt_ids[-1] == resumed.ids[: len(llm.prompt_ids[-1])]


async def test_a_langgraph_run_keeps_the_ids_between_turns():
    pytest.importorskip("langgraph")
    from agentic_infer.integrations.langgraph import search_o1_graph, trajectory_from_state
    from agentic_infer.tools.retrieval.base import Document
    from agentic_infer.tools.retrieval.memory import InMemoryRetriever

    q, eq = "<|begin_search_query|>", "<|end_search_query|>"
    llm = FakeLLM([f"{q}x{eq}", "\\boxed{y}"])
    graph = search_o1_graph(llm, InMemoryRetriever([Document("d", "t", "text x")]), k=1, rid=False)
    traj = trajectory_from_state(await graph.ainvoke({"example": {"question": "q"}}))
    assert traj.token_exact and all(p is not None for p in llm.prompt_ids)
    assert llm.prompt_ids[1] + traj.segments[-1].token_ids == traj.token_ids()
