"""lockstep, async and sequential give identical trajectories for a deterministic backend; output resumes."""

import re

import pytest

from agentic_infer.engines.driver import example_id
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever

Q, EQ, R = "<|begin_search_query|>", "<|end_search_query|>", "<|begin_search_result|>"
DOCS = [Document(f"d{i}", f"Topic {i}", f"Fact number {i} about topic {i}.") for i in range(20)]


def policy(prompt: str) -> str:
    """Deterministic: question i needs (i % 4) + 1 searches, then answers."""
    n = int(re.search(r"Question: q(\d+)", prompt).group(1))
    done = prompt.split("<|im_start|>assistant")[-1].count(R)
    return f"step {done} {Q}topic {n + done}{EQ}" if done < n % 4 + 1 else f"\\boxed{{a{n}}}"


def rid_policy(prompt: str) -> str:
    query = re.search(r"\*\*Current Search Query:\*\*\n(.*)", prompt).group(1)
    return f"**Final Information** about {query}"


def make_engine():
    return SearchO1(FakeLLM(policy), InMemoryRetriever(DOCS), rid_llm=FakeLLM(rid_policy), top_k=2)


EXAMPLES = [{"id": f"x{i}", "question": f"q{i}"} for i in range(9)]


def signature(trajs):
    return [([(s.kind, s.text) for s in t.segments], [s.arguments for s in t.steps], t.answer, t.finish_reason)
            for t in trajs]


async def test_schedulers_give_identical_trajectories():
    runs = {}
    for scheduler in ("lockstep", "async", "sequential"):
        runs[scheduler] = await make_engine().run_many(EXAMPLES, scheduler=scheduler, concurrency=4, progress=False)
    assert signature(runs["lockstep"]) == signature(runs["async"]) == signature(runs["sequential"])
    assert [t.answer for t in runs["async"]] == [f"a{i}" for i in range(9)]
    assert [len(t.steps) for t in runs["async"]] == [i % 4 + 1 for i in range(9)]


async def test_resumable_output_skips_finished_and_never_duplicates(tmp_path):
    out = tmp_path / "trajs.jsonl"
    await make_engine().run_many(EXAMPLES[:4], out=out, progress=False)
    with open(out, "a") as f:
        f.write('{"torn line')  # a crash mid-write
    engine = make_engine()
    trajs = await engine.run_many(EXAMPLES, out=out, progress=False)
    assert [t.answer for t in trajs] == [f"a{i}" for i in range(9)]
    rerun_questions = {p.split("Question: ")[-1].split("<")[0] for p in engine.loop.llm.prompts}
    assert rerun_questions == {f"q{i}" for i in range(4, 9)}
    lines = [ln for ln in out.read_text().splitlines() if ln.startswith('{"id"')]
    assert len(lines) == 9


def test_example_ids_and_bad_scheduler():
    assert example_id({"_id": 7, "question": "x"}) == "7"
    assert example_id({"question": "x"}) == example_id({"question": "x"})


async def test_bad_scheduler():
    with pytest.raises(ConfigError, match="scheduler='fast'"):
        await make_engine().run_many(EXAMPLES, scheduler="fast")
