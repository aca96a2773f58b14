"""Local tokenizers (with their chat templates) for backends that talk to a remote model.

`load_tokenizer(spec)`:
- `default`: the embedded SmolLM2 GGUF's vocabulary;
- a path to a `.gguf` file: that file's vocabulary (llama.cpp, `vocab_only=True`: no weights loaded);
- any other local path: a transformers tokenizer (extra `hf`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic_infer.backends.chat_template import ChatTemplate
from agentic_infer.errors import ConfigError


class LocalTokenizer:
    """encode / decode plus the chat template, whatever the source."""

    def __init__(self, encode: Any, decode: Any, template: ChatTemplate, source: str):
        self._encode = encode
        self._decode = decode
        self.template = template
        self.source = source

    def encode(self, text: str) -> list[int]:
        return list(self._encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self._decode(list(ids))


def _gguf_tokenizer(path: Path) -> LocalTokenizer:
    try:
        from llama_cpp import Llama
    except ImportError as e:
        raise ConfigError("reading a GGUF tokenizer needs llama-cpp-python: pip install 'agentic-infer[llamacpp]'") from e
    from agentic_infer.backends.llamacpp import LlamaCppTokenizer

    vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
    tok = LlamaCppTokenizer(vocab)
    template = ChatTemplate.from_gguf_metadata(vocab.metadata, tok)
    return LocalTokenizer(tok.encode, tok.decode, template, str(path))


def _hf_tokenizer(path: str) -> LocalTokenizer:
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise ConfigError("a transformers tokenizer needs the hf extra: pip install 'agentic-infer[hf]'") from e
    hf = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if not hf.chat_template:
        raise ConfigError(f"tokenizer at {path!r} has no chat_template; pass raw text prompts instead of messages")
    template = ChatTemplate(hf.chat_template, bos_token=hf.bos_token or "", eos_token=hf.eos_token or "")
    return LocalTokenizer(lambda t: hf.encode(t, add_special_tokens=False), hf.decode, template, path)


def load_tokenizer(spec: str) -> LocalTokenizer:
    if spec == "default":
        from agentic_infer.backends.llamacpp import default_model_path

        return _gguf_tokenizer(default_model_path())
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ConfigError(f"tokenizer={spec!r}: no such GGUF file; pass an existing path or 'default'")
        return _gguf_tokenizer(path)
    if not path.exists():
        raise ConfigError(f"tokenizer={spec!r}: no such local path (hub names are not fetched); pass a local "
                          "directory with tokenizer files, a .gguf file, or 'default'")
    return _hf_tokenizer(str(path))
