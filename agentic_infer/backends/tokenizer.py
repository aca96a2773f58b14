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
    """A GGUF or transformers tokenizer plus the model's chat template, whatever the source.

    `encode(text, add_special=True)` follows the encode semantics of `agentic_infer.backends.base`
    (the source tokenizer's own BOS policy for a sequence start; nothing added for a mid-sequence piece).
    """

    def __init__(self, inner: Any, template: ChatTemplate, source: str):
        self.inner = inner  # a LlamaCppTokenizer or HFTokenizer
        self.template = template
        self.source = source

    def encode(self, text: str, add_special: bool = True) -> list[int]:
        return self.inner.encode(text, add_special=add_special)

    def decode(self, ids: Sequence[int]) -> str:
        return self.inner.decode(list(ids))


def _gguf_tokenizer(path: Path) -> LocalTokenizer:
    try:
        from llama_cpp import Llama
    except ImportError as e:
        raise ConfigError("reading a GGUF tokenizer needs llama-cpp-python: pip install 'agentic-infer[llamacpp]'") from e
    from agentic_infer.backends.llamacpp import LlamaCppTokenizer

    vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
    tok = LlamaCppTokenizer(vocab)
    template = ChatTemplate.from_gguf_metadata(vocab.metadata, tok)
    return LocalTokenizer(tok, template, str(path))


def _hf_tokenizer(path: str) -> LocalTokenizer:
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise ConfigError("a transformers tokenizer needs the hf extra: pip install 'agentic-infer[hf]'") from e
    from agentic_infer.backends.hf import HFTokenizer

    hf = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if not hf.chat_template:
        raise ConfigError(f"tokenizer at {path!r} has no chat_template; pass raw text prompts instead of messages")
    template = ChatTemplate(hf.chat_template, bos_token=hf.bos_token or "", eos_token=hf.eos_token or "")
    return LocalTokenizer(HFTokenizer(hf), template, path)


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
