"""Models in and out of training: backend URIs -> a trainable transformers model; checkpoints -> what backends serve.

    model, tokenizer = load_trainable("llamacpp://default")      # the embedded GGUF, dequantised (float32 weights)
    save_checkpoint(model, tokenizer, "out/")                     # HF folder (LoRA merged first)
    export_gguf("out/", "out/policy.gguf", outtype="f16")          # llama.cpp's convert_hf_to_gguf.py

URIs: `llamacpp://default`, `llamacpp:///path/model.gguf`, `hf:///dir`, `hf:///dir?gguf_file=x.gguf` (and a
bare local directory or `.gguf` path). A model transformers loaded from a GGUF refuses `save_pretrained`
("quantized with gguf and is not serializable"), so a GGUF source is rebuilt from its config without
`quantization_config` and given the dequantised state dict; the result is cached as a plain HF folder under
`agentic_infer.assets.cache_dir()/hf-from-gguf/` (dequantising SmolLM2-135M takes ~40 s on 2 cores, once).

GGUF export runs llama.cpp's `convert_hf_to_gguf.py` (with its `conversion/` and `gguf-py/` folders), which
ships only in the llama-cpp-python *source* distribution: the first export downloads that sdist with pip
(`pip download --no-binary :all: --no-deps llama-cpp-python==0.3.36`) and extracts just the converter into
the cache (`llama-cpp-converter-0.3.36/`). It imports `sentencepiece` even for BPE models (extra `train`).
Not covered: quantised exports other than what the converter's `--outtype` offers (f32, f16, bf16, q8_0).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from agentic_infer.assets import cache_dir
from agentic_infer.errors import ConfigError

log = logging.getLogger(__name__)

CONVERTER_VERSION = "0.3.36"  # llama-cpp-python, the same pin as the `llamacpp` extra
_CONVERTER_MEMBERS = ("convert_hf_to_gguf.py", "conversion/", "gguf-py/")
OUTTYPES = ("f32", "f16", "bf16", "q8_0")


@dataclass(frozen=True)
class ModelSource:
    """Where a `--model` URI points: a directory, optionally a GGUF file inside it."""

    directory: Path
    gguf_file: str | None = None
    tokenizer: Path | None = None

    @property
    def is_gguf(self) -> bool:
        return self.gguf_file is not None


def resolve_model(uri: str) -> ModelSource:
    """Map a backend URI (or a local path) onto files transformers can read; no hub names."""
    if "://" not in uri:
        p = Path(uri).expanduser()
        if p.suffix == ".gguf":
            return ModelSource(p.parent, p.name)
        return ModelSource(p)
    parts = urlsplit(uri)
    opts = dict(parse_qsl(parts.query))
    location = (parts.netloc + parts.path).strip()
    if parts.scheme == "llamacpp":
        if location in ("default", ""):
            from agentic_infer.backends.llamacpp import default_model_path

            path = default_model_path()
        else:
            path = Path(parts.path if not parts.netloc else location)
        return ModelSource(path.parent, path.name)
    if parts.scheme == "hf":
        tok = Path(opts["tokenizer"]) if opts.get("tokenizer") else None
        return ModelSource(Path(location), opts.get("gguf_file"), tok)
    raise ConfigError(f"--model {uri!r}: training reads local weights; use llamacpp://default, "
                      "llamacpp:///path/model.gguf, hf:///dir or hf:///dir?gguf_file=x.gguf")


def load_trainable(uri: str) -> tuple[Any, Any]:
    """`(model, tokenizer)` for training from a backend URI; a GGUF source becomes a plain (serialisable) model.
    The weights are float32 whatever the run's precision: `train.precision` keeps fp32 master weights in every
    mode and sets only the autocast dtype."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from train.precision import WEIGHT_DTYPE

    src = resolve_model(uri)
    directory = hf_dir_for(src) if src.is_gguf else src.directory
    if not (directory / "config.json").exists():
        raise ConfigError(f"--model {uri!r}: {directory} has no config.json; pass a transformers model folder "
                          "or a .gguf file")
    tokenizer = AutoTokenizer.from_pretrained(str(src.tokenizer or directory), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=WEIGHT_DTYPE, local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def hf_dir_for(src: ModelSource) -> Path:
    """The cached plain-HF folder of a GGUF source (converted once, atomically)."""
    gguf = src.directory / (src.gguf_file or "")
    if not gguf.is_file():
        raise ConfigError(f"GGUF file {str(gguf)!r} does not exist")
    st = gguf.stat()
    target = cache_dir() / "hf-from-gguf" / f"{gguf.stem}-{st.st_size}-{int(st.st_mtime)}"
    if not (target / "config.json").exists():
        gguf_to_hf(gguf, target)
    return target


def gguf_to_hf(gguf: Path, target: Path) -> Path:
    """Dequantise `gguf` through transformers and save it as a plain HF folder (identical logits)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kw = {"gguf_file": gguf.name, "local_files_only": True}
    log.info("dequantising %s into %s (once)", gguf, target)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), dtype=torch.float32, **kw)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), **kw)
    model = rebuild_plain(loaded)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def rebuild_plain(model: Any) -> Any:
    """A copy of `model` built from its config without `quantization_config` (so `save_pretrained` works)."""
    from transformers import AutoModelForCausalLM

    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=next(model.parameters()).dtype)
    plain.load_state_dict(model.state_dict())
    plain.generation_config = model.generation_config
    return plain.eval()


def save_checkpoint(model: Any, tokenizer: Any, out: str | Path) -> Path:
    """Save an HF folder the hf and vLLM backends load: a LoRA adapter is merged into the weights first."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "merge_and_unload"):  # peft
        model = model.merge_and_unload()
    if getattr(model.config, "quantization_config", None) is not None:
        model = rebuild_plain(model)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


# -- GGUF export -----------------------------------------------------------------------------------------------
def save_trained(trainer: Any, tokenizer: Any, out: str | Path, *, gguf: str) -> tuple[Path, str | None, bool]:
    """After `trainer.train()`: rank 0 (or the one process) saves the HF checkpoint into `out` and, unless `gguf` is
    "none", `policy.gguf` beside it; other ranks of a launched job (`--processes`) save nothing. Returns the folder,
    the GGUF path (None when not written here) and whether this process saved."""
    main = trainer.is_world_process_zero()
    if not main:
        return Path(out), None, False
    dest = save_checkpoint(trainer.model, tokenizer, out)
    return dest, None if gguf == "none" else str(export_gguf(dest, dest / "policy.gguf", outtype=gguf)), True


def converter_dir() -> Path:
    """llama.cpp's converter (script, `conversion/`, `gguf-py/`), extracted once from the pinned sdist."""
    target = cache_dir() / f"llama-cpp-converter-{CONVERTER_VERSION}"
    if (target / "convert_hf_to_gguf.py").exists():
        return target
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        sdist = _find_sdist() or _download_sdist(Path(tmp))
        staging = Path(tmp) / "converter"
        _extract_converter(sdist, staging)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


def _find_sdist() -> Path | None:
    name = f"llama_cpp_python-{CONVERTER_VERSION}.tar.gz"
    for d in (cache_dir(), Path(os.environ.get("AGENTIC_SDIST_DIR", "/nonexistent"))):
        if (d / name).is_file():
            return d / name
    return None


def _download_sdist(dest: Path) -> Path:
    log.info("downloading the llama-cpp-python==%s source distribution (once) for convert_hf_to_gguf.py",
             CONVERTER_VERSION)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "--quiet",
                           "-d", str(dest), f"llama-cpp-python=={CONVERTER_VERSION}"], capture_output=True, text=True)
    found = list(dest.glob("llama_cpp_python-*.tar.gz"))
    if proc.returncode != 0 or not found:
        raise ConfigError(f"could not download llama-cpp-python=={CONVERTER_VERSION}'s sdist (for the GGUF converter): "
                          f"{proc.stderr.strip()[-400:]}; place llama_cpp_python-{CONVERTER_VERSION}.tar.gz in "
                          f"{cache_dir()} or set AGENTIC_SDIST_DIR")
    return found[0]


