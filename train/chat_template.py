"""A ChatML chat template with `{% generation %}` markers, for TRL's `assistant_only_loss` on messages data.

    tok = training_tokenizer(tokenizer)   # a copy whose template marks assistant content (SFT on messages only)

transformers computes `assistant_masks` from `{% generation %}...{% endgeneration %}` blocks, and TRL's
`assistant_only_loss=True` refuses a template without them (SmolLM2's has none). `chatml_generation_template`
renders exactly like a plain ChatML template (`<|im_start|>{role}\n{content}<|im_end|>\n` per message, the
generation prompt `<|im_start|>assistant\n`), with the optional default system message some models insert
(SmolLM2's "You are a helpful AI assistant named SmolLM, ..."); inside the markers are each assistant message's
content and its `<|im_end|>` (the end of turn is trained, the newline after it is not). `training_tokenizer`
reads the default system message off the tokenizer's own template, so the rendering is the model's, and
returns a copy: the saved checkpoint keeps the model's own template (llama.cpp's GGUF template reader does not
know the `generation` tag). Not covered: non-ChatML templates (pass one with markers yourself, e.g. through
`trl: {chat_template_path: ...}`), tool calls inside assistant messages (rendered as content only).
"""

from __future__ import annotations

import copy
from typing import Any

from agentic_infer.errors import ConfigError

_SYSTEM = ("{%- if messages and messages[0]['role'] != 'system' %}"
           "{{- '<|im_start|>system\\n' + DEFAULT_SYSTEM + '<|im_end|>\\n' }}{%- endif %}")
_BODY = ("{%- for message in messages %}"
         "{{- '<|im_start|>' + message['role'] + '\\n' }}"
         "{%- if message['role'] == 'assistant' %}"
         "{% generation %}{{- message['content'] + '<|im_end|>' }}{% endgeneration %}{{- '\\n' }}"
         "{%- else %}{{- message['content'] + '<|im_end|>\\n' }}{%- endif %}"
         "{%- endfor %}"
         "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def chatml_generation_template(default_system: str | None = None) -> str:
    """ChatML with `{% generation %}` around assistant content + `<|im_end|>`; `default_system` is inserted
    as a system message when the conversation opens without one."""
    if default_system is None:
        return _BODY
    if "'" in default_system or "\\" in default_system:
        raise ConfigError("default_system must not contain quotes or backslashes (it is inlined into the template)")
    return _SYSTEM.replace("DEFAULT_SYSTEM", f"'{default_system}'") + _BODY


def default_system(tokenizer: Any) -> str | None:
    """The system message `tokenizer`'s own template inserts before a conversation that has none (None: none)."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False)
    head = "<|im_start|>system\n"
    if text.startswith(head) and "<|im_end|>" in text:
        return text[len(head):text.index("<|im_end|>")]
    return None


def training_tokenizer(tokenizer: Any) -> Any:
    """`tokenizer` itself when its template already has `{% generation %}` markers, else a copy with
    `chatml_generation_template(default_system(tokenizer))` (ChatML models only; ConfigError otherwise)."""
    template = getattr(tokenizer, "chat_template", None) or ""
    if "{% generation %}" in template or "{%- generation %}" in template:
        return tokenizer
    if template and "<|im_start|>" not in template:
        raise ConfigError("assistant_only_loss on messages needs a chat template with {% generation %} markers; this "
                          "model's template is not ChatML, so pass one through trl: {chat_template_path: FILE}")
    system = default_system(tokenizer) if template else None
    tok = copy.deepcopy(tokenizer)
    tok.chat_template = chatml_generation_template(system)
    return tok


__all__ = ["chatml_generation_template", "default_system", "training_tokenizer"]
