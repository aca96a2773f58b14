"""A Search-R1-compatible retrieval server over any `Retriever` (FastAPI + uvicorn, extra `serve`).

Run it from the command line (`agentic serve retriever --index DIR --port 8000`) or in Python:

    from agentic_infer.tools.retrieval.server import create_app, serve, serve_in_thread
    serve(retriever, "127.0.0.1", 8000)                # blocks
    with serve_in_thread(retriever) as server:         # background thread, free port
        print(server.url)

Endpoints (shapes follow Search-R1's `retrieval_server.py`, the de-facto standard):

* `POST /retrieve` `{"queries": [...], "topk": 3, "return_scores": true}` ->
  `{"result": [[{"document": {"id", "contents"}, "score"}, ...], ...]}`, one list per query, best
  first, `contents = '"Title"\\ntext'`. With `"return_scores": false` (the default, as in the
  reference) each item is the bare document, `[[{"id", "contents"}, ...], ...]`: that is what the
  reference's code builds in that case (before it crashes on a tuple-unpacking bug) and what
  clients that ask without scores read (ASearcher reads `r["contents"]`). A missing or null `topk`
  uses `default_topk`. Blank queries get `[]`.
* `POST /access` `{"doc_id": ID}` or `{"url": URL}` -> `{"document": {"id", "title", "text",
  "contents", "metadata"}}` (404 when unknown). A `url` is tried as a doc id, then the page name
  of a `.../wiki/Page_Name` or `...?title=Page_Name` URL (underscores as spaces) is tried as a doc
  id (many corpora key passages by title) and, if the index has `get_by_title`, as a title.
  ASearcher's batch form `{"urls": [...]}` ->
  `{"result": [document-or-null, ...]}` is accepted too.
* `GET /health` -> status, retriever type, index size, limits and batching counters.

Bad input gets a 4xx whose JSON body is `{"detail": message, "field": name}`: 400 for a body that
is not JSON, 413 for a body over `max_body_bytes`, 415 for a body not sent as JSON, 422 for wrong
types, empty or oversized lists, `topk` out of range and over-long queries, 404 for an unknown
document. 503 (with Retry-After) means the queue is full or the server is shutting down. A retriever exception becomes a 500 with
its message and the server keeps serving. Concurrent requests are merged into few `search()`
calls by `SearchBatcher` (`batching.py`), which runs the retriever in one worker thread.

What it does not cover: authentication, TLS, per-client rate limits: bind it to loopback or a
private network.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.tools.retrieval.api import (
    AccessRequest,
    BodyLimit,
    RequestError,
    RetrieveRequest,
    full_document,
    lookup_document,
    retrieve_item,
    validation_error_response,
)
from agentic_infer.tools.retrieval.base import Document, Retriever
from agentic_infer.tools.retrieval.batching import BatcherClosed, BatcherOverloaded, SearchBatcher

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
except ModuleNotFoundError as e:  # pragma: no cover - exercised only without the extra
    raise ModuleNotFoundError(
        f"the retrieval server needs FastAPI and uvicorn ({e}); install them with "
        "`pip install 'agentic-infer[serve]'`",
        name=e.name,
    ) from e

__all__ = ["RunningServer", "ServerLimits", "create_app", "serve", "serve_in_thread"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerLimits:
    """Request limits and batching knobs of the retrieval server (validated at construction)."""

    max_queries: int = 4096  # per request (Search-R1 sends a whole rollout batch in one request)
    max_topk: int = 100
    default_topk: int = 3  # used when a request has no topk (Search-R1's default)
    max_query_chars: int = 4096
    batch_window_ms: float = 2.0  # how long the batcher waits for more requests to merge
    max_batch_queries: int = 1024  # most queries in one retriever call
    max_pending_queries: int = 65536  # queue bound; over it requests get 503
    max_body_bytes: int = 32 * 1024 * 1024

    def __post_init__(self) -> None:
        for name in ("max_queries", "max_topk", "max_query_chars", "max_batch_queries", "max_body_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if not 1 <= self.default_topk <= self.max_topk:
            raise ConfigError(
                f"default_topk must be in [1, max_topk={self.max_topk}], got {self.default_topk!r}"
            )
        if not 0 <= self.batch_window_ms <= 1000:
            raise ConfigError(f"batch_window_ms must be in [0, 1000] ms, got {self.batch_window_ms!r}")
        if self.max_pending_queries < self.max_queries:
            raise ConfigError(
                f"max_pending_queries ({self.max_pending_queries}) must be >= max_queries "
                f"({self.max_queries}), or a full-size request could never be queued"
            )


def _index_size(retriever: Any) -> int | None:
    try:
        return len(retriever)
    except TypeError:
        return None


def _check_queries(queries: list[str], limits: ServerLimits) -> None:
    if not queries:
        raise RequestError(422, "queries", "queries is empty; send at least one query string")
    if len(queries) > limits.max_queries:
        raise RequestError(
            422,
            "queries",
            f"queries has {len(queries)} items, over max_queries={limits.max_queries}; "
            "split them over several requests",
        )
    for i, q in enumerate(queries):
        if len(q) > limits.max_query_chars:
            raise RequestError(
                422,
                f"queries[{i}]",
                f"queries[{i}] has {len(q)} characters, over max_query_chars={limits.max_query_chars}; "
                "shorten the query",
            )


def _access_keys(body: AccessRequest, limits: ServerLimits) -> tuple[str, list[str]]:
    """The field used (doc_id, url or urls) and the keys to look up; 422 when malformed."""
    given = [name for name in ("doc_id", "url", "urls") if getattr(body, name) is not None]
    if len(given) != 1:
        raise RequestError(
            422,
            "doc_id",
            f"give exactly one of doc_id, url or urls, got {given or 'none'}; "
            'e.g. {"doc_id": "12"} or {"url": "https://en.wikipedia.org/wiki/Paris"}',
        )
    field = given[0]
    keys = [body.doc_id] if body.doc_id is not None else [body.url] if body.url is not None else body.urls
    keys = [k for k in keys or [] if k is not None]
    if not keys:
        raise RequestError(422, "urls", "urls is empty; send at least one URL")
    if len(keys) > limits.max_queries:
        raise RequestError(422, "urls", f"urls has {len(keys)} items, over max_queries={limits.max_queries}")
    for i, key in enumerate(keys):
        name = field if field != "urls" else f"urls[{i}]"
        if not key.strip():
            raise RequestError(422, name, f"{name} is empty")
        if len(key) > limits.max_query_chars:
            raise RequestError(422, name, f"{name} has {len(key)} characters, over {limits.max_query_chars}")
    return field, keys


def create_app(
    retriever: Retriever,
    *,
    max_queries: int = ServerLimits.max_queries,
    max_topk: int = ServerLimits.max_topk,
    default_topk: int = ServerLimits.default_topk,
    max_query_chars: int = ServerLimits.max_query_chars,
    batch_window_ms: float = ServerLimits.batch_window_ms,
    max_batch_queries: int = ServerLimits.max_batch_queries,
    max_pending_queries: int = ServerLimits.max_pending_queries,
    max_body_bytes: int = ServerLimits.max_body_bytes,
) -> FastAPI:
    """The FastAPI app serving `retriever` (endpoints: see the module docstring)."""
    if not callable(getattr(retriever, "search", None)):
        raise ConfigError(
            f"create_app needs a Retriever with search(queries, k), got {type(retriever).__name__}"
        )
    limits = ServerLimits(
        max_queries=max_queries,
        max_topk=max_topk,
        default_topk=default_topk,
        max_query_chars=max_query_chars,
        batch_window_ms=batch_window_ms,
        max_batch_queries=max_batch_queries,
        max_pending_queries=max_pending_queries,
        max_body_bytes=max_body_bytes,
    )
    batcher = SearchBatcher(
        retriever,
        window_s=limits.batch_window_ms / 1000.0,
        max_batch_queries=limits.max_batch_queries,
        max_pending_queries=limits.max_pending_queries,
    )
    has_documents = callable(getattr(retriever, "get", None))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await batcher.close()

    app = FastAPI(title="agentic-infer retrieval server", lifespan=lifespan)
    app.state.batcher = batcher
    app.state.limits = limits
    app.state.retriever = retriever
    app.add_middleware(BodyLimit, max_body_bytes=limits.max_body_bytes)

    @app.exception_handler(RequestError)
    async def _on_request_error(_: Request, exc: RequestError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _on_validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_error_response(exc)

    @app.post("/retrieve")
    async def retrieve(body: RetrieveRequest) -> JSONResponse:
        _check_queries(body.queries, limits)
        k = limits.default_topk if body.topk is None else body.topk
        if not 1 <= k <= limits.max_topk:
            raise RequestError(422, "topk", f"topk must be in [1, {limits.max_topk}], got {k}")
        try:
            results = await batcher.search(body.queries, k)
        except (BatcherOverloaded, BatcherClosed) as e:
            raise RequestError(503, None, str(e), headers={"Retry-After": "1"}) from e
        except Exception as e:
            logger.exception("retriever failed on %d queries", len(body.queries))
            raise RequestError(500, None, f"retriever failed: {type(e).__name__}: {e}") from e
        scores = body.return_scores
        return JSONResponse({"result": [[retrieve_item(h, scores) for h in hits] for hits in results]})

    @app.post("/access")
    async def access(body: AccessRequest) -> JSONResponse:
        field, keys = _access_keys(body, limits)
        if not has_documents:
            raise RequestError(
                501,
                field,
                f"this server's retriever ({type(retriever).__name__}) stores no documents (it has no "
                "get(doc_id)); serve an index that implements DocumentStore",
            )
        by_url = field != "doc_id"

        def look_up_all() -> list[Document | None]:
            return [lookup_document(retriever, key, by_url=by_url) for key in keys]

        try:
            docs = await asyncio.to_thread(look_up_all)
        except Exception as e:
            logger.exception("document lookup failed")
            raise RequestError(500, None, f"document lookup failed: {type(e).__name__}: {e}") from e
        if field == "urls":
            return JSONResponse({"result": [None if d is None else full_document(d) for d in docs]})
        if docs[0] is None:
            what = "doc id" if field == "doc_id" else "url (tried as doc id and as title)"
            raise RequestError(404, field, f"no document with {what} {keys[0]!r} in this index")
        return JSONResponse({"document": full_document(docs[0])})

    @app.get("/health")
    async def health() -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "retriever": type(retriever).__name__,
                "index_size": _index_size(retriever),
                "documents": has_documents,
                "limits": asdict(limits),
                "batching": batcher.snapshot(),
            }
        )

    return app


def serve(
    retriever: Retriever,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    limits: ServerLimits | None = None,
    log_level: str = "info",
    access_log: bool = False,
) -> None:
    """Serve `retriever` with uvicorn until interrupted (blocks)."""
    import uvicorn

    app = create_app(retriever, **asdict(limits or ServerLimits()))
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=access_log)


@dataclass
class RunningServer:
    """A retrieval server running in a background thread (see `serve_in_thread`)."""

    host: str
    port: int
    app: FastAPI
    _server: Any
    _thread: threading.Thread

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self, timeout_s: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout_s)


@contextmanager
def serve_in_thread(
    retriever: Retriever,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    limits: ServerLimits | None = None,
    startup_timeout_s: float = 30.0,
) -> Iterator[RunningServer]:
    """Run the server in a daemon thread (port 0 picks a free port); stop it on exit."""
    import uvicorn

    app = create_app(retriever, **asdict(limits or ServerLimits()))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot bind the retrieval server to {host}:{port}: {e}; pick another port") from e
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="retrieval-server"
    )
    running = RunningServer(host=host, port=sock.getsockname()[1], app=app, _server=server, _thread=thread)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout_s
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(
                    f"retrieval server on {running.url} did not start within {startup_timeout_s}s"
                )
            time.sleep(0.01)
        yield running
    finally:
        running.stop()
        sock.close()