def _extract_converter(sdist: Path, staging: Path) -> None:
    prefix = f"llama_cpp_python-{CONVERTER_VERSION}/vendor/llama.cpp/"
    with tarfile.open(sdist) as tar:
        members = []
        for m in tar.getmembers():
            rel = m.name[len(prefix):] if m.name.startswith(prefix) else None
            if rel and (m.isfile() or m.isdir()) and rel.startswith(_CONVERTER_MEMBERS) and ".." not in rel:
                m.name = rel
                members.append(m)
        if not any(m.name == "convert_hf_to_gguf.py" for m in members):
            raise ConfigError(f"{sdist.name} holds no vendor/llama.cpp/convert_hf_to_gguf.py; the pin may be wrong")
        tar.extractall(staging, members=members, filter="data")


def export_gguf(hf_dir: str | Path, out_file: str | Path, *, outtype: str = "f16", timeout_s: float = 1800) -> Path:
    """Convert an HF folder into a GGUF file that `llamacpp:///out_file` serves."""
    if outtype not in OUTTYPES:
        raise ConfigError(f"outtype={outtype!r}: must be one of {OUTTYPES}")
    try:
        import sentencepiece  # noqa: F401  (the converter imports it even for BPE vocabularies)
    except ImportError as e:
        raise ConfigError("GGUF export needs sentencepiece: pip install 'agentic-infer[train]'") from e
    conv = converter_dir()
    out_file = Path(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(conv / "gguf-py"), str(conv),
                                                        os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    cmd = [sys.executable, str(conv / "convert_hf_to_gguf.py"), str(hf_dir), "--outfile", str(out_file),
           "--outtype", outtype]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    if proc.returncode != 0 or not out_file.is_file():
        raise ConfigError(f"convert_hf_to_gguf.py failed on {hf_dir} (exit {proc.returncode}): "
                          f"{proc.stderr.strip()[-800:]}")
    return out_file
