"""The one runner: schedulers really schedule (evidence at the backend and the retriever), identical
rollouts for a deterministic backend, resumable output that never duplicates, errors recorded and retried."""

import asyncio
import json
import re

import pytest

from agentic_infer.engines.base import example_id
from agentic_infer.engines.search_o1 import SearchO1
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.runner import run_many
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever
from agentic_infer.types import Rollout

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


class InFlight(FakeLLM):
    """FakeLLM that records how many generations were running at once (the backend's own view)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.now = self.peak = 0

    async def generate(self, prompt, params):
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.005)
            return await super().generate(prompt, params)
        finally:
            self.now -= 1


class Batches(InMemoryRetriever):
    """A retriever that records the size of every search batch it receives."""

    def __init__(self, docs):
        super().__init__(docs)
        self.batches: list[int] = []

    def search(self, queries, k=10):
        self.batches.append(len(queries))
        return super().search(queries, k)


def make_engine(llm=None, retriever=None):
    return SearchO1(llm or FakeLLM(policy), retriever or InMemoryRetriever(DOCS), rid_llm=FakeLLM(rid_policy), k=2)


EXAMPLES = [{"id": f"x{i}", "question": f"q{i}"} for i in range(9)]


def signature(rollouts):
    return [([(s.kind, s.text) for s in r.trajectory.segments], [s.arguments for s in r.trajectory.steps],
             r.answer, r.trajectory.finish_reason) for r in rollouts]


async def test_schedulers_give_identical_rollouts_and_really_differ_in_scheduling():
    runs, peaks, batches = {}, {}, {}
    for scheduler in ("lockstep", "async", "sequential"):
        llm, retriever = InFlight(policy), Batches(DOCS)
        runs[scheduler] = await run_many(make_engine(llm, retriever), EXAMPLES, scheduler=scheduler, concurrency=4,
                                         progress=False)
        peaks[scheduler], batches[scheduler] = llm.peak, max(retriever.batches)
    assert signature(runs["lockstep"]) == signature(runs["async"]) == signature(runs["sequential"])
    assert [r.answer for r in runs["async"]] == [f"a{i}" for i in range(9)]
    assert [len(r.trajectory.steps) for r in runs["async"]] == [i % 4 + 1 for i in range(9)]
    assert peaks == {"lockstep": 4, "async": 4, "sequential": 1}  # generations in flight at the backend
    assert batches["lockstep"] == 4 and batches["async"] == batches["sequential"] == 1  # lockstep batches searches


async def test_resumable_output_skips_finished_and_never_duplicates(tmp_path):
    out = tmp_path / "rollouts.jsonl"
    calls = {"n": 0}

    def dying(prompt):
        calls["n"] += 1
        if calls["n"] > 8:
            raise RuntimeError("killed")  # the process dies mid-run (not an engine error: nothing is caught)
        return policy(prompt)

    with pytest.raises(RuntimeError, match="killed"):
        await run_many(make_engine(FakeLLM(dying)), EXAMPLES, out=out, progress=False, concurrency=2)
    first = [json.loads(x)["example_id"] for x in out.read_text().splitlines()]
    assert 0 < len(first) < 9
    with open(out, "a") as f:
        f.write('{"example_id": "x8", "torn')  # a crash mid-write
    engine = make_engine()
    rollouts = await run_many(engine, EXAMPLES, out=out, progress=False)
    assert [r.answer for r in rollouts] == [f"a{i}" for i in range(9)]
    rerun = {p.split("Question: ")[-1].split("<")[0] for p in engine.loop.llm.prompts}
    assert rerun == {f"q{i}" for i in range(9)} - {f"q{e[1:]}" for e in first}
    lines = [json.loads(x) for x in out.read_text().splitlines()]  # every line parses: the torn one is gone
    assert sorted(r["example_id"] for r in lines) == sorted(e["id"] for e in EXAMPLES)
    assert all(Rollout.from_dict(r).trajectory.group_id == r["example_id"] for r in lines)


async def test_engine_errors_are_recorded_and_retried(tmp_path):
    out = tmp_path / "rollouts.jsonl"

    def flaky(prompt):
        if "Question: q3" in prompt:
            raise BackendError("server down")
        return policy(prompt)

    rollouts = await run_many(make_engine(FakeLLM(flaky)), EXAMPLES[:5], out=out, progress=False)
    assert rollouts[3].trajectory.finish_reason == "error"  # the loop turns backend failures into a finish
    errors = out.with_suffix(".jsonl.errors.jsonl")
    assert not errors.exists()

    class Broken:
        name = "broken"

        async def run(self, example):
            raise ConfigError(f"bad example {example['id']}")

    rollouts = await run_many(Broken(), EXAMPLES[:2], out=tmp_path / "b.jsonl", progress=False)
    assert rollouts == [None, None]
    assert [json.loads(x)["id"] for x in (tmp_path / "b.jsonl.errors.jsonl").read_text().splitlines()] == ["x0", "x1"]
    with pytest.raises(ConfigError, match="bad example x0"):
        await run_many(Broken(), EXAMPLES[:1], progress=False)  # no output file: errors raise


def test_example_ids():
    assert example_id({"_id": 7, "question": "x"}) == "7"
    assert example_id({"question": "x"}) == example_id({"question": "x"}) != example_id({"question": "y"})


async def test_bad_scheduler_and_concurrency():
    with pytest.raises(ConfigError, match="scheduler='fast'"):
        await run_many(make_engine(), EXAMPLES, scheduler="fast")
    with pytest.raises(ConfigError, match="concurrency=0"):
        await run_many(make_engine(), EXAMPLES, concurrency=0)

    class Plain:
        name = "plain"

        async def run(self, example):
            raise AssertionError

    with pytest.raises(ConfigError, match="lockstep"):
        await run_many(Plain(), EXAMPLES, scheduler="lockstep")
