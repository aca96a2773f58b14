"""`agentic serve retriever`: serve a local search index over Search-R1's HTTP API.

    agentic serve retriever --index DIR --host 127.0.0.1 --port 8000

`DIR` is an index built by `agentic index ...` (loaded with `load_index`). The server answers
`POST /retrieve`, `POST /access` and `GET /health` (see `agentic_infer.tools.retrieval.server`).
Needs the `serve` extra (FastAPI, uvicorn); it is imported only when the command runs, so `agentic`
itself works without it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from agentic_infer.cli.app import serve_app
from agentic_infer.errors import ConfigError

logger = logging.getLogger(__name__)


@serve_app.command("retriever")
def retriever(
    index: Annotated[Path, typer.Option(help="Index directory (built by `agentic index ...`).")],
    host: Annotated[
        str, typer.Option(help="Address to bind; keep loopback unless you need more.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    default_topk: Annotated[int, typer.Option(help="topk for requests that give none.")] = 3,
    max_topk: Annotated[int, typer.Option(help="Largest topk a request may ask for.")] = 100,
    batch_window_ms: Annotated[
        float, typer.Option(help="Wait this long to merge concurrent requests.")
    ] = 2.0,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve a search index over Search-R1's API (POST /retrieve, POST /access, GET /health)."""
    try:
        from agentic_infer.tools.retrieval.server import ServerLimits, serve
    except ModuleNotFoundError as e:
        raise ConfigError(f"{e}; `agentic serve retriever` needs `pip install 'agentic-infer[serve]'`") from e
    from agentic_infer.tools.retrieval.index import load_index

    if not 0 < port < 65536:
        raise ConfigError(f"--port must be in 1..65535, got {port}")
    limits = ServerLimits(default_topk=default_topk, max_topk=max_topk, batch_window_ms=batch_window_ms)
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    loaded = load_index(index)
    size = _size(loaded)
    typer.echo(
        f"serving {type(loaded).__name__} from {index} ({size} passages) on http://{host}:{port}", err=True
    )
    serve(loaded, host, port, limits=limits, log_level=log_level.lower())


def _size(obj: object) -> str:
    try:
        return str(len(obj))  # type: ignore[arg-type]
    except TypeError:
        return "?"
