"""Optional LLM rewording of a template intent (`agentic synth envtasks --backend URI`).

    text, prompt = await reword(llm, template_text, seed=task.seed)

Any backend (`load_llm(uri)`, cached by the runner with `CachedLLM`) gets one chat message asking it to
rewrite the instruction in its own words while keeping every id, name, email, zip code, product, option value,
address, payment detail and reason verbatim; its reply (stripped of quotes and a leading "Rewritten:" label)
becomes the instruction. The reworded text then faces the same argument checks as a template's
(`synth.envtasks.verify.check_task`), so a rewording that loses the order id is dropped with
`intent_missing:order_id`, never kept. Not covered: several rewordings per task, rewording by a judge loop.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_infer.types import Message, SamplingParams

PROMPT = ("Rewrite the following instruction for a customer who will talk to a store's support agent. Write it "
          "in the second person (\"You ...\"), in natural words, in at most four sentences. Keep every name, "
          "email, zip code, order id (with its #), product name, option value, address, payment method and "
          "reason exactly as written. Reply with the rewritten instruction only.\n\nInstruction: {intent}")
_LABEL = re.compile(r"^\s*(rewritten( instruction)?|instruction)\s*:\s*", re.IGNORECASE)


def reword_prompt(intent: str) -> str:
    return PROMPT.format(intent=intent)


def clean_reply(text: str) -> str:
    text = _LABEL.sub("", text.strip())
    if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return " ".join(text.split())


async def reword(llm: Any, intent: str, *, seed: int, max_tokens: int = 256,
                 temperature: float = 0.7) -> tuple[str, str]:
    """`(reworded instruction, the prompt sent)`; seeded per task so a rerun (and the cache) agree."""
    prompt = reword_prompt(intent)
    rendered = llm.render([Message("user", prompt)], add_generation_prompt=True)
    [completion] = await llm.generate(rendered, SamplingParams(max_tokens=max_tokens, temperature=temperature,
                                                               seed=seed % (2 ** 31)))
    return clean_reply(completion.text), prompt


__all__ = ["PROMPT", "clean_reply", "reword", "reword_prompt"]
