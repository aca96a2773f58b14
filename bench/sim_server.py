"""A simulated continuous-batching OpenAI-compatible server, to measure agent scheduling without a GPU.

    from sim_server import SimConfig, SimServer            # from a script in bench/
    with SimServer(SimConfig(max_batch=16)) as server:      # a child process on 127.0.0.1
        llm = load_llm(server.uri(concurrency=64))          # openai://...&flavor=vllm&stops=server
        ...
        server.reset(); ...; print(server.stats())

    .venv/bin/python bench/sim_server.py --port 8011 --max-batch 16      # serve in the foreground
    .venv/bin/python bench/sim_server_check.py                           # assert the accounting

The cost model, the scripted outputs and the accounting (utilisation, ideal makespan) live in
`bench/sim_engine.py`; this file is the HTTP front (FastAPI + uvicorn) in vLLM's wire format:
`POST /v1/completions` (text prompt, streaming or not; `stop`, `include_stop_str_in_output`,
`stop_reason` in the choice, logprobs with 4-character "tokens", HTTP 400 past `max_model_len`),
`GET /v1/models` (`owned_by: vllm`, so our backend detects the vLLM flavor), `GET /stats`
(`SimEngine.stats()`), `POST /reset` (clears statistics and the prefix cache; 409 while requests
run), `GET /health`. A streamed request whose client disconnects is aborted at the next step.

`SimServer` runs it as a child process so that its clock and event loop are not shared with the
client being measured. Not covered: the chat API, n > 1, token-id prompts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI, Request  # module level: FastAPI resolves the handlers' annotations here
from fastapi.responses import JSONResponse, StreamingResponse
from sim_engine import (
    QUERY_BEGIN,
    QUERY_END,
    RESULT_BEGIN,
    RID_MARKER,
    ScriptedPolicy,
    SimConfig,
    SimEngine,
    sim_answer,
    sim_query,
    sim_question,
)

__all__ = ["QUERY_BEGIN", "QUERY_END", "RESULT_BEGIN", "RID_MARKER", "ScriptedPolicy", "SimConfig", "SimEngine",
           "SimServer", "create_app", "serve", "sim_answer", "sim_query", "sim_question"]


# -- HTTP ------------------------------------------------------------------------------------------------
def _logprobs(chunks: list[str], offset: int) -> dict[str, Any]:
    offsets, pos = [], offset
    for ch in chunks:
        offsets.append(pos)
        pos += len(ch)
    return {"tokens": chunks, "token_logprobs": [-0.05] * len(chunks), "top_logprobs": [{ch: -0.05} for ch in chunks],
            "text_offset": offsets}


def create_app(cfg: SimConfig) -> Any:
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: Any):
        state["engine"] = engine = SimEngine(cfg)
        task = asyncio.create_task(engine.run())
        yield
        task.cancel()

    app = FastAPI(lifespan=lifespan)

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"object": "error", "message": message, "type": "BadRequestError", "code": status},
                            status_code=status)

    @app.get("/health")
    async def health() -> dict:
        return {"ok": True}

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": cfg.model, "object": "model", "owned_by": "vllm"}]}

    @app.get("/stats")
    async def stats() -> dict:
        return state["engine"].stats()

    @app.post("/reset")
    async def reset() -> Any:
        try:
            state["engine"].reset()
        except RuntimeError as e:
            return error(409, f"{e}; wait for the running requests to finish")
        return {"ok": True}

    @app.post("/v1/completions")
    async def completions(request: Request) -> Any:
        body = await request.json()
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            return error(400, "the simulator takes one text prompt (no token ids, no batches of prompts)")
        if int(body.get("n", 1)) != 1:
            return error(400, f"n={body.get('n')}: the simulator serves n=1 only")
        stop = body.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        want_lp = body.get("logprobs") is not None
        engine: SimEngine = state["engine"]
        try:
            r = engine.submit(prompt, max_tokens=int(body.get("max_tokens") or 16), stop=stop,
                              include_stop=bool(body.get("include_stop_str_in_output")),
                              stream=bool(body.get("stream")))
        except ValueError as e:
            return error(400, str(e))
        head = {"id": f"cmpl-{r.id}", "object": "text_completion", "created": int(time.time()), "model": cfg.model}
        usage = {"prompt_tokens": r.prompt_tokens, "completion_tokens": r.steps,
                 "total_tokens": r.prompt_tokens + r.steps}
        if r.stream is None:
            try:
                await asyncio.shield(r.done)
            except asyncio.CancelledError:  # the client went away
                engine.cancel(r)
                raise
            choice = {"index": 0, "text": r.text, "logprobs": _logprobs(r.chunks, 0) if want_lp else None,
                      "finish_reason": r.finish_reason, "stop_reason": r.stop_reason}
            return {**head, "choices": [choice], "usage": usage}

        async def events():
            offset = 0
            try:
                while (chunk := await r.stream.get()) is not None:
                    lp = _logprobs([chunk], offset) if want_lp else None
                    offset += len(chunk)
                    choice = {"index": 0, "text": chunk, "logprobs": lp, "finish_reason": None}
                    yield f"data: {json.dumps({**head, 'choices': [choice]})}\n\n"
                if r.cancelled:
                    return
                choice = {"index": 0, "text": "", "logprobs": None, "finish_reason": r.finish_reason,
                          "stop_reason": r.stop_reason}
                yield f"data: {json.dumps({**head, 'choices': [choice], 'usage': usage})}\n\n"
                yield "data: [DONE]\n\n"
            finally:
                engine.cancel(r)  # a no-op once finished; aborts the sequence if the client left early

        return StreamingResponse(events(), media_type="text/event-stream")

    return app


def serve(cfg: SimConfig, *, host: str = "127.0.0.1", port: int = 8011) -> None:
    import uvicorn

    uvicorn.run(create_app(cfg), host=host, port=port, log_level="warning", access_log=False)


class SimServer:
    """The simulator as a child process on 127.0.0.1 (its own event loop and clock)."""

    def __init__(self, cfg: SimConfig = SimConfig(), *, port: int | None = None, startup_timeout_s: float = 60.0):
        import socket

        self.cfg = cfg
        if port is None:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
        self.port = port
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def uri(self, *, concurrency: int = 64, stops: str = "server", tokenizer: str = "default") -> str:
        """An `openai://` backend URI for this server (its client-side concurrency limit included; the
        simulator reads text prompts only, so token-id prompts go as text)."""
        return (f"openai://127.0.0.1:{self.port}/v1?model={self.cfg.model}&tokenizer={tokenizer}&flavor=vllm"
                f"&stops={stops}&concurrency={concurrency}&token_prompts=off")

    def __enter__(self) -> SimServer:
        import httpx

        self._log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, __file__, "--port", str(self.port), "--config",
                                      json.dumps(asdict(self.cfg))], stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.seek(0)
                raise RuntimeError(f"simulated server exited with {self.proc.returncode}: {self._log.read()[-800:]}")
            try:
                if httpx.get(f"{self.base_url}/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError(f"simulated server did not answer on port {self.port} in {self.startup_timeout_s}s")

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None

    def stats(self) -> dict[str, Any]:
        import httpx

        return httpx.get(f"{self.base_url}/stats", timeout=10).json()

    def reset(self) -> None:
        import httpx

        httpx.post(f"{self.base_url}/reset", timeout=10).raise_for_status()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--config", default=None, help="SimConfig fields as JSON")
    ap.add_argument("--max-batch", type=int, default=None)
    args = ap.parse_args()
    fields = json.loads(args.config) if args.config else {}
    if args.max_batch is not None:
        fields["max_batch"] = args.max_batch
    serve(SimConfig(**fields), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
