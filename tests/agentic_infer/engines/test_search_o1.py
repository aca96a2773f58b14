"""Search-o1 loop semantics with FakeLLM and a real in-memory retriever over real-looking documents."""

import pytest

from agentic_infer.engines.dialects import SEARCH_O1, extract_answer, parse_action
from agentic_infer.engines.rid import NOTHING_FOUND, condense_reasoning, extract_final_information
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever

Q, EQ = "<|begin_search_query|>", "<|end_search_query|>"
R, ER = "<|begin_search_result|>", "<|end_search_result|>"

DOCS = [
    Document("d1", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, France."),
    Document("d2", "Paris", "Paris is the capital and most populous city of France."),
    Document("d3", "Berlin", "Berlin is the capital of Germany."),
]


@pytest.fixture()
def retriever():
    return InMemoryRetriever(DOCS)


def engine(llm, retriever, rid_llm=None, **kw):
    return SearchO1(llm, retriever, rid_llm=rid_llm, k=2, **kw)


async def test_search_rid_insertion_and_answer(retriever):
    llm = FakeLLM([f"I should look it up. {Q}Eiffel Tower city{EQ}", "So it is Paris. \\boxed{Paris}"])
    rid = FakeLLM(["The documents say... **Final Information** The Eiffel Tower is in Paris."])
    traj = (await engine(llm, retriever, rid).run({"question": "Where is the Eiffel Tower?"})).trajectory
    assert traj.answer == "Paris" and traj.finish_reason == "answer"
    kinds = [s.kind for s in traj.segments]
    assert kinds == ["prompt", "model", "observation", "model"]
    obs = traj.segments[2].text
    assert obs == f"\n\n{R}The Eiffel Tower is in Paris.{ER}\n\n"
    # the continuation prompt is the same assistant turn: prompt + model text + observation
    assert llm.prompts[1] == traj.segments[0].text + traj.segments[1].text + obs
    assert traj.segments[1].text.endswith(EQ)  # stop string kept
    [step] = traj.steps
    assert step.action == "search" and step.arguments == {"query": "Eiffel Tower city"}
    assert step.metadata["status"] == "executed" and step.metadata["doc_ids"][0] == "d1"
    assert traj.usage.tool_calls == 1 and traj.usage.llm_calls == 2 + 1  # two turns + one RiD call
    # every prompt read is counted, Reason-in-Documents' included (FakeLLM: one token per byte)
    assert traj.usage.prompt_tokens == sum(len(p.encode()) for p in llm.prompts + rid.prompts)
    # RiD saw the query, the documents and the reasoning so far
    assert "Eiffel Tower city" in rid.prompts[0] and "wrought-iron" in rid.prompts[0]
    assert "I should look it up." in rid.prompts[0]


async def test_observation_tokens_are_never_trainable(retriever):
    llm = FakeLLM([f"{Q}Paris{EQ}", "\\boxed{France}"])
    traj = (await engine(llm, retriever, FakeLLM(["**Final Information** Paris is in France."])).run({"question": "q"})).trajectory
    mask = traj.loss_mask()
    ids = traj.token_ids()
    assert len(mask) == len(ids)
    pos = 0
    for seg in traj.segments:
        n = len(seg.token_ids)
        assert mask[pos:pos + n] == [int(seg.kind == "model")] * n
        pos += n
    assert sum(mask) == sum(len(s.token_ids) for s in traj.segments if s.kind == "model")
    assert traj.segments[1].logprobs is not None  # model segments keep the backend's logprobs


async def test_limit_message_after_max_searches(retriever):
    llm = FakeLLM([f"{Q}Paris{EQ}", f"{Q}Berlin{EQ}", "\\boxed{x}"])
    rid = FakeLLM(["**Final Information** fact"])
    traj = (await engine(llm, retriever, rid, max_searches=1).run({"question": "q"})).trajectory
    assert [s.metadata["status"] for s in traj.steps] == ["executed", "limit"]
    assert traj.segments[4].text == f"\n{R}\nThe maximum search limit is exceeded. You are not allowed to search.\n{ER}\n"
    assert traj.usage.tool_calls == 1 and traj.answer == "x"


async def test_repeated_query_message_and_no_rid_for_it(retriever):
    llm = FakeLLM([f"{Q}Paris{EQ}", f"again {Q} Paris {EQ}", "\\boxed{France}"])
    rid = FakeLLM(["**Final Information** fact"])
    traj = (await engine(llm, retriever, rid).run({"question": "q"})).trajectory
    assert [s.metadata["status"] for s in traj.steps] == ["executed", "repeat"]
    assert "You have searched this query. Please refer to previous results." in traj.segments[4].text
    assert len(rid.prompts) == 1


async def test_abandoned_begin_tag_uses_the_last_query(retriever):
    llm = FakeLLM([f"{Q}draft query {Q}Berlin capital{EQ}", "\\boxed{Berlin}"])
    traj = (await engine(llm, retriever, FakeLLM(["**Final Information** Berlin."])).run({"question": "q"})).trajectory
    assert traj.steps[0].arguments["query"] == "Berlin capital"


@pytest.mark.parametrize("text", [f"I think {Q}unclosed query", f"{Q}{EQ}", f"{Q}   {EQ}", "just garbage \x00 ]]"])
async def test_unclosed_empty_or_garbage_finishes(retriever, text):
    llm = FakeLLM([text])
    traj = (await engine(llm, retriever, FakeLLM([])).run({"question": "q"})).trajectory
    assert traj.finish_reason == "answer" and not traj.steps and traj.answer is None
    assert traj.usage.tool_calls == 0


async def test_turn_cap_finishes_unfinished_and_scores_anyway(retriever):
    llm = FakeLLM(lambda p: f"maybe \\boxed{{guess}} {Q}query {p.count(R)}{EQ}")
    rid = FakeLLM(lambda p: "**Final Information** nothing new")
    traj = (await engine(llm, retriever, rid, max_turns=3, max_searches=10).run({"question": "q"})).trajectory
    assert traj.finish_reason == "max_turns" and traj.metadata["unfinished"]
    assert traj.answer == "guess" and traj.usage.llm_calls == 3 + 3


async def test_token_budget_and_backend_error_are_finish_reasons(retriever):
    llm = FakeLLM(lambda p: "x" * 50 + f"{Q}q{p.count(R)}{EQ}")
    traj = (await engine(llm, retriever, FakeLLM(lambda p: "**Final Information** y"),
                        max_total_tokens=100).run({"question": "q"})).trajectory
    assert traj.finish_reason == "max_tokens"
    assert sum(len(s.token_ids) for s in traj.segments if s.kind == "model") == 100
    traj = (await engine(FakeLLM([]), retriever, FakeLLM([])).run({"question": "q"})).trajectory
    assert traj.finish_reason == "error" and "ran out" in traj.metadata["error"]


async def test_failing_retriever_is_an_observation(retriever):
    class Broken:
        def search(self, queries, k):
            raise RuntimeError("index offline")

    llm = FakeLLM([f"{Q}x{EQ}", "\\boxed{y}"])
    traj = (await SearchO1(llm, Broken(), rid=False).run({"question": "q"})).trajectory
    assert traj.usage.tool_errors == 1 and "index offline" in traj.segments[2].text
    assert traj.answer == "y"


def test_rid_helpers():
    assert extract_final_information("blah **Final Information**\n\nParis is in France.") == "Paris is in France."
    assert extract_final_information("no marker here") == NOTHING_FOUND
    steps = "\n".join(f"line {i}" for i in range(10)) + f"\n{Q}x{EQ}"
    out = condense_reasoning("a\n\nb\nc\nd\ne\nf\ng\nh " + Q + "q\ni\nj\nk\nl", [Q])
    parts = out.split("\n\n")
    assert parts[0] == "Step 1: a" and "..." in parts and any(Q in p for p in parts)
    assert parts[-4:] == ["Step 9: i", "Step 10: j", "Step 11: k", "Step 12: l"]
    assert condense_reasoning("a\nb", [Q]) == "Step 1: a\n\nStep 2: b"
    # 11 steps: the first, "..." for steps 2-7, the last 4 (the search query is among them, kept once)
    assert condense_reasoning(steps, [Q]) == "\n\n".join([
        "Step 1: line 0", "...", "Step 8: line 7", "Step 9: line 8", "Step 10: line 9", f"Step 11: {Q}x{EQ}"])


def test_parse_and_boxed():
    assert parse_action(SEARCH_O1, f"{Q}a{EQ}", EQ).argument == "a"
    assert parse_action(SEARCH_O1, f"{Q}a{EQ} trailing", None) is None
    assert extract_answer(SEARCH_O1, r"so \boxed{\frac{1}{2}} and \boxed{\text{Paris}}") == "Paris"
    assert extract_answer(SEARCH_O1, r"\boxed{a{b}c}") == "a{b}c"
    assert extract_answer(SEARCH_O1, "none") is None


def test_bad_config():
    with pytest.raises(ConfigError, match="no search action"):
        SearchO1(FakeLLM([]), InMemoryRetriever(DOCS), dialect="tir")
    with pytest.raises(ConfigError, match="unknown"):
        SearchO1(FakeLLM([]), InMemoryRetriever(DOCS), dialect="nope")
    with pytest.raises(ConfigError, match="question"):
        SearchO1(FakeLLM([]), InMemoryRetriever(DOCS)).messages({})


async def test_raw_passages_are_cut_to_passage_chars_at_a_word_boundary(retriever):
    from agentic_infer.engines.handlers import cut_text

    assert cut_text("short", 10) == "short" and cut_text("alpha beta gamma", 12) == "alpha beta ..."
    script = [f"{Q}Eiffel Tower{EQ}", "\\boxed{Paris}"]
    cut = (await SearchO1(FakeLLM(list(script)), retriever, rid=False, k=1, passage_chars=30)
           .run({"question": "q"})).trajectory
    whole = (await SearchO1(FakeLLM(list(script)), retriever, rid=False, k=1).run({"question": "q"})).trajectory
    assert "The Eiffel Tower is a ..." in cut.segments[2].text and "Paris, France" not in cut.segments[2].text
    assert DOCS[0].text in whole.segments[2].text
    with pytest.raises(ConfigError, match="passage_chars=-1"):
        SearchO1(FakeLLM([]), retriever, rid=False, passage_chars=-1)
