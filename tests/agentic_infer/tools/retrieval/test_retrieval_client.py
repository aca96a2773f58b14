"""RemoteRetriever against real uvicorn servers on free loopback ports (real HTTP).

Our own server (over a real BM25 `InMemoryRetriever`, and over a bm25s index built from the
shared HotpotQA corpus when present), plus two small foreign servers: one that answers like
Search-R1's BM25 path (documents without ids) and one that fails transiently (retries).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="the retrieval server needs the `serve` extra")
uvicorn = pytest.importorskip("uvicorn", reason="the retrieval server needs the `serve` extra")

from fastapi import FastAPI  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402

from agentic_infer.errors import ConfigError  # noqa: E402
from agentic_infer.tools.retrieval import Retriever  # noqa: E402
from agentic_infer.tools.retrieval.client import RemoteRetriever, RetrievalServerError  # noqa: E402
from agentic_infer.tools.retrieval.memory import InMemoryRetriever  # noqa: E402
from agentic_infer.tools.retrieval.server import serve_in_thread  # noqa: E402
from tests.sample_docs import SAMPLE_DOCS  # noqa: E402

SHARED = Path(__file__).resolve().parents[4] / ".." / "shared" / "data"
HOTPOT_CORPUS = SHARED / "multihop" / "hotpotqa_train_100_corpus.json"

# the shared passages, with a newline in one text and metadata on another (both must survive the wire)
DOCS = [*SAMPLE_DOCS[:3], replace(SAMPLE_DOCS[3], text=SAMPLE_DOCS[3].text + "\nIt won the Hugo Award."),
        replace(SAMPLE_DOCS[4], metadata={"born": 1920})]


@pytest.fixture(scope="module")
def local() -> InMemoryRetriever:
    return InMemoryRetriever(DOCS)


@pytest.fixture(scope="module")
def server(local: InMemoryRetriever):
    with serve_in_thread(local) as running:
        yield running


@contextmanager
def run_app(app: FastAPI) -> Iterator[str]:
    """Any ASGI app under uvicorn in a thread on a free loopback port; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "test server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        srv.should_exit = True
        thread.join(10)
        sock.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- our server


def test_search_matches_the_local_retriever(server, local: InMemoryRetriever) -> None:
    queries = ["capital of Australia", "American science fiction author", "", "qwzx"]
    with RemoteRetriever(server.url) as remote:
        assert isinstance(remote, Retriever)
        got = remote.search(queries, 3)
    want = local.search(queries, 3)
    assert [[h.id for h in hs] for hs in got] == [[h.id for h in hs] for hs in want]
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            assert (a.title, a.text) == (b.title, b.text)  # round-trips through "Title"\ntext
            assert a.score == pytest.approx(b.score)
    assert got[2] == [] and got[3] == []


async def test_asearch_and_aget(server, local: InMemoryRetriever) -> None:
    remote = RemoteRetriever(server.url)
    try:
        results = await asyncio.gather(
            *(remote.asearch([q], 2) for q in ("Ottawa river", "Opera House", "Hugo Award"))
        )
        assert [r[0][0].id for r in results] == ["ottawa", "sydney", "dune"]
        assert await remote.aget("herbert") == DOCS[4]
        assert (await remote.aget("herbert")).metadata == {"born": 1920}
        assert await remote.aget("Atlantis") is None
    finally:
        await remote.aclose()


def test_asearch_works_across_event_loops(server) -> None:
    remote = RemoteRetriever(server.url)
    for _ in range(2):  # a second asyncio.run gets a fresh AsyncClient
        assert asyncio.run(remote.asearch(["Canberra"], 1))[0][0].id == "canberra"


def test_get_returns_whole_documents(server) -> None:
    remote = RemoteRetriever(server.url)
    assert remote.get("dune") == DOCS[3]  # text with a newline survives
    assert remote.get("nope") is None


def test_long_query_lists_are_split(server, local: InMemoryRetriever) -> None:
    remote = RemoteRetriever(server.url, max_queries_per_request=2)
    before = remote.health()["batching"]["requests"]
    queries = ["Ottawa", "Sydney", "Canberra", "Dune", "Herbert"]
    assert [h[0].id for h in remote.search(queries, 1)] == ["ottawa", "sydney", "canberra", "dune", "herbert"]
    assert remote.health()["batching"]["requests"] - before == 3


def test_server_4xx_raises_with_url_and_server_message_without_retrying(server) -> None:
    remote = RemoteRetriever(f"{server.url}/retrieve", retries=3, backoff_s=0.0)  # /retrieve suffix accepted
    before = remote.health()["batching"]["requests"]
    with pytest.raises(RetrievalServerError) as info:
        remote.search(["a"], 101)
    err = info.value
    assert err.status_code == 422 and not err.retryable
    assert f"{server.url}/retrieve" in str(err) and "topk must be in [1, 100], got 101" in str(err)
    assert remote.health()["batching"]["requests"] == before  # rejected before batching, not retried


def test_unreachable_server_names_the_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    remote = RemoteRetriever(url, retries=1, backoff_s=0.0, timeout_s=2)
    with pytest.raises(
        RetrievalServerError, match=rf"{url}/retrieve could not be reached \(attempt 2 of 2"
    ) as info:
        remote.search(["x"], 1)
    assert info.value.retryable and "agentic serve retriever" in str(info.value)


