"""The retail user's side: an instruction-following user that confirms, or an LLM that plays the user.

    user = InstructionUser(instruction)
    user.first_message()                     # the instruction text itself
    user.reply("Shall I cancel #W5765741? Please confirm (yes/no).")   # "yes"
    user.reply("Done, anything else?")       # None: the episode ends, that message is the final response

    user = LLMUser(instruction, llm)         # tau-bench's user role, with our own wording of its prompt
    await user.afirst_message(); await user.reply("I can help. What is your email?")

The instruction user's rule: it answers "yes" when the agent's message asks for confirmation (it says
"confirm", "yes/no" or "(yes)", or it asks "shall/should/may I ...", "do you want me to ...", "would you like
me to ...", "can I go ahead / proceed ...?") AND no earlier "yes" is still waiting for the write it allowed;
a consequential call (`note_write`) uses up the confirmation. Anything else ends the episode (None). So an
agent gets at most one "yes" per write and cannot loop on confirmations.

The LLM user sees the instruction and rules in its system prompt, the agent's messages as the `user` role
and its own as `assistant` (roles flipped, as tau-bench does), sends one message per reply, and ends the
episode with "###STOP###" (reply returns None) or after `max_turns` replies. Not covered: tau-bench's
ReAct / verify / reflection user strategies, a human user.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentic_infer.completions import Message, SamplingParams
from agentic_infer.errors import ConfigError

STOP = "###STOP###"
OPENING = "Hi! How can I help you today?"
_CONFIRM = re.compile(
    r"\bconfirm|\byes\s*/\s*no\b|\(yes\)|\"yes\"|'yes'|"
    r"\b(shall|should|may|can) i\b[^?]*\?|"
    r"\b(do|would) you (want|like) (me|us) to\b[^?]*\?|"
    r"\b(go ahead|proceed)\b[^?]*\?", re.IGNORECASE)


def asks_confirmation(message: str) -> bool:
    """Whether an agent message asks the user to confirm an action (the rule in the module docstring)."""
    return bool(_CONFIRM.search(message or ""))


class InstructionUser:
    """Says the instruction, then confirms once per pending consequential action; otherwise ends."""

    def __init__(self, instruction: str):
        self.instruction = instruction
        self.awaiting_write = False  # a "yes" was given and no write has used it yet

    def first_message(self) -> str:
        return self.instruction

    def reply(self, message: str) -> str | None:
        if asks_confirmation(message) and not self.awaiting_write:
            self.awaiting_write = True
            return "yes"
        return None

    def note_write(self) -> None:
        self.awaiting_write = False

    def state(self) -> dict[str, Any]:
        return {"awaiting_write": self.awaiting_write}

    def set_state(self, state: dict[str, Any]) -> None:
        self.awaiting_write = bool(state.get("awaiting_write", False))


@dataclass
class LLMUserConfig:
    """Sampling for the simulated user."""

    max_tokens: int = 200
    temperature: float = 0.0
    max_turns: int = 30  # replies before the user gives up (returns None)

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError(f"LLMUserConfig.max_tokens={self.max_tokens}: must be >= 1; give a positive budget")
        if self.temperature < 0:
            raise ConfigError(f"LLMUserConfig.temperature={self.temperature}: must be >= 0; use 0 for greedy")
        if self.max_turns < 1:
            raise ConfigError(f"LLMUserConfig.max_turns={self.max_turns}: must be >= 1")


def user_system_prompt(instruction: str) -> str:
    return (
        "You are playing a customer who is chatting with a customer-service agent of an online store.\n\n"
        f"Your goal and persona:\n{instruction}\n\n"
        "How to play:\n"
        "- Write one short message per turn, as the customer would type it.\n"
        "- Reveal only what the agent needs for the current step; do not dump the whole goal at once.\n"
        "- Never invent facts that your goal does not give (an order id, an email): say you do not know it.\n"
        "- When the agent lists an action that matches your goal and asks you to confirm, answer yes.\n"
        "- Put the goal in your own words rather than repeating it verbatim, and keep to the persona.\n"
        f"- When your goal is done (or cannot be done), send {STOP} alone to end the chat."
    )


class LLMUser:
    """tau-bench's LLM user: one generated message per reply; STOP (or max_turns) ends the episode."""

    def __init__(self, instruction: str, llm: Any, *, config: LLMUserConfig | None = None):
        if isinstance(llm, str):
            from agentic_infer.backends import load_llm

            llm = load_llm(llm)
        if llm is None:
            raise ConfigError("user='llm' needs user_backend= (an LLM from load_llm, or a backend URI such as "
                              "'llamacpp://default')")
        self.instruction = instruction
        self.llm = llm
        self.config = config or LLMUserConfig()
        self.messages: list[Message] = [Message("system", user_system_prompt(instruction)),
                                        Message("user", OPENING)]
        self.turns = 0
        self.stopped = False

    async def _generate(self) -> str | None:
        prompt = self.llm.render(self.messages, add_generation_prompt=True)
        params = SamplingParams(max_tokens=self.config.max_tokens, temperature=self.config.temperature)
        [completion] = await self.llm.generate(prompt, params)
        text = completion.text.strip()
        self.messages.append(Message("assistant", text))
        if STOP in text:
            self.stopped = True
            return None
        return text

    async def afirst_message(self) -> str:
        """The user's opening message (generated once; an immediate STOP opens with the instruction)."""
        if len(self.messages) > 2:
            return self.messages[2].content
        text = await self._generate()
        return text if text else self.instruction

    async def reply(self, message: str) -> str | None:
        if self.stopped or self.turns >= self.config.max_turns:
            return None
        self.turns += 1
        self.messages.append(Message("user", message))
        return await self._generate()

    def note_write(self) -> None:
        return None

    def state(self) -> dict[str, Any]:
        return {"messages": [m.to_dict() for m in self.messages], "turns": self.turns, "stopped": self.stopped}

    def set_state(self, state: dict[str, Any]) -> None:
        self.messages = [Message.from_dict(m) for m in state.get("messages", self.messages)]
        self.turns = int(state.get("turns", 0))
        self.stopped = bool(state.get("stopped", False))

