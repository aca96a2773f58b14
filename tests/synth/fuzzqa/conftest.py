"""A tiny world for fuzzqa tests: a real in-memory BM25 index over five documents and a scripted LLM (`World`)
that answers every prompt of the chain by its marker; each test changes one behaviour to hit one gate."""

from __future__ import annotations

import json
import re

import pytest

from agentic_infer.testing import FakeLLM
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.bm25 import BM25Index

DOCS = [
    Document("curie", "Marie Curie", "Marie Curie was a physicist and chemist. She was born in Warsaw in 1867. "
             "She studied radioactivity in Paris."),
    Document("nobel1903", "1903 Nobel Prize in Physics", "The 1903 Nobel Prize in Physics was shared by Marie "
             "Curie, Pierre Curie and Henri Becquerel. It honoured their work on radiation."),
    Document("warsaw", "Warsaw", "Warsaw is the capital of Poland. It lies on the Vistula river."),
    Document("vistula", "Vistula", "The Vistula is the longest river in Poland. It flows into the Baltic Sea."),
    Document("becquerel", "Henri Becquerel", "Henri Becquerel was a French physicist. He was born in Paris in 1852."),
]

BASE_Q = "In which city was Marie Curie born?"
INJECT_Q = "In which city was the woman who shared the 1903 Nobel Prize in Physics born?"
FUZZ_Q = "In which city was the woman who shared a physics Nobel Prize of the early 1900s born?"


class World:
    """Scripted replies by prompt marker; attributes change one behaviour (see each test)."""

    def __init__(self):
        self.base = f"Question: {BASE_Q}\nAnswer: Warsaw\nFact: She was born in Warsaw in 1867."
        self.inject = (f"Question: {INJECT_Q}\nFact: The 1903 Nobel Prize in Physics was shared by Marie Curie, "
                       "Pierre Curie and Henri Becquerel.\nRelation: shared the prize")
        self.fuzz = f"Detail: 1903\nDescription: the early 1900s\nQuestion: {FUZZ_Q}"
        self.phrase = "Question: Which city is the birthplace of the scientist in these facts?"
        self.read = "\\boxed{Warsaw}"
        self.closed_book = {BASE_Q: "\\boxed{Warsaw}"}  # question -> reply; default wrong
        self.tools = "I found it. \\boxed{Warsaw}"
        self.alternative = "\\boxed{none}"
        self.calls: list[str] = []  # the kind of every prompt, in order

    def __call__(self, prompt: str) -> str:
        kind = self.kind(prompt)
        self.calls.append(kind)
        if kind == "closed_book":
            q = re.search(r"<\|im_start\|>user\n(.*?)\nGive only the final answer", prompt, re.S).group(1)
            return self.closed_book.get(q.strip(), "\\boxed{Paris}")
        if kind == "judge":
            gold = re.search(r"Gold answer: (.*)\n", prompt).group(1)
            pred = re.search(r"Predicted answer: (.*)\n", prompt).group(1)
            return json.dumps({"reason": "compared", "equivalent": gold.strip() == pred.strip()})
        return getattr(self, kind)

    @staticmethod
    def kind(prompt: str) -> str:
        markers = [("Decide whether the predicted answer", "judge"), ("Write one factual question", "base"),
                   ("no longer names", "inject"), ("Make this question harder", "fuzz"),
                   ("Write one question that needs all", "phrase"), ("Answer the question using only", "read"),
                   ("is there a different answer", "alternative"), ("<|begin_search_query|>", "tools"),
                   ("Give only the final answer", "closed_book")]
        return next(k for m, k in markers if m in prompt)


@pytest.fixture
def world():
    return World()


@pytest.fixture
def llm(world):
    return FakeLLM(world)


@pytest.fixture(scope="session")
def index():
    return BM25Index.from_documents(DOCS)


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": d.id, "title": d.title, "text": d.text}) + "\n" for d in DOCS))
    return path
