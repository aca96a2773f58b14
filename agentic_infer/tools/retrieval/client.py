"""`RemoteRetriever`: a `Retriever` (and `DocumentStore`) over a Search-R1-style HTTP server.

Any server that speaks Search-R1's `POST /retrieve` works as a backend: this package's own
(`agentic serve retriever`), Search-R1's, or one of its many forks:

    from agentic_infer.tools.retrieval.client import RemoteRetriever

    with RemoteRetriever("http://127.0.0.1:8000") as r:
        hits = r.search(["who wrote Dune"], k=3)          # list[list[Hit]]
        doc = r.get(hits[0][0].id)                        # via POST /access, None if unknown
    hits = await RemoteRetriever(url).asearch([...], k=3)  # the same, with httpx.AsyncClient

Requests always ask for scores (`return_scores: true`); responses in either shape (items
`{"document": {...}, "score"}` or bare documents) are understood. A document's title and text come
from its `title`/`text` fields when the server sends them, else from `contents` (`'"Title"\\ntext'`).
Connection errors, timeouts and 429/502/503/504 answers are retried `retries` times with
exponential backoff (honouring Retry-After); other errors raise `RetrievalServerError` at once,
naming the URL and the server's message. Query lists over `max_queries_per_request` are split.

What it does not cover: authentication beyond custom `headers`, load balancing over several
servers, caching.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx

from agentic_infer.errors import ConfigError, ToolError
from agentic_infer.tools.retrieval.base import Document, Hit
from agentic_infer.tools.retrieval.corpus import split_contents

__all__ = ["RemoteRetriever", "RetrievalServerError"]

logger = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({429, 502, 503, 504})
_MAX_BACKOFF_S = 10.0


class RetrievalServerError(ToolError):
    """A retrieval server could not be reached or answered with an error."""

    def __init__(self, message: str, *, url: str, status_code: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.url = url
        self.status_code = status_code
        self.retryable = retryable


def _base_url(url: str) -> str:
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"retrieval server url must be a non-empty string, got {url!r}")
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    for suffix in ("/retrieve", "/access", "/health"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as e:
        raise ConfigError(f"invalid retrieval server url {url!r}: {e}") from e
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"retrieval server url must look like http://HOST:PORT, got {url!r}")
    return url


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:300]
    return str(body)[:300]


def _field(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("field") if isinstance(body, dict) else None


def _doc_fields(doc: dict[str, Any]) -> tuple[str, str, str]:
    """(id, title, text) of a document dict in any common shape."""
    doc_id = next((doc[key] for key in ("id", "doc_id", "docid", "_id") if doc.get(key) is not None), "")
    if isinstance(doc.get("title"), str) and isinstance(doc.get("text"), str):
        title, text = doc["title"], doc["text"]
    elif isinstance(doc.get("contents"), str):
        title, text = split_contents(doc["contents"])
    else:
        raise ValueError(f"document has neither contents nor title/text: {str(doc)[:120]}")
    return str(doc_id), title, text


def _parse_hit(item: Any) -> Hit:
    if not isinstance(item, dict):
        raise ValueError(f"result item is not an object: {str(item)[:120]}")
    doc = item["document"] if isinstance(item.get("document"), dict) else item
    doc_id, title, text = _doc_fields(doc)
    score = item.get("score")
    return Hit(id=doc_id, title=title, text=text, score=float(score) if score is not None else 0.0)


def _backoff(attempt: int, backoff_s: float, response: httpx.Response | None) -> float:
    delay = backoff_s * (2**attempt)
    if response is not None:
        try:
            delay = max(delay, float(response.headers.get("retry-after", 0)))
        except ValueError:
            pass
    return min(delay, _MAX_BACKOFF_S)


class RemoteRetriever:
    """`Retriever` + `DocumentStore` over HTTP; see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        max_queries_per_request: int = 1024,
        headers: dict[str, str] | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {timeout_s!r}")
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries!r}")
        if backoff_s < 0:
            raise ConfigError(f"backoff_s must be >= 0, got {backoff_s!r}")
        if max_queries_per_request < 1:
            raise ConfigError(f"max_queries_per_request must be >= 1, got {max_queries_per_request!r}")
        self.url = _base_url(url)
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_queries_per_request = max_queries_per_request
        self._headers = dict(headers or {})
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._aclient_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"RemoteRetriever({self.url!r})"

    # -- public API ---------------------------------------------------------------------------
    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-`k` hits per query from the server's `/retrieve`."""
        out: list[list[Hit]] = []
        for chunk in self._chunks(queries, k):
            out.extend(self._parse_result(self._post("/retrieve", self._payload(chunk, k)), len(chunk)))
        return out

    async def asearch(self, queries: list[str], k: int) -> list[list[Hit]]:
        """`search`, without blocking the event loop (chunks are sent concurrently)."""
        chunks = self._chunks(queries, k)
        bodies = await asyncio.gather(*(self._apost("/retrieve", self._payload(c, k)) for c in chunks))
        out: list[list[Hit]] = []
        for chunk, body in zip(chunks, bodies, strict=True):
            out.extend(self._parse_result(body, len(chunk)))
        return out

    def get(self, doc_id: str) -> Document | None:
        """The whole document from `/access`, or None when the server does not know the id."""
        return self._parse_document(self._post("/access", {"doc_id": doc_id}, missing_ok=True))

    async def aget(self, doc_id: str) -> Document | None:
        """`get`, asynchronously."""
        return self._parse_document(await self._apost("/access", {"doc_id": doc_id}, missing_ok=True))

    def health(self) -> dict[str, Any]:
        """The server's `/health` JSON (this package's server; others may not have it)."""
        body = self._send(lambda c: c.get(f"{self.url}/health", headers=self._headers), "/health")
        return body if isinstance(body, dict) else {"status": body}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        if self._aclient is not None:
            await self._aclient.aclose()
            self._aclient = None
        self.close()

    def __enter__(self) -> RemoteRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RemoteRetriever:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- requests -----------------------------------------------------------------------------
    def _chunks(self, queries: list[str], k: int) -> list[list[str]]:
        if isinstance(queries, str) or not isinstance(queries, list):
            raise ConfigError(
                f"queries must be a list of strings, got {type(queries).__name__}: {queries!r:.80}"
            )
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        n = self.max_queries_per_request
        return [queries[i : i + n] for i in range(0, len(queries), n)]

    @staticmethod
    def _payload(queries: list[str], k: int) -> dict[str, Any]:
        return {"queries": queries, "topk": k, "return_scores": True}

    def _sync_client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout_s)
        return self._client

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aclient_loop is not loop:
            # An AsyncClient is bound to the loop it first ran on; a new loop needs a new client.
            self._aclient = httpx.AsyncClient(timeout=self.timeout_s)
            self._aclient_loop = loop
        return self._aclient

    def _post(self, path: str, payload: dict[str, Any], *, missing_ok: bool = False) -> Any:
        url = f"{self.url}{path}"
        return self._send(lambda c: c.post(url, json=payload, headers=self._headers), path, missing_ok)

    def _outcome(self, path: str, missing_ok: bool, attempt: int, response: httpx.Response | None,
                 exc: httpx.TransportError | None) -> tuple[bool, Any]:
        """(True, value) for a successful attempt, else (False, seconds to wait); raises when no retry is left."""
        if exc is not None:
            error = self._transport_error(path, exc, attempt)
        else:
            error = self._check(response, path, missing_ok)
            if error is None:
                return True, (None if response.status_code == 404 else response.json())
        if not error.retryable or attempt == self.retries:
            raise error
        delay = _backoff(attempt, self.backoff_s, response)
        logger.warning("%s; retrying in %.2fs", error, delay)
        return False, delay

    def _send(self, call: Any, path: str, missing_ok: bool = False) -> Any:
        client = self._sync_client()
        for attempt in range(self.retries + 1):
            try:
                response, exc = call(client), None
            except httpx.TransportError as e:
                response, exc = None, e
            done, value = self._outcome(path, missing_ok, attempt, response, exc)
            if done:
                return value
            time.sleep(value)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _apost(self, path: str, payload: dict[str, Any], *, missing_ok: bool = False) -> Any:
        url = f"{self.url}{path}"
        client = self._async_client()
        for attempt in range(self.retries + 1):
            try:
                response, exc = await client.post(url, json=payload, headers=self._headers), None
            except httpx.TransportError as e:
                response, exc = None, e
            done, value = self._outcome(path, missing_ok, attempt, response, exc)
            if done:
                return value
            await asyncio.sleep(value)
        raise AssertionError("unreachable")  # pragma: no cover

    def _transport_error(self, path: str, e: httpx.TransportError, attempt: int) -> RetrievalServerError:
        what = "timed out" if isinstance(e, httpx.TimeoutException) else "could not be reached"
        hint = (
            ""
            if isinstance(e, httpx.TimeoutException)
            else ("; is it running? start one with `agentic serve retriever --index DIR --port PORT`")
        )
        return RetrievalServerError(
            f"retrieval server {self.url}{path} {what} (attempt {attempt + 1} of {self.retries + 1}, "
            f"timeout {self.timeout_s}s): {type(e).__name__}: {e}{hint}",
            url=f"{self.url}{path}",
            retryable=True,
        )

    def _check(self, response: httpx.Response, path: str, missing_ok: bool) -> RetrievalServerError | None:
        status = response.status_code
        url = f"{self.url}{path}"
        if status == 200:
            try:
                response.json()
            except ValueError:
                return RetrievalServerError(
                    f"retrieval server {url} answered 200 with a body that is not JSON: {response.text[:200]!r}",
                    url=url,
                    status_code=status,
                )
            return None
        if status == 404 and missing_ok and _field(response) is not None:
            return None  # the server knows the endpoint but not the document
        if status in (404, 405) and path == "/access":
            message = (
                f"retrieval server {url} has no /access endpoint (HTTP {status}); it can search but not "
                "return whole documents (a plain Search-R1 server?)"
            )
            return RetrievalServerError(message, url=url, status_code=status)
        return RetrievalServerError(
            f"retrieval server {url} answered HTTP {status}: {_detail(response)}",
            url=url,
            status_code=status,
            retryable=status in _RETRY_STATUS,
        )

    # -- parsing ------------------------------------------------------------------------------
    def _parse_result(self, body: Any, n_queries: int) -> list[list[Hit]]:
        url = f"{self.url}/retrieve"
        result = body.get("result") if isinstance(body, dict) else None
        if not isinstance(result, list) or len(result) != n_queries:
            got = f"{len(result)} result lists" if isinstance(result, list) else f"{str(body)[:120]!r}"
            raise RetrievalServerError(
                f"retrieval server {url} returned {got} for {n_queries} queries; expected "
                '{"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]} with one list per query',
                url=url,
            )
        try:
            return [[_parse_hit(item) for item in hits] for hits in result]
        except (KeyError, ValueError, TypeError) as e:
            raise RetrievalServerError(
                f"retrieval server {url} returned a malformed result: {e}", url=url
            ) from e

    def _parse_document(self, body: Any) -> Document | None:
        if body is None:
            return None
        url = f"{self.url}/access"
        doc = body.get("document") if isinstance(body, dict) else None
        if not isinstance(doc, dict):
            raise RetrievalServerError(
                f'retrieval server {url} returned {str(body)[:120]!r}; expected {{"document": {{...}}}}',
                url=url,
            )
        try:
            doc_id, title, text = _doc_fields(doc)
        except ValueError as e:
            raise RetrievalServerError(
                f"retrieval server {url} returned a malformed document: {e}", url=url
            ) from e
        metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        return Document(id=doc_id, title=title, text=text, metadata=metadata)
