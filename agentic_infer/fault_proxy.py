"""A fault-injecting HTTP proxy on loopback, for testing clients against a flaky server.

    with FaultProxy(upstream="127.0.0.1:8000", faults=["500", "429:1", "drop", "ok"]) as proxy:
        ...  # point the client at proxy.base_url

Each incoming request consumes the next fault of the script (then "ok" forever):
- `ok`: forward to the upstream and relay its response;
- `500`, `503`, `400`, ...: answer that status with a JSON error body, not forwarded;
- `429:S`: answer 429 with `Retry-After: S`;
- `drop`: close the connection without answering;
- `slow:S`: wait S seconds, then forward (to trip client timeouts).
`proxy.log` records (fault, path) per request; `proxy.requests` the same with timestamps
(`Seen.arrived` when the request was read, `Seen.answered` when the last byte of the response went to
the client, `Seen.finished` when the proxy was done with it, all `time.monotonic()`), so a test can check
retry delays as the server saw them; `proxy.peak_in_flight` is the most requests open at once, each from
arrival until its response was fully sent (not until the proxy's own clean-up, which can lag the
client's next request): a client's concurrency as the server sees it. HTTP/1.1 with Content-Length bodies only; each connection carries one request
(`Connection: close`). Runs in a thread with its own event loop.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from agentic_infer.backends.llamacpp_server import free_port

REASONS = {400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error",
           502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass
class Seen:
    """One request as the proxy saw it: its fault, path, and monotonic arrival / finish times."""

    fault: str
    path: str
    arrived: float
    answered: float | None = None  # the last byte of the response was written to the client
    finished: float | None = None


class FaultProxy:
    def __init__(self, upstream: str, faults: Sequence[str] = (), *, port: int | None = None):
        host, _, uport = upstream.rpartition(":")
        self.upstream = (host or "127.0.0.1", int(uport))
        self.faults = list(faults)
        self.port = port or free_port()
        self.log: list[tuple[str, str]] = []
        self.requests: list[Seen] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def set_faults(self, faults: Sequence[str]) -> None:
        with self._lock:
            self.faults = list(faults)
            self.log.clear()
            self.requests.clear()

    @property
    def peak_in_flight(self) -> int:
        """The most requests open at once, each from arrival until its response was sent (or the proxy gave up)."""
        with self._lock:
            events = []
            for r in self.requests:
                end = r.answered or r.finished
                events += [(r.arrived, 1), (end if end is not None else float("inf"), -1)]
        peak = now = 0
        for _, step in sorted(events, key=lambda e: (e[0], e[1])):  # an end before a start at the same instant
            now += step
            peak = max(peak, now)
        return peak

    def _next_fault(self) -> str:
        with self._lock:
            return self.faults.pop(0) if self.faults else "ok"

    async def _read_request(self, reader: asyncio.StreamReader) -> tuple[bytes, bytes, str]:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        body = await reader.readexactly(length) if length else b""
        path = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
        return head, body, path

    @staticmethod
    def _close_header(head: bytes) -> bytes:
        lines = [ln for ln in head.rstrip(b"\r\n").split(b"\r\n") if not ln.lower().startswith(b"connection:")]
        return b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self._serve(reader, writer)
        finally:
            self._writers.discard(writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head, body, path = await self._read_request(reader)
        except (asyncio.IncompleteReadError, ValueError, IndexError):
            writer.close()
            return
        fault = self._next_fault()
        seen = Seen(fault, path, time.monotonic())
        with self._lock:
            self.log.append((fault, path))
            self.requests.append(seen)
        try:
            kind, _, arg = fault.partition(":")
            if kind == "drop":
                writer.transport.abort()
                return
            if kind.isdigit():
                status = int(kind)
                payload = json.dumps({"error": {"message": f"injected {status}", "type": "fault_proxy"}}).encode()
                extra = f"Retry-After: {arg}\r\n" if arg else ""
                writer.write((f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
                              f"Content-Length: {len(payload)}\r\n{extra}Connection: close\r\n\r\n").encode() + payload)
                await writer.drain()
                return
            if kind == "slow":
                await asyncio.sleep(float(arg or 5))
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            up_writer.write(self._close_header(head) + body)
            await up_writer.drain()
            while chunk := await up_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
                seen.answered = time.monotonic()  # the upstream may close its socket well after the last chunk
            up_writer.close()
        except (ConnectionError, OSError):
            pass
        finally:
            with self._lock:
                seen.finished = time.monotonic()
            if not writer.transport.is_closing():
                writer.close()

    def start(self) -> FaultProxy:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", self.port))
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._shutdown())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fault-proxy", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    async def _shutdown(self) -> None:
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await self._server.wait_closed()
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
