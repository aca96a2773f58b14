"""Shared fixtures: the embedded model (in process and behind a real OpenAI-compatible server) and data paths.

Under `CI=true` a skip is a failure: a missing test extra (an `importorskip`) or missing `../shared/data`
would otherwise turn whole modules green when an install breaks. Skips for what a host may lack by design
say so with a reason starting `host:` (e.g. no Landlock on this kernel) and stay skips.
"""

from __future__ import annotations

import os
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


@pytest.fixture()
def count_llama_tokens(monkeypatch):
    """`count_llama_tokens(llm) -> counts`: from then on (for this test), `counts` gets one entry per generation
    of the llama.cpp backend `llm`: the tokens `Llama.generate` yielded in the backend's worker thread, whether
    or not anyone consumed them (backend-side evidence for cancellation tests)."""

    def install(llm) -> list[int]:
        llama = llm.llama
        counts: list[int] = []
        generate = llama.generate

        def counting_generate(*args, **kwargs):
            counts.append(0)
            for tok in generate(*args, **kwargs):
                counts[-1] += 1
                yield tok

        monkeypatch.setattr(llama, "generate", counting_generate)
        return counts

    return install


@pytest.fixture(scope="session")
def hf_smollm2():
    """The embedded SmolLM2-135M as a transformers model (`hf://DIR`, float32 on CPU), loaded once per session.

    Dequantising the GGUF in transformers takes ~40 s on 2 cores, so the first use converts it once into a
    plain transformers directory (safetensors + tokenizer.json, ~0.5 GB) under the asset cache; later
    sessions load that in about a second. `tests/agentic_infer/backends/test_hf.py` (slow) keeps
    testing the `?gguf_file=` path itself.
    """
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from agentic_infer.assets import cache_dir
    from agentic_infer.backends import load_llm
    from agentic_infer.backends.llamacpp import default_model_path

    gguf = default_model_path()
    target = cache_dir() / "test-models" / f"{gguf.stem}-hf-f32"
    if not (target / "model.safetensors").exists():
        _gguf_to_hf_dir(gguf, target)
    return load_llm(f"hf://{target}?device=cpu&dtype=float32")


def _gguf_to_hf_dir(gguf: Path, target: Path) -> None:
    """Dequantise `gguf` with transformers and write it as a plain transformers model directory (atomically)."""
    from train.model_io import gguf_to_hf

    gguf_to_hf(gguf, target)


@pytest.fixture()
def fault_proxy(llama_server):
    """A `FaultProxy` in front of `llama_server` (fresh per test): script faults with `set_faults`, read what
    the server side saw in `requests` (arrival / finish times) and `peak_in_flight`."""
    from agentic_infer.fault_proxy import FaultProxy

    with FaultProxy(f"127.0.0.1:{llama_server.port}") as proxy:
        yield proxy


@pytest.fixture(scope="session")
def slurm_cluster():
    """The one-node Slurm cluster of `make slurm-up` (installed and started here when missing, stopped after if
    this fixture started it)."""
    import shutil

    from agentic_infer import slurm_local

    if not shutil.which("slurmctld") and (os.geteuid() != 0 or not shutil.which("apt-get")):
        pytest.skip("host: installing Slurm needs root and apt-get")
    started = not slurm_local.is_up()
    slurm_local.up()
    yield slurm_local.PARTITION
    if started:
        slurm_local.down()


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and report.skipped and not hasattr(report, "wasxfail") and not _host_skip(report):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, which must run every test: {_skip_reason(report)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and report.skipped and not _host_skip(report):  # a module-level importorskip
        report.outcome = "failed"
        report.longrepr = f"module skipped under CI=true, which must run every test: {_skip_reason(report)}"


def _skip_reason(report) -> str:
    lr = report.longrepr
    return lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)


def _host_skip(report) -> bool:
    return _skip_reason(report).removeprefix("Skipped: ").startswith("host:")
