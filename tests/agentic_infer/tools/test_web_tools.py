"""Web tools offline: text extraction, the Search-o1 context window, a loopback page, fast offline errors.

The real web search is marked `network` (opt-in: pytest -m network).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("bs4", reason="needs the web extra: pip install 'agentic-infer[web]'")

from agentic_infer.tools.web import (  # noqa: E402
    FetchPage,
    WebSearch,
    best_sentence,
    context_window,
    extract_text,
    fetch_page,
)

PAGE = """<!doctype html><html><head><title>Eiffel Tower - Encyclopedia</title>
<script>var tracking = "do not show";</script><style>p { color: red }</style></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a></nav><header>Site banner</header>
<div role="navigation">Skip to content</div>
<main><h1>Eiffel Tower</h1>
<p>The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in <b>Paris</b>, France.</p>
<p>Gustave Eiffel's engineering company designed and built the tower between 1887 and 1889.</p>
<div hidden>hidden text</div><div style="display: none">invisible text</div>
<ul><li>Height: 330 m</li><li>Visitors: about 7 million a year</li></ul></main>
<aside>Related: Louvre</aside><footer>Copyright 2024</footer></body></html>"""


def test_extract_text_keeps_readable_content_only():
    title, text = extract_text(PAGE)
    assert title == "Eiffel Tower - Encyclopedia"
    assert text.splitlines() == [
        "Eiffel Tower",
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
        "Gustave Eiffel's engineering company designed and built the tower between 1887 and 1889.",
        "Height: 330 m",
        "Visitors: about 7 million a year",
    ]
    for junk in ("tracking", "Home", "banner", "Skip", "hidden", "invisible", "Louvre", "Copyright", "color"):
        assert junk not in text


def test_best_sentence_uses_word_overlap_f1():
    text = "Paris is in France. The tower was built between 1887 and 1889 by Eiffel. Bread is tasty."
    start, end, f1 = best_sentence(text, "when was the tower built")
    assert text[start:end] == "The tower was built between 1887 and 1889 by Eiffel."
    assert 0.2 < f1 < 1
    assert best_sentence(text, "quantum chromodynamics") is None


def test_context_window_is_chars_around_the_best_sentence():
    filler_before = "Alpha beta gamma. " * 400
    filler_after = "Delta epsilon zeta. " * 400
    key = "The tower was built between 1887 and 1889."
    text = filler_before + key + " " + filler_after
    window = context_window(text, "when was the tower built", chars=100)
    start = text.index(key)
    assert window == text[start - 100: start + len(key) + 100]
    # no sentence beats F1 0.2: the first 2 x chars characters (Search-o1's fallback)
    assert context_window(text, "quantum chromodynamics", chars=50) == text[:100]
    # default width is Search-o1's 3000 characters
    assert len(context_window(text, "when was the tower built")) == min(len(text), 3000 * 2 + len(key))


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        routes = {"/page": (200, "text/html; charset=utf-8", PAGE), "/plain": (200, "text/plain", "just text"),
                  "/binary": (200, "application/octet-stream", "\x00\x01"), "/missing": (404, "text/html", "no")}
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
            return
        status, kind, body = routes.get(self.path, (404, "text/plain", "not found"))
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


async def test_fetch_page_from_loopback_server(server):
    page = await fetch_page(f"{server}/redirect", allow_private=True)
    assert page.url.endswith("/page") and page.status == 200 and page.title.startswith("Eiffel Tower")
    assert "Gustave Eiffel's engineering company" in page.text and "tracking" not in page.text
    plain = await fetch_page(f"{server}/plain", allow_private=True)
    assert plain.text == "just text"


async def test_fetch_page_tool_errors(server):
    reader = FetchPage(allow_private=True, chars=40)
    windowed = await reader(url=f"{server}/page", query="who designed the tower")
    assert windowed.ok and "designed" in windowed.content and len(windowed.content) < 200
    assert (await reader(url=f"{server}/missing")).error == f"WebError: fetching '{server}/missing' returned HTTP 404"
    assert "not text or HTML" in (await reader(url=f"{server}/binary")).error
    assert "only http(s)" in (await reader(url="file:///etc/passwd")).error
    private = await FetchPage()(url=f"{server}/page")
    assert "non-public address" in private.error


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_web_search_offline_returns_error_quickly():
    search = WebSearch(probe=("127.0.0.1", _closed_port()), connect_timeout_s=2)
    start = time.monotonic()
    result = await search(query="agentic retrieval")
    assert time.monotonic() - start < 3
    assert result.error.startswith("NetworkUnavailableError: cannot reach 127.0.0.1")


async def test_web_search_unreachable_proxy_fails_fast_without_probe():
    search = WebSearch(proxy=f"http://127.0.0.1:{_closed_port()}", probe=None, connect_timeout_s=1, timeout_s=10)
    start = time.monotonic()
    result = await search(query="agentic retrieval")
    assert time.monotonic() - start < 10
    assert not result.ok and result.content == ""


async def test_web_search_unroutable_probe_is_bounded():
    search = WebSearch(probe=("192.0.2.1", 443), connect_timeout_s=1)  # TEST-NET-1: never routable
    start = time.monotonic()
    result = await search(query="x")
    assert time.monotonic() - start < 3 and result.error.startswith("NetworkUnavailableError")


@pytest.mark.network
async def test_real_web_search():
    search = WebSearch(max_results=3)
    result = await search(query="Python programming language")
    assert result.ok, result.error
    hits = result.metadata["hits"]
    assert 1 <= len(hits) <= 3 and all(h["url"].startswith("http") for h in hits)
    page = await fetch_page(hits[0]["url"])
    assert page.text


def test_module_imports_without_running_an_event_loop():
    assert asyncio.iscoroutinefunction(fetch_page)
