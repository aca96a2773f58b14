"""The retrieval server: Search-R1 response shapes, /access, /health, bad input, batching.

In-process over ASGI (FastAPI TestClient / httpx.ASGITransport) with a real BM25
(`InMemoryRetriever`) over real sentences; the real-HTTP tests are in test_retrieval_client.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest

pytest.importorskip("fastapi", reason="the retrieval server needs the `serve` extra")

from fastapi.testclient import TestClient  # noqa: E402

from agentic_infer.errors import ConfigError  # noqa: E402
from agentic_infer.tools.retrieval import Document, Hit  # noqa: E402
from agentic_infer.tools.retrieval.memory import InMemoryRetriever  # noqa: E402
from agentic_infer.tools.retrieval.server import ServerLimits, create_app  # noqa: E402
from tests.sample_docs import SAMPLE_DOCS  # noqa: E402

DOCS = [
    *SAMPLE_DOCS,
    Document(
        "heroes",
        '"Heroes" (song)',
        '"Heroes" is a 1977 song by David Bowie, written with Brian Eno.',
        {"url": "https://en.wikipedia.org/wiki/Heroes_(song)"},
    ),
]


class CountingRetriever:
    """Wraps a retriever: records every search() call, optionally slow or failing."""

    def __init__(self, inner: InMemoryRetriever, *, delay_s: float = 0.0, fail_on: str | None = None) -> None:
        self.inner = inner
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.calls: list[tuple[list[str], int]] = []
        self._lock = threading.Lock()

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        with self._lock:
            self.calls.append((list(queries), k))
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_on is not None and any(self.fail_on in q for q in queries):
            raise RuntimeError(f"index exploded on {self.fail_on!r}")
        return self.inner.search(queries, k)


@pytest.fixture(scope="module")
def retriever() -> InMemoryRetriever:
    return InMemoryRetriever(DOCS)


@pytest.fixture
def client(retriever: InMemoryRetriever):
    with TestClient(create_app(retriever, max_queries=8, max_topk=10, max_query_chars=200)) as c:
        yield c


# --------------------------------------------------------------------------- response shapes


def test_retrieve_with_scores_has_search_r1_shape_exactly(
    client: TestClient, retriever: InMemoryRetriever
) -> None:
    queries = ["capital of Australia", "American author of the science fiction novel Dune"]
    r = client.post("/retrieve", json={"queries": queries, "topk": 3, "return_scores": True})
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["result"]
    assert len(body["result"]) == 2
    direct = retriever.search(queries, 3)
    for items, hits in zip(body["result"], direct, strict=True):
        assert len(items) == len(hits) >= 2
        for item, hit in zip(items, hits, strict=True):
            assert set(item) == {"document", "score"}
            assert set(item["document"]) == {"id", "contents"}
            assert item["document"]["id"] == hit.id
            assert item["document"]["contents"] == Document(hit.id, hit.title, hit.text).contents
            assert item["score"] == pytest.approx(hit.score)
        scores = [i["score"] for i in items]
        assert scores == sorted(scores, reverse=True)
    assert body["result"][0][0]["document"]["contents"].startswith('"Canberra"\nCanberra is the capital')


def test_contents_keeps_quotes_in_titles(client: TestClient) -> None:
    item = client.post(
        "/retrieve", json={"queries": ["Bowie Eno song"], "topk": 1, "return_scores": True}
    ).json()
    assert item["result"][0][0]["document"]["contents"] == DOCS[5].contents


@pytest.mark.parametrize("extra", [{"return_scores": False}, {}])
def test_retrieve_without_scores_returns_bare_documents(client: TestClient, extra: dict) -> None:
    r = client.post("/retrieve", json={"queries": ["capital of Canada"], "topk": 2, **extra})
    assert r.status_code == 200
    items = r.json()["result"][0]
    assert len(items) == 2
    assert all(set(i) == {"id", "contents"} for i in items)
    assert items[0] == {"id": "ottawa", "contents": DOCS[2].contents}


@pytest.mark.parametrize("topk", [None, "absent"])
def test_missing_topk_uses_the_default(client: TestClient, topk: object) -> None:
    body: dict = {"queries": ["Australia city capital Canada Dune"]}
    if topk != "absent":
        body["topk"] = topk
    assert len(client.post("/retrieve", json=body).json()["result"][0]) == ServerLimits.default_topk


def test_blank_and_unknown_queries_get_empty_lists(client: TestClient) -> None:
    r = client.post(
        "/retrieve", json={"queries": ["", "   ", "qwxz", "Ottawa"], "topk": 1, "return_scores": True}
    )
    assert r.status_code == 200
    result = r.json()["result"]
    assert result[:3] == [[], [], []]
    assert result[3][0]["document"]["id"] == "ottawa"


def test_unknown_fields_are_ignored(client: TestClient) -> None:
    r = client.post("/retrieve", json={"queries": ["Ottawa"], "topk": 1, "return_scores": True, "foo": 1})
    assert r.status_code == 200


# --------------------------------------------------------------------------- /access, /health


def test_access_by_doc_id(client: TestClient) -> None:
    r = client.post("/access", json={"doc_id": "heroes"})
    assert r.status_code == 200
    assert r.json() == {
        "document": {
            "id": "heroes",
            "title": DOCS[5].title,
            "text": DOCS[5].text,
            "contents": DOCS[5].contents,
            "metadata": {"url": "https://en.wikipedia.org/wiki/Heroes_(song)"},
        }
    }


@pytest.mark.parametrize(
    "url, doc_id",
    [
        ("dune", "dune"),  # an id
        ("Frank Herbert", "herbert"),  # a title
        ("https://en.wikipedia.org/wiki/Frank_Herbert", "herbert"),  # a Wikipedia URL -> title
        ("https://en.wikipedia.org/w/index.php?title=Sydney", "sydney"),  # ?title= form -> id
        ("https://en.wikipedia.org/wiki/%22Heroes%22_(song)", "heroes"),  # percent-encoded title
    ],
)
def test_access_by_url_tries_id_then_title(client: TestClient, url: str, doc_id: str) -> None:
    r = client.post("/access", json={"url": url})
    assert r.status_code == 200, r.text
    assert r.json()["document"]["id"] == doc_id


def test_access_batch_form_of_asearcher(client: TestClient) -> None:
    r = client.post("/access", json={"urls": ["ottawa", "https://example.org/nothing"]})
    assert r.status_code == 200
    result = r.json()["result"]
    assert result[0]["contents"] == DOCS[2].contents and result[1] is None


def test_access_unknown_is_404_naming_the_id(client: TestClient) -> None:
    r = client.post("/access", json={"doc_id": "Atlantis"})
    assert r.status_code == 404
    assert r.json()["field"] == "doc_id" and "'Atlantis'" in r.json()["detail"]


def test_access_without_a_document_store_is_501() -> None:
    class SearchOnly:
        def search(self, queries: list[str], k: int) -> list[list[Hit]]:
            return [[] for _ in queries]

    with TestClient(create_app(SearchOnly())) as c:
        r = c.post("/access", json={"doc_id": "x"})
        assert r.status_code == 501 and "DocumentStore" in r.json()["detail"]
        assert c.get("/health").json()["index_size"] is None


def test_health_reports_index_size_and_counters(client: TestClient) -> None:
    client.post("/retrieve", json={"queries": ["Ottawa", "Sydney"], "topk": 1})
    h = client.get("/health").json()
    assert h["status"] == "ok" and h["index_size"] == len(DOCS) and h["documents"] is True
    assert h["retriever"] == "InMemoryRetriever"
    assert h["batching"]["requests"] >= 1 and h["batching"]["queries"] >= 2
    assert h["limits"]["max_topk"] == 10


# --------------------------------------------------------------------------- bad input -> 4xx

LONG = "x" * 201

BAD_RETRIEVE = [
    # (body as JSON, or raw bytes), content type, status, field named in the message
    (b"{not json", "application/json", 400, "body"),
    (b'{"queries": ["a"]}', "text/plain", 415, "body"),
    (b"", "application/json", 422, "body"),
    ([1, 2], None, 422, "body"),
    ({}, None, 422, "queries"),
    ({"queries": "capital"}, None, 422, "queries"),
    ({"queries": None}, None, 422, "queries"),
    ({"queries": ["ok", 3]}, None, 422, "queries[1]"),
    ({"queries": []}, None, 422, "queries"),
    ({"queries": ["q"] * 9}, None, 422, "queries"),
    ({"queries": ["ok", LONG]}, None, 422, "queries[1]"),
    ({"queries": ["a"], "topk": 0}, None, 422, "topk"),
    ({"queries": ["a"], "topk": -3}, None, 422, "topk"),
    ({"queries": ["a"], "topk": 11}, None, 422, "topk"),
    ({"queries": ["a"], "topk": "3"}, None, 422, "topk"),
    ({"queries": ["a"], "topk": 2.5}, None, 422, "topk"),
    ({"queries": ["a"], "topk": True}, None, 422, "topk"),
    ({"queries": ["a"], "return_scores": "yes"}, None, 422, "return_scores"),
]


@pytest.mark.parametrize("body, ctype, status, field", BAD_RETRIEVE)
def test_bad_retrieve_input_is_4xx_naming_the_field(
    client: TestClient, body: object, ctype: str | None, status: int, field: str
) -> None:
    if isinstance(body, bytes):
        r = client.post("/retrieve", content=body, headers={"content-type": ctype or "application/json"})
    else:
        r = client.post("/retrieve", json=body)
    assert r.status_code == status, r.text
    err = r.json()
    assert err["field"] == field
    assert isinstance(err["detail"], str) and err["detail"]
    if field != "body":
        assert field in err["detail"]
    # the server is still fine afterwards
    assert client.post("/retrieve", json={"queries": ["Ottawa"], "topk": 1}).status_code == 200


BAD_ACCESS = [
    ({}, 422, "doc_id"),
    ({"doc_id": "a", "url": "b"}, 422, "doc_id"),
    ({"doc_id": 5}, 422, "doc_id"),
    ({"doc_id": ""}, 422, "doc_id"),
    ({"url": LONG}, 422, "url"),
    ({"urls": []}, 422, "urls"),
    ({"urls": ["a", 2]}, 422, "urls[1]"),
    ({"urls": ["a"] * 9}, 422, "urls"),
]


@pytest.mark.parametrize("body, status, field", BAD_ACCESS)
def test_bad_access_input_is_4xx_naming_the_field(
    client: TestClient, body: dict, status: int, field: str
) -> None:
    r = client.post("/access", json=body)
    assert r.status_code == status, r.text
    assert r.json()["field"] == field and field.split("[")[0] in r.json()["detail"]


def test_oversized_body_is_413(retriever: InMemoryRetriever) -> None:
    with TestClient(create_app(retriever, max_body_bytes=1000)) as c:
        r = c.post("/retrieve", json={"queries": ["x" * 600, "y" * 600]})
        assert r.status_code == 413 and "max_body_bytes=1000" in r.json()["detail"]


def test_invalid_limits_are_config_errors(retriever: InMemoryRetriever) -> None:
    with pytest.raises(ConfigError, match="default_topk"):
        create_app(retriever, default_topk=50, max_topk=10)
    with pytest.raises(ConfigError, match="max_pending_queries"):
        create_app(retriever, max_queries=100, max_pending_queries=10)
    with pytest.raises(ConfigError, match="Retriever"):
        create_app(object())  # type: ignore[arg-type]


# --------------------------------------------------------------------------- failures


def test_retriever_exception_is_500_with_message_and_server_survives(retriever: InMemoryRetriever) -> None:
    counting = CountingRetriever(retriever, fail_on="boom")
    with TestClient(create_app(counting)) as c:
        r = c.post("/retrieve", json={"queries": ["boom"], "topk": 1})
        assert r.status_code == 500 and "index exploded on 'boom'" in r.json()["detail"]
        assert c.post("/retrieve", json={"queries": ["Ottawa"], "topk": 1}).status_code == 200


def test_retriever_returning_wrong_count_is_500() -> None:
    class Broken:
        def search(self, queries: list[str], k: int) -> list[list[Hit]]:
            return []

    with TestClient(create_app(Broken())) as c:
        r = c.post("/retrieve", json={"queries": ["a", "b"], "topk": 1})
        assert r.status_code == 500 and "one list per query" in r.json()["detail"]


# --------------------------------------------------------------------------- batching


async def _post_all(app, bodies: list[dict]) -> list[httpx.Response]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        return await asyncio.gather(*(c.post("/retrieve", json=b) for b in bodies))


async def test_concurrent_requests_are_merged_into_few_search_calls(retriever: InMemoryRetriever) -> None:
    counting = CountingRetriever(retriever, delay_s=0.05)
    app = create_app(counting, batch_window_ms=20)
    questions = [
        f"{w} capital city" for w in ("Australia", "Canada", "Sydney", "Ottawa", "Dune", "Herbert")
    ] * 4
    bodies = [{"queries": [q], "topk": 2, "return_scores": True} for q in questions]
    responses = await _post_all(app, bodies)
    assert all(r.status_code == 200 for r in responses)
    # each request still gets exactly its own answer
    for q, r in zip(questions, responses, strict=True):
        assert [i["document"]["id"] for i in r.json()["result"][0]] == [
            h.id for h in retriever.search([q], 2)[0]
        ]
    assert len(counting.calls) <= 2, counting.calls  # 24 requests, merged
    assert sum(len(qs) for qs, _ in counting.calls) == 6  # duplicates searched once
    stats = app.state.batcher.stats
    assert stats.requests == 24 and stats.search_calls == len(counting.calls)


async def test_requests_with_different_topk_are_not_merged(retriever: InMemoryRetriever) -> None:
    counting = CountingRetriever(retriever)
    app = create_app(counting, batch_window_ms=20)
    bodies = [
        {"queries": ["Australia"], "topk": 1},
        {"queries": ["capital city of Australia or Canada"], "topk": 3},
        {"queries": ["Dune"], "topk": 1},
    ]
    responses = await _post_all(app, bodies)
    assert [len(r.json()["result"][0]) for r in responses] == [1, 3, 1]
    assert sorted(k for _, k in counting.calls) == [1, 3]
    assert sorted(counting.calls)[0] == (["Australia", "Dune"], 1)


async def test_one_failing_request_does_not_fail_the_merged_batch(retriever: InMemoryRetriever) -> None:
    counting = CountingRetriever(retriever, fail_on="boom")
    app = create_app(counting, batch_window_ms=20)
    bodies = [{"queries": ["Ottawa"]}, {"queries": ["boom"]}, {"queries": ["Sydney"]}]
    responses = await _post_all(app, bodies)
    assert [r.status_code for r in responses] == [200, 500, 200]
    assert responses[0].json()["result"][0][0]["id"] == "ottawa"


async def test_full_queue_answers_503_with_retry_after(retriever: InMemoryRetriever) -> None:
    counting = CountingRetriever(retriever, delay_s=0.05)
    app = create_app(counting, batch_window_ms=50, max_queries=2, max_pending_queries=2)
    responses = await _post_all(app, [{"queries": ["Ottawa", "Sydney"]}] * 4)
    codes = [r.status_code for r in responses]
    assert 200 in codes and 503 in codes, codes
    busy = next(r for r in responses if r.status_code == 503)
    assert busy.headers["retry-after"] == "1" and "max_pending_queries=2" in busy.json()["detail"]


async def test_large_request_is_chunked_to_max_batch_queries(retriever: InMemoryRetriever) -> None:
    counting = CountingRetriever(retriever)
    app = create_app(counting, max_batch_queries=2)
    queries = ["Ottawa", "Sydney", "Canberra", "Dune", "Herbert"]
    [r] = await _post_all(app, [{"queries": queries, "topk": 1}])
    assert [x[0]["id"] for x in r.json()["result"]] == ["ottawa", "sydney", "canberra", "dune", "herbert"]
    assert [len(qs) for qs, _ in counting.calls] == [2, 2, 1]


def test_response_is_plain_json(client: TestClient) -> None:
    r = client.post("/retrieve", json={"queries": ["Ottawa"], "topk": 1, "return_scores": True})
    assert r.headers["content-type"].startswith("application/json")
    json.loads(r.text)
