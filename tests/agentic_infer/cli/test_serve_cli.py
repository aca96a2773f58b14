"""`agentic serve retriever` as a real subprocess over a real BM25 index, queried over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="`agentic serve` needs the `serve` extra")
pytest.importorskip("uvicorn", reason="`agentic serve` needs the `serve` extra")
pytest.importorskip("bm25s", reason="BM25 indexes need the `search` extra")

from agentic_infer.tools.retrieval.client import RemoteRetriever  # noqa: E402
from tests.sample_docs import SAMPLE_DOCS  # noqa: E402

REPO = Path(__file__).resolve().parents[3]

DOCS = SAMPLE_DOCS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _agentic(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentic_infer", *args]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentic_infer.tools.retrieval.index import build_index

    out = tmp_path_factory.mktemp("serve") / "idx"
    build_index(DOCS, out=out, kind="bm25")
    return out


def test_serve_retriever_subprocess_answers_search_r1_requests(index_dir: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        _agentic("serve", "retriever", "--index", str(index_dir), "--host", "127.0.0.1", "--port", str(port)),
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"server exited early with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
                )
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("server did not answer /health within 60s")
            time.sleep(0.2)
        health = httpx.get(f"{url}/health").json()
        assert health["index_size"] == len(DOCS) and health["retriever"] == "BM25Index"

        r = httpx.post(
            f"{url}/retrieve", json={"queries": ["capital of Canada"], "topk": 2, "return_scores": True}
        )
        item = r.json()["result"][0][0]
        assert item["document"] == {"id": "ottawa", "contents": DOCS[2].contents} and item["score"] > 0

        remote = RemoteRetriever(url)
        assert remote.search(["Opera House"], 1)[0][0].id == "sydney"
        assert remote.get("dune") == DOCS[3]
        assert httpx.post(f"{url}/retrieve", json={"queries": []}).status_code == 422
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert proc.returncode == 0, out
    assert f"on http://127.0.0.1:{port}" in out


def test_serve_retriever_missing_index_is_one_line_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    missing = tmp_path / "nope"
    proc = subprocess.run(
        _agentic("serve", "retriever", "--index", str(missing), "--port", str(_free_port())),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and "does not exist" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
