"""The retrieval server's wire format: request models, response items and error bodies.

Server-side helpers for `server.py` (they need the `serve` extra: FastAPI and pydantic). The
shapes follow Search-R1's `retrieval_server.py`:

* a `/retrieve` item with scores is `{"document": {"id", "contents"}, "score"}`; without scores it
  is the bare `{"id", "contents"}` (see `retrieve_item`);
* a whole document from `/access` is `{"id", "title", "text", "contents", "metadata"}`;
* every error body is `{"detail": message, "field": name-or-null}` (see `RequestError`,
  `validation_error_response`).

What it does not cover: the client side (`client.py` parses responses with httpx only, so a client
needs no FastAPI).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from agentic_infer.tools.retrieval.base import Document, Hit

try:
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr
except ModuleNotFoundError as e:  # pragma: no cover - exercised only without the extra
    raise ModuleNotFoundError(
        f"the retrieval server needs FastAPI, pydantic and uvicorn ({e}); install them with "
        "`pip install 'agentic-infer[serve]'`",
        name=e.name,
    ) from e

__all__ = [
    "AccessRequest",
    "BodyLimit",
    "RequestError",
    "RetrieveRequest",
    "full_document",
    "lookup_document",
    "retrieve_item",
    "title_candidates",
    "validation_error_response",
]

logger = logging.getLogger(__name__)


class RetrieveRequest(BaseModel):
    """`POST /retrieve` body (unknown fields are ignored, as the reference does)."""

    model_config = ConfigDict(extra="ignore")
    queries: list[StrictStr]
    topk: StrictInt | None = None
    return_scores: StrictBool = False


class AccessRequest(BaseModel):
    """`POST /access` body: exactly one of `doc_id`, `url`, `urls` (checked by the endpoint)."""

    model_config = ConfigDict(extra="ignore")
    doc_id: StrictStr | None = None
    url: StrictStr | None = None
    urls: list[StrictStr] | None = None


class RequestError(Exception):
    """An error answer: HTTP status, the offending field and a message saying how to fix it."""

    def __init__(self, status: int, field: str | None, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.field = field
        self.message = message
        self.headers = headers

    def response(self) -> JSONResponse:
        return JSONResponse({"detail": self.message, "field": self.field}, self.status, headers=self.headers)


def _contents(title: str, text: str) -> str:
    """Search-R1's `contents` field, exactly as `Document.contents` defines it."""
    return f'"{title}"\n{text}'


def retrieve_item(hit: Hit, with_score: bool) -> dict[str, Any]:
    """One `/retrieve` result item (a non-finite score becomes null: JSON has no NaN)."""
    document = {"id": hit.id, "contents": _contents(hit.title, hit.text)}
    if not with_score:
        return document
    score = float(hit.score)
    return {"document": document, "score": score if math.isfinite(score) else None}


def full_document(doc: Document) -> dict[str, Any]:
    """A whole document as `/access` returns it; metadata that is not JSON becomes `{}`."""
    out: dict[str, Any] = {"id": doc.id, "title": doc.title, "text": doc.text, "contents": doc.contents}
    try:
        json.dumps(doc.metadata)
        out["metadata"] = doc.metadata
    except (TypeError, ValueError):
        logger.warning("metadata of document %r is not JSON-serialisable; omitted", doc.id)
        out["metadata"] = {}
    return out


def title_candidates(url: str) -> list[str]:
    """Titles a URL may name: itself, a `/wiki/Page_Name` path, or a `?title=Page_Name` query."""
    candidates = [url]
    parsed = urlparse(url)
    if parsed.scheme in ("http", "https"):
        titles = parse_qs(parsed.query).get("title", [])
        segment = parsed.path.rstrip("/").rsplit("/", 1)[-1]
        if segment and segment != "index.php":
            titles.append(segment)
        for t in titles:
            name = unquote(t).replace("_", " ").strip()
            if name and name not in candidates:
                candidates.append(name)
    return candidates


def lookup_document(store: Any, key: str, *, by_url: bool) -> Document | None:
    """`store.get(key)`; for a URL also each title it may name, as an id and then as a title.

    (Many corpora use the title as the id, e.g. HotpotQA's; `get_by_title` is optional.)
    """
    doc = store.get(key)
    if doc is not None or not by_url:
        return doc
    by_title = getattr(store, "get_by_title", None)
    for title in title_candidates(key):
        doc = (store.get(title) if title != key else None) or (
            by_title(title) if callable(by_title) else None
        )
        if doc is not None:
            return doc
    return None


def _field_name(loc: tuple[Any, ...]) -> str:
    parts = list(loc[1:]) if loc and loc[0] == "body" else list(loc)
    name = ""
    for p in parts:
        name += f"[{p}]" if isinstance(p, int) else (f".{p}" if name else str(p))
    return name or "body"


def validation_error_response(exc: RequestValidationError) -> JSONResponse:
    """400 for a body that is not JSON, 415 for a non-JSON content type, else 422 naming the field."""
    errors = exc.errors()
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request", "type": ""}
    field = _field_name(tuple(first.get("loc", ())))
    kind = first.get("type", "")
    got = first.get("input")
    if kind == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "invalid JSON")
        return RequestError(
            400, "body", f"request body is not valid JSON ({reason}); send a JSON object"
        ).response()
    if field == "body" and isinstance(got, (bytes, str)):
        message = "request body was not sent as JSON; send a JSON object with Content-Type: application/json"
        return RequestError(415, "body", message).response()
    if kind == "missing" and field == "body":
        message = "request body is missing; send a JSON object with Content-Type: application/json"
        return RequestError(422, "body", message).response()
    shown = "" if kind == "missing" else f" (got {json.dumps(got, default=str)[:80]})"
    message = f"{field}: {first.get('msg', 'invalid value')}{shown}"
    if len(errors) > 1:
        message += f"; and {len(errors) - 1} more error(s)"
    return RequestError(422, field, message).response()


class BodyLimit:
    """ASGI middleware: 413 for a request whose Content-Length is over `max_body_bytes`.

    A chunked body without Content-Length is not counted (HTTP clients send the header for JSON).
    """

    def __init__(self, app: Any, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            length = dict(scope.get("headers") or ()).get(b"content-length")
            if length is not None:
                error = self._check(length)
                if error is not None:
                    await error.response()(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    def _check(self, length: bytes) -> RequestError | None:
        try:
            size = int(length)
        except ValueError:
            size = -1
        if size < 0:
            return RequestError(400, "body", f"bad Content-Length header {length!r}")
        if size > self.max_body_bytes:
            return RequestError(
                413,
                "body",
                f"request body of {size} bytes exceeds max_body_bytes={self.max_body_bytes}; "
                "split the queries over several requests",
            )
        return None
