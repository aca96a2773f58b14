"""Web search and page reading for agents: `WebSearch` (via `ddgs`), `fetch_page`, `context_window`.

Needs the optional extra `web` (`pip install 'agentic-infer[web]'`: ddgs, beautifulsoup4, lxml).

    search = WebSearch(max_results=5)
    result = await search(query="Search-o1 agentic retrieval")   # ToolResult; metadata["hits"]
    page = await fetch_page("https://example.org")               # Page(url, title, text, ...)
    snippet = context_window(page.text, "who founded it", chars=3000)

`context_window` is Search-o1's document context: the sentence with the best word-overlap F1
with the query (lower-cased, punctuation removed, word sets; it must beat 0.2) and `chars`
characters on each side of it; when no sentence beats the threshold, the first `2 x chars`
characters. `extract_text` keeps the readable text of an HTML page (prefers <main>/<article>;
drops scripts, styles, navigation, headers, footers, forms, hidden elements).

Offline behaviour: before searching, a TCP probe (default duckduckgo.com:443, or the proxy) must
connect within `connect_timeout_s`; otherwise the call returns an error result
(`NetworkUnavailableError: ...`) at once instead of hanging. Every call is bounded by `timeout_s`
(a search still running in its worker thread after that is abandoned, not killed).

`fetch_page` refuses non-http(s) URLs and, unless `allow_private=True`, hosts that resolve to
private, loopback, link-local or reserved addresses (checked at every redirect; DNS rebinding
between the check and the connection is not prevented). Not covered: JavaScript rendering, PDFs,
robots.txt, caching, rate limiting (ddgs may be rate-limited by the engines it queries).
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import string
import time
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from agentic_infer.errors import ToolError
from agentic_infer.tools.base import Tool, ToolResult

__all__ = ["FetchPage", "Page", "WebHit", "WebSearch", "best_sentence", "context_window", "extract_text",
           "fetch_page"]

USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) agentic-infer/0.1 (+https://pypi.org/project/agentic-infer)"
_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "nav",
              "header", "footer", "aside", "form", "button", "input", "select", "textarea", "menu", "dialog", "head")
_DROP_ROLES = {"navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar", "dialog"}
_BLOCK_TAGS = ("p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table", "section",
               "article", "main", "pre", "blockquote", "dd", "dt", "dl", "figcaption", "hr", "td", "th")
_PUNCT = str.maketrans("", "", string.punctuation)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n\s*")


class WebError(ToolError):
    """A web search or page fetch failed (network, HTTP status, content type, refused address)."""


class NetworkUnavailableError(WebError):
    """The internet (or the proxy) cannot be reached."""


def _need(module: str) -> Any:
    try:
        return __import__(module)
    except ImportError as exc:
        raise ToolError(f"{module!r} is not installed; install the web extra: pip install 'agentic-infer[web]'") from exc


# ----------------------------------------------------------------------------- text


def extract_text(html: str) -> tuple[str, str]:
    """(title, readable text) of an HTML document: one paragraph per line, boilerplate dropped."""
    bs4 = _need("bs4")
    try:
        soup = bs4.BeautifulSoup(html, "lxml")
    except bs4.FeatureNotFound:
        soup = bs4.BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(True):
        if tag.decomposed:
            continue
        attrs = tag.attrs or {}
        style = str(attrs.get("style", "")).replace(" ", "").lower()
        if (str(attrs.get("role", "")).lower() in _DROP_ROLES or "hidden" in attrs
                or str(attrs.get("aria-hidden", "")).lower() == "true" or "display:none" in style):
            tag.decompose()
    roots = soup.find_all("main") or soup.find_all("article") or [soup.body or soup]
    for root in roots:
        for tag in root.find_all(_BLOCK_TAGS):
            if tag.name == "br":
                tag.replace_with("\n")
            else:
                tag.insert_before("\n")
                tag.insert_after("\n")
    raw = "\n".join(root.get_text() for root in roots)
    lines = (re.sub(r"[ \t\r\f\v\u00a0]+", " ", line).strip() for line in raw.split("\n"))
    return title, "\n".join(line for line in lines if line)


def _words(text: str) -> set[str]:
    return set(text.lower().translate(_PUNCT).split())


def _f1(query: set[str], sentence: set[str]) -> float:
    common = len(query & sentence)
    if not common:
        return 0.0
    precision, recall = common / len(sentence), common / len(query)
    return 2 * precision * recall / (precision + recall)


def best_sentence(text: str, query: str, *, min_f1: float = 0.2) -> tuple[int, int, float] | None:
    """(start, end, f1) of the sentence of `text` with the best word-overlap F1 with `query`."""
    query_words = _words(query)
    if not query_words:
        return None
    best: tuple[int, int, float] | None = None
    start = 0
    for cut in [*_SENTENCE_BREAK.finditer(text), None]:
        end = cut.start() if cut else len(text)
        if end > start:
            score = _f1(query_words, _words(text[start:end]))
            if score > min_f1 and (best is None or score > best[2]):
                best = (start, end, score)
        if cut:
            start = cut.end()
    return best


def context_window(text: str, query: str, *, chars: int = 3000, min_f1: float = 0.2,
                   max_text_chars: int = 50_000) -> str:
    """Search-o1 document context: ±`chars` around the best-matching sentence (else the first 2·chars)."""
    if chars < 1:
        raise ToolError(f"context_window: chars={chars!r} must be >= 1")
    text = text[:max_text_chars]
    hit = best_sentence(text, query, min_f1=min_f1)
    if hit is None:
        return text[: 2 * chars]
    start, end, _ = hit
    return text[max(0, start - chars): min(len(text), end + chars)]


# ----------------------------------------------------------------------------- fetching


@dataclass(frozen=True)
class Page:
    """A fetched page: final URL (after redirects), title and readable text."""

    url: str
    title: str
    text: str
    status: int
    content_type: str
    bytes_read: int
    truncated: bool


def _check_host(url: str, allow_private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebError(f"cannot fetch {url!r}: only http(s) URLs with a host are allowed")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except socket.gaierror as exc:
        raise NetworkUnavailableError(f"cannot resolve {parts.hostname!r}: {exc.strerror}") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if address.is_private or address.is_loopback or address.is_link_local or address.is_reserved \
                or address.is_multicast or address.is_unspecified:
            raise WebError(f"refusing to fetch {url!r}: {parts.hostname} resolves to the non-public address "
                           f"{address}; pass allow_private=True to allow local and private hosts")


async def fetch_page(url: str, *, timeout_s: float = 15.0, connect_timeout_s: float = 3.0,
                     max_bytes: int = 2_000_000, allow_private: bool = False, max_redirects: int = 5) -> Page:
    """Download `url` (at most `max_bytes`) and extract its readable text. Raises `WebError`."""
    httpx = _need("httpx")
    timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"}
    async with httpx.AsyncClient(timeout=timeout, headers=headers, follow_redirects=False) as client:
        for _ in range(max_redirects + 1):
            await asyncio.to_thread(_check_host, url, allow_private)
            try:
                async with client.stream("GET", url) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(str(response.url), response.headers["location"])
                        continue
                    body, truncated = bytearray(), False
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) >= max_bytes:
                            truncated = True
                            break
                    status, content_type = response.status_code, response.headers.get("content-type", "")
                    encoding = response.encoding or "utf-8"
            except httpx.ConnectError as exc:
                raise NetworkUnavailableError(f"cannot connect to {urlsplit(url).netloc}: {exc}") from exc
            except httpx.TimeoutException as exc:
                raise WebError(f"fetching {url!r} timed out ({type(exc).__name__})") from exc
            except httpx.HTTPError as exc:
                raise WebError(f"fetching {url!r} failed: {type(exc).__name__}: {exc}") from exc
            break
        else:
            raise WebError(f"fetching {url!r}: more than {max_redirects} redirects")
    if status >= 400:
        raise WebError(f"fetching {url!r} returned HTTP {status}")
    text = bytes(body[:max_bytes]).decode(encoding, errors="replace")
    kind = content_type.split(";")[0].strip().lower()
    if kind in ("text/html", "application/xhtml+xml") or (not kind and "<html" in text[:2000].lower()):
        title, text = extract_text(text)
    elif not kind or kind.startswith("text/") or kind in ("application/json", "application/xml"):
        title = ""
    else:
        raise WebError(f"cannot read {url!r}: content type {kind!r} is not text or HTML")
    return Page(url=url, title=title, text=text, status=status, content_type=kind, bytes_read=len(body),
                truncated=truncated)


# ----------------------------------------------------------------------------- search


@dataclass(frozen=True)
class WebHit:
    """One search result."""

    title: str
    url: str
    snippet: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


_PROBE_CACHE: dict[tuple[str, int], tuple[float, str | None]] = {}


async def _probe(host: str, port: int, timeout_s: float) -> str | None:
    """None when a TCP connection to host:port opens within timeout_s, else the reason (cached)."""
    now = time.monotonic()
    cached = _PROBE_CACHE.get((host, port))
    if cached and now - cached[0] < (300.0 if cached[1] is None else 15.0):
        return cached[1]
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
        writer.close()
        reason = None
    except (OSError, TimeoutError) as exc:
        reason = f"{type(exc).__name__}: {exc}".rstrip(": ") if str(exc) else type(exc).__name__
    _PROBE_CACHE[(host, port)] = (now, reason)
    return reason


class WebSearch(Tool):
    """Web search through `ddgs` (metasearch over several engines) as a Tool named "web_search"."""

    name = "web_search"
    description = "Search the web. Returns the title, URL and a snippet of the top results."
    parameters = {"type": "object", "additionalProperties": False, "required": ["query"],  # noqa: RUF012
                  "properties": {"query": {"type": "string", "description": "the search query"},
                                 "max_results": {"type": "integer", "description": "how many results (1-20)"}}}

    def __init__(self, *, max_results: int = 5, timeout_s: float = 15.0, connect_timeout_s: float = 3.0,
                 backend: str = "auto", region: str = "us-en", safesearch: str = "moderate",
                 proxy: str | None = None, probe: tuple[str, int] | None = ("duckduckgo.com", 443),
                 name: str | None = None) -> None:
        super().__init__(name=name, timeout_s=timeout_s)
        if not 1 <= max_results <= 20:
            raise ToolError(f"WebSearch: max_results={max_results!r} must be in 1..20")
        self.max_results, self.connect_timeout_s = max_results, connect_timeout_s
        self.backend, self.region, self.safesearch, self.proxy = backend, region, safesearch, proxy
        if proxy and probe:
            parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            probe = (parts.hostname or "127.0.0.1", parts.port or 1080)
        self.probe = probe

    async def search(self, query: str, *, max_results: int | None = None) -> list[WebHit]:
        """The hits for `query`; raises `WebError` (or a ddgs exception) when the search fails."""
        if not query.strip():
            raise WebError("the search query is empty")
        if self.probe is not None:
            reason = await _probe(self.probe[0], self.probe[1], self.connect_timeout_s)
            if reason is not None:
                raise NetworkUnavailableError(f"cannot reach {self.probe[0]}:{self.probe[1]} within "
                                              f"{self.connect_timeout_s:g} s ({reason}); web search needs internet")
        ddgs = _need("ddgs")
        limit = max_results or self.max_results

        def run() -> list[dict[str, Any]]:
            client = ddgs.DDGS(proxy=self.proxy, timeout=max(1, int(self.connect_timeout_s + 2)))
            try:
                return client.text(query, max_results=limit, backend=self.backend, region=self.region,
                                   safesearch=self.safesearch)
            except ddgs.exceptions.DDGSException as exc:
                if "no results" in str(exc).lower():
                    return []
                raise
        rows = await asyncio.to_thread(run)
        return [WebHit(title=str(r.get("title", "")), url=str(r.get("href", r.get("url", ""))),
                       snippet=str(r.get("body", r.get("snippet", "")))) for r in rows[:limit]]

    async def invoke(self, *, query: str, max_results: int | None = None) -> ToolResult:
        if max_results is not None and not 1 <= max_results <= 20:
            raise WebError(f"max_results={max_results} must be in 1..20")
        hits = await self.search(query, max_results=max_results)
        if not hits:
            return ToolResult(content="No results found.", metadata={"hits": [], "query": query})
        content = "\n\n".join(f"Doc {i} (Title: {h.title}) {h.url}\n{h.snippet}" for i, h in enumerate(hits, 1))
        return ToolResult(content=content, metadata={"hits": [h.to_dict() for h in hits], "query": query})


class FetchPage(Tool):
    """Read a web page as a Tool named "fetch_page"; with a query, only the Search-o1 context window."""

    name = "fetch_page"
    description = ("Read a web page and return its text. Give a query to get only the part of the page around "
                   "the sentence that best matches it.")
    parameters = {"type": "object", "additionalProperties": False, "required": ["url"],  # noqa: RUF012
                  "properties": {"url": {"type": "string", "description": "an http(s) URL"},
                                 "query": {"type": "string", "description": "what to look for on the page"}}}

    def __init__(self, *, chars: int = 3000, timeout_s: float = 20.0, connect_timeout_s: float = 3.0,
                 max_bytes: int = 2_000_000, allow_private: bool = False, name: str | None = None) -> None:
        super().__init__(name=name, timeout_s=timeout_s)
        self.chars, self.connect_timeout_s, self.max_bytes = chars, connect_timeout_s, max_bytes
        self.allow_private = allow_private

    async def invoke(self, *, url: str, query: str | None = None) -> ToolResult:
        page = await fetch_page(url, timeout_s=self.timeout_s or 20.0, connect_timeout_s=self.connect_timeout_s,
                                max_bytes=self.max_bytes, allow_private=self.allow_private)
        text = context_window(page.text, query, chars=self.chars) if query else page.text[: 2 * self.chars]
        return ToolResult(content=text, metadata={"url": page.url, "title": page.title, "status": page.status,
                                                  "chars": len(page.text), "truncated": page.truncated})
