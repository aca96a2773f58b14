"""The retail user's side: the instruction user's confirmation rule, the simulated (LLM) user with FakeLLM and
once with the embedded SmolLM2, and the user's state across snapshot/restore."""

import asyncio

import pytest

from agentic_infer.envs.retail.user import STOP, InstructionUser, LLMUserConfig, asks_confirmation
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM

CANCEL = {"order_id": "#W8955613", "reason": "no longer needed"}


@pytest.mark.parametrize("message", [
    "I will cancel order #W8955613 (reason: no longer needed). Do you confirm?",
    "Please reply yes/no to proceed.",
    "Shall I go ahead and cancel it?",
    "Would you like me to exchange the kettle for the 2L one?",
    "Type 'yes' to continue.",
    "Can I proceed with the return of both items?",
])
def test_confirmation_requests(message):
    assert asks_confirmation(message)


@pytest.mark.parametrize("message", [
    "Your order has been cancelled. Is there anything else I can help with?",
    "Could you give me your email address?",
    "I have found your account.",
    "",
])
def test_not_confirmation_requests(message):
    assert not asks_confirmation(message)


def test_instruction_user_confirms_once_per_write():
    user = InstructionUser("Cancel #W8955613.")
    assert user.first_message() == "Cancel #W8955613."
    assert user.reply("Please confirm (yes/no).") == "yes"
    assert user.reply("Please confirm (yes/no).") is None  # no write used the first yes: the episode ends
    user.note_write()
    assert user.reply("Next: shall I also change the address?") == "yes"
    assert user.reply("All done. Anything else?") is None


def test_env_reply_instruction_mode(retail_env):
    env = retail_env({"id": "u", "instruction": "Cancel #W8955613 because no longer needed.", "actions": []})
    assert env.first_observation() == "Cancel #W8955613 because no longer needed."
    assert asyncio.run(env.reply("Cancel #W8955613, reason no longer needed: confirm?")) == "yes"
    snap = env.snapshot()
    assert asyncio.run(env.reply("Confirm once more?")) is None
    env.restore(snap)  # the user's state comes back with the env's
    env.call("get_order_details", {"order_id": "#W8955613"})  # a read does not use the confirmation
    assert asyncio.run(env.reply("Confirm once more?")) is None
    env.restore(snap)
    env.call("cancel_pending_order", CANCEL)
    assert asyncio.run(env.reply("Shall I also return something?")) == "yes"
    assert env.said[-1] == "Shall I also return something?"


def test_llm_user_with_fake_llm(retail_env):
    llm = FakeLLM(["Hi, I want to cancel an order.", "It is #W8955613, I no longer need it.", "yes",
                   f"Thanks! {STOP}"])
    env = retail_env({"id": "u", "instruction": "You are Olivia Lopez. Cancel #W8955613 (no longer needed).",
                      "actions": []}, user="llm", user_backend=llm)
    assert env.first_observation() == "Hi, I want to cancel an order."
    assert env.first_observation() == "Hi, I want to cancel an order."  # generated once
    assert "You are Olivia Lopez. Cancel #W8955613" in llm.prompts[0] and "###STOP###" in llm.prompts[0]
    assert "Hi! How can I help you today?" in llm.prompts[0]
    assert asyncio.run(env.reply("Which order?")) == "It is #W8955613, I no longer need it."
    # roles are flipped: the agent's words are the LLM's user turn, the user's own are its assistant turns
    assert "user\nWhich order?" in llm.prompts[1] and "assistant\nHi, I want to cancel an order." in llm.prompts[1]
    snap = env.snapshot()
    assert asyncio.run(env.reply("Cancel #W8955613? Confirm.")) == "yes"
    assert asyncio.run(env.reply("Done.")) is None  # ###STOP### ends the episode
    assert asyncio.run(env.reply("Anything else?")) is None  # and it stays ended, no more generations
    assert llm.remaining == 0 and len(llm.prompts) == 4
    env.restore(snap)
    assert env.user.turns == 1 and not env.user.stopped and len(env.user.messages) == 5


def test_llm_user_first_message_inside_an_event_loop(retail_env):
    env = retail_env({"id": "u", "instruction": "Return a kettle.", "actions": []}, user="llm",
                     user_backend=FakeLLM(["I'd like to return a kettle."]))

    async def agent():
        return env.first_observation()  # the engine calls it from async code

    assert asyncio.run(agent()) == "I'd like to return a kettle."
    other = retail_env({"id": "u", "instruction": "Return a kettle.", "actions": []}, user="llm",
                       user_backend=FakeLLM(["Hello, a return please."]))
    assert asyncio.run(other.afirst_observation()) == "Hello, a return please."
    assert other.first_observation() == "Hello, a return please."  # generated once


def test_llm_user_gives_up_after_max_turns(retail_env):
    env = retail_env({"id": "u", "instruction": "x", "actions": []}, user="llm",
                     user_backend=FakeLLM(reply="hm?"), user_config=LLMUserConfig(max_turns=2))
    env.first_observation()
    assert [asyncio.run(env.reply("?")) for _ in range(3)] == ["hm?", "hm?", None]
    with pytest.raises(ConfigError, match="max_turns"):
        LLMUserConfig(max_turns=0)


def test_llm_user_with_the_embedded_model(retail_env, embedded_llm):
    env = retail_env({"id": "u", "instruction": "Your name is Olivia Lopez and your zip code is 92107. Cancel "
                                                "order #W8955613 because you no longer need it.", "actions": []},
                     user="llm", user_backend=embedded_llm, user_config=LLMUserConfig(max_tokens=24))
    first = env.first_observation()
    assert isinstance(first, str) and first.strip()
    answer = asyncio.run(env.reply("Sure. Could you tell me your name and zip code?"))
    assert answer is None or answer.strip()
    assert len(env.user.messages) == 5  # system, opening, first message, the agent's question, the answer
    assert "Olivia Lopez" in env.user.messages[0].content  # ~2 s on 2 cores: not marked slow