async def test_unreachable_server_async() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(RetrievalServerError, match="could not be reached"):
        await RemoteRetriever(url, retries=0).asearch(["x"], 1)


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="url"):
        RemoteRetriever("")
    with pytest.raises(ConfigError, match="http://HOST:PORT"):
        RemoteRetriever("ftp://127.0.0.1:1")
    remote = RemoteRetriever("127.0.0.1:9")  # scheme added
    assert remote.url == "http://127.0.0.1:9"
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        remote.search(["x"], 0)
    with pytest.raises(ConfigError, match="list of strings"):
        remote.search("x", 1)  # type: ignore[arg-type]
    assert remote.search([], 3) == []  # nothing to ask: no request made


# --------------------------------------------------------------------------- foreign servers


def test_reads_a_search_r1_bm25_style_server() -> None:
    """Search-R1's BM25 path sends documents as {title, text, contents} without an id."""
    app = FastAPI()

    @app.post("/retrieve")
    async def retrieve(body: dict) -> dict:
        doc = {
            "title": "Ottawa",
            "text": "Ottawa is the capital of Canada.",
            "contents": '"Ottawa"\nOttawa is the capital of Canada.',
        }
        if body.get("return_scores"):
            return {"result": [[{"document": doc, "score": 7.5}] for _ in body["queries"]]}
        return {"result": [[doc] for _ in body["queries"]]}

    with run_app(app) as url:
        remote = RemoteRetriever(url)
        [[hit]] = remote.search(["capital of Canada"], 1)
        assert (hit.title, hit.text, hit.score) == ("Ottawa", "Ottawa is the capital of Canada.", 7.5)
        with pytest.raises(RetrievalServerError, match="no /access endpoint"):
            remote.get("x")
        assert [h.title for hs in remote.search(["a", "b"], 1) for h in hs] == ["Ottawa", "Ottawa"]


def test_retries_transient_503_then_succeeds() -> None:
    app = FastAPI()
    calls = {"n": 0}

    @app.post("/retrieve")
    async def retrieve(body: dict):
        calls["n"] += 1
        if calls["n"] <= 2:
            return JSONResponse({"detail": "busy"}, 503, headers={"Retry-After": "0"})
        return {
            "result": [
                [{"document": {"id": "1", "contents": '"T"\nx'}, "score": 1.0}] for _ in body["queries"]
            ]
        }

    with run_app(app) as url:
        hits = RemoteRetriever(url, retries=2, backoff_s=0.01).search(["q"], 1)
        assert hits[0][0].id == "1" and calls["n"] == 3
        calls["n"] = 0
        with pytest.raises(RetrievalServerError, match="HTTP 503: busy") as info:
            RemoteRetriever(url, retries=1, backoff_s=0.01).search(["q"], 1)
        assert info.value.retryable and calls["n"] == 2


def test_malformed_responses_raise_clear_errors() -> None:
    app = FastAPI()

    @app.post("/retrieve")
    async def retrieve(body: dict) -> dict:
        if body["queries"] == ["wrong key"]:
            return {"results": []}
        if body["queries"] == ["too few"]:
            return {"result": []}
        return {"result": [[{"document": {"id": "1"}, "score": 1.0}]]}

    with run_app(app) as url:
        remote = RemoteRetriever(url)
        with pytest.raises(RetrievalServerError, match=r"expected \{\"result\""):
            remote.search(["wrong key"], 1)
        with pytest.raises(RetrievalServerError, match="returned 0 result lists for 1 queries"):
            remote.search(["too few"], 1)
        with pytest.raises(RetrievalServerError, match="malformed result: document has neither contents"):
            remote.search(["no contents"], 1)


# --------------------------------------------------------------------------- a real bm25s index


@pytest.mark.skipif(not HOTPOT_CORPUS.is_file(), reason=f"shared data not found at {HOTPOT_CORPUS}")
def test_bm25_index_from_shared_hotpotqa_corpus_served_over_http(tmp_path: Path) -> None:
    pytest.importorskip("bm25s", reason="BM25 indexes need the `search` extra")
    from agentic_infer.tools.retrieval.index import build_index

    index = build_index(HOTPOT_CORPUS, out=tmp_path / "idx", kind="bm25")
    queries = ["collectible dice game created by Lester Smith", "Monte Carlo method microcanonical ensemble"]
    with serve_in_thread(index) as running:
        remote = RemoteRetriever(running.url)
        got = remote.search(queries, 3)
        want = index.search(queries, 3)
        assert [[h.id for h in hs] for hs in got] == [[h.id for h in hs] for hs in want]
        assert got[0][0].title == "Demon Dice"
        assert remote.get("Demon Dice").title == "Demon Dice"
        health = remote.health()
        assert health["index_size"] == len(index) == 994
        r = httpx.post(f"{running.url}/access", json={"url": "https://en.wikipedia.org/wiki/Demon_Dice"})
        assert r.status_code == 200 and r.json()["document"]["title"] == "Demon Dice"
