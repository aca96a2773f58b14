"""Start llama-cpp-python's OpenAI-compatible server on loopback (tests, benchmarks, local serving).

    with LlamaCppServer() as server:          # embedded SmolLM2 by default
        llm = load_llm(server.uri)            # openai://127.0.0.1:PORT/v1?model=smollm2&tokenizer=default

The server runs as a child process (`python -m llama_cpp.server`, extra `llamacpp`) with
`logits_all` on, so it returns logprobs; `stop()` terminates it. Not a production server: one
model, one sequence at a time.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from agentic_infer.errors import BackendError

log = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaCppServer:
    """A llama.cpp OpenAI-compatible server child process on 127.0.0.1."""

    def __init__(self, model_path: str | os.PathLike | None = None, *, port: int | None = None,
                 alias: str = "smollm2", n_ctx: int = 4096, n_threads: int | None = None,
                 startup_timeout_s: float = 120.0):
        if model_path is None:
            from agentic_infer.backends.llamacpp import default_model_path

            model_path = default_model_path()
        self.model_path = Path(model_path)
        self.port = port or free_port()
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout_s = startup_timeout_s
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def uri(self) -> str:
        tok = "default" if self.model_path.name.startswith("SmolLM2") else str(self.model_path)
        return f"openai://127.0.0.1:{self.port}/v1?model={self.alias}&tokenizer={tok}"

    def start(self) -> LlamaCppServer:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path), "--model_alias",
               self.alias, "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--logits_all", "True", "--verbose", "False", "--interrupt_requests", "False"]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        self._log = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a full pipe would block the server
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.seek(0)
                err = self._log.read()
                raise BackendError(f"llama.cpp server exited with {self.proc.returncode}: {err[-800:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise BackendError(f"llama.cpp server on port {self.port} not ready after {self.startup_timeout_s}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
