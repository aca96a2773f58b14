"""Shared fixtures: the embedded model (in process and behind a real OpenAI-compatible server) and data paths."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(relative: str) -> Path:
    """Path of a file under ../shared/data, skipping the test when it is absent (a user's machine)."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared benchmark data is only present in CI and dev sessions")
    return path


@pytest.fixture(scope="session")
def embedded_llm():
    """SmolLM2-135M-Instruct in process (llama.cpp), loaded once per session."""
    pytest.importorskip("llama_cpp")
    from agentic_infer.backends.llamacpp import LlamaCppLLM

    return LlamaCppLLM(n_ctx=2048)


@pytest.fixture(scope="session")
def llama_server():
    """llama-cpp-python's OpenAI-compatible server on loopback, serving the embedded GGUF."""
    pytest.importorskip("llama_cpp.server")
    from agentic_infer.backends.llamacpp_server import LlamaCppServer

    with LlamaCppServer(n_ctx=2048) as server:
        yield server
