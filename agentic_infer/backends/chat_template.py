"""Chat templates rendered locally with Jinja2, as transformers does.

The template comes from a GGUF file's metadata (`tokenizer.chat_template`) or from a transformers
tokenizer. Rendering locally lets every backend continue a partial assistant turn by raw-prompt
continuation (the completions API), which the agent loop relies on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.types import Message

# A plain ChatML template for models that ship none.
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class ChatTemplate:
    """A compiled Jinja2 chat template plus the special tokens it refers to."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = ""):
        from jinja2.exceptions import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> None:
            raise TemplateError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        self.source = source
        self._template = env.from_string(source)
        self.bos_token = bos_token
        self.eos_token = eos_token

    @classmethod
    def from_gguf_metadata(cls, metadata: dict[str, str], tokenizer: Any) -> ChatTemplate:
        source = metadata.get("tokenizer.chat_template") or CHATML

        def special(key: str) -> str:
            tid = metadata.get(key)
            return tokenizer.decode([int(tid)]) if tid is not None else ""

        return cls(source, bos_token=special("tokenizer.ggml.bos_token_id"),
                   eos_token=special("tokenizer.ggml.eos_token_id"))

    def render(self, messages: Sequence[Message | dict[str, Any]], *, add_generation_prompt: bool = True,
               **extra: Any) -> str:
        from jinja2.exceptions import TemplateError

        msgs = [m.to_dict() if isinstance(m, Message) else dict(m) for m in messages]
        try:
            return self._template.render(messages=msgs, add_generation_prompt=add_generation_prompt,
                                         bos_token=self.bos_token, eos_token=self.eos_token, **extra)
        except TemplateError as e:
            raise ConfigError(f"chat template rejected the messages: {e}; check roles and their order") from e
