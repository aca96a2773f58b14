"""Every dialect through the same loop: tags, document formatting, answers, native tool calls, code."""

import json

import pytest

from agentic_infer.engines.dialects import DIALECTS, get_dialect, parse_action
from agentic_infer.engines.handlers import handlers_for_tools
from agentic_infer.engines.loop import AgentLoop
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.base import tool
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever
from agentic_infer.types import Message, SamplingParams

DOCS = [Document("d1", "Blade Runner", "Blade Runner is based on a novel by Philip K. Dick."),
        Document("d2", "Philip K. Dick", "Philip K. Dick was an American science fiction writer.")]


@pytest.fixture()
def retriever():
    return InMemoryRetriever(DOCS)


async def test_search_r1_formats_docs_and_reads_answer_tag(retriever):
    llm = FakeLLM(["<think>need novel</think><search>Blade Runner novel</search>", "<answer>Philip K. Dick</answer>"])
    traj = (await SearchO1(llm, retriever, dialect="search_r1", k=1).run({"question": "Who?"})).trajectory
    obs = traj.segments[2].text
    assert obs.startswith("\n\n<information>Doc 1(Title: Blade Runner) Blade Runner is based")
    assert obs.endswith("</information>\n\n")
    assert traj.answer == "Philip K. Dick" and traj.steps[0].arguments == {"query": "Blade Runner novel"}


async def test_r1_searcher_tags(retriever):
    llm = FakeLLM(["<|begin_of_query|>Philip K. Dick<|end_of_query|>", "<answer>American</answer>"])
    traj = (await SearchO1(llm, retriever, dialect="r1_searcher", k=1).run({"question": "q"})).trajectory
    assert "<|begin_of_documents|>" in traj.segments[2].text and traj.answer == "American"


async def test_asearcher_search_then_access_whole_document(retriever):
    llm = FakeLLM(["<search>Blade Runner</search>", "<access>d2</access>", "<access>nope</access>",
                   "<answer>writer</answer>"])
    traj = (await SearchO1(llm, retriever, dialect="asearcher", k=1).run({"question": "q"})).trajectory
    assert [s.action for s in traj.steps] == ["search", "access", "access"]
    assert "American science fiction writer" in traj.segments[4].text
    assert traj.steps[2].error == "No document with id 'nope'." and traj.usage.tool_errors == 1


async def test_native_tool_calls_valid_malformed_and_unknown():
    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: first
            b: second
        """
        return a + b

    d = get_dialect("tool_calls")
    llm = FakeLLM(['<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>',
                   "<tool_call>{not json</tool_call>",
                   '<tool_call>{"name": "mul", "arguments": {}}</tool_call>',
                   '<tool_call>{"name": "add", "arguments": {"a": "x"}}</tool_call>',
                   "<answer>5</answer>"])
    loop = AgentLoop(llm, d, handlers_for_tools([add]), sampling=SamplingParams(), limit_message="limit")
    traj = await loop.run({"question": "2+3"}, [Message("user", "2+3")])
    statuses = [s.metadata["status"] for s in traj.steps]
    assert statuses == ["executed", "malformed", "unknown_tool", "executed"]
    assert traj.steps[0].observation == "5"
    assert "malformed tool call" in traj.steps[1].error
    assert traj.steps[3].error and "a" in traj.steps[3].error
    assert traj.usage.tool_errors == 3 and traj.answer == "5"


def test_every_dialect_parses_its_own_action():
    for d in DIALECTS.values():
        tag = d.actions[0]
        text = f"thinking {tag.begin}arg{tag.end}"
        parsed = parse_action(d, text, tag.end)
        assert parsed is not None and parsed.argument == "arg", d.name
        assert tag.end in d.stops


def test_tool_call_json_round_trip_in_observation():
    d = get_dialect("tool_calls")
    assert d.observation(json.dumps({"x": 1})).startswith("\n<tool_response>")
