"""TIR (ToRL / ZeroTIR and ARTIST's template) through the agent loop with the real Python sandbox."""

import pytest

from agentic_infer.engines.tir import TIR, TIRConfig
from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.tools.sandbox import PythonSandbox


@pytest.fixture(scope="module")
def sandbox():
    return PythonSandbox(timeout_s=5)


async def test_tir_runs_code_inserts_output_and_compresses_errors(sandbox):
    llm = FakeLLM(["Compute.\n```python\nprint(2**10)\n```\n", "Now an error.\n```python\nprint(a)\n```\n",
                   "So \\boxed{1024}"])
    traj = (await TIR(llm, sandbox).run({"question": "2^10?"})).trajectory
    assert traj.segments[2].text == "```output\n1024\n```\n"
    assert traj.segments[4].text == "```output\nNameError: name 'a' is not defined\n```\n"
    assert traj.steps[1].error == "NameError: name 'a' is not defined"
    assert traj.answer == "1024" and traj.usage.tool_calls == 2 and traj.usage.tool_errors == 1


async def test_tir_tool_call_cap_inserts_budget_message(sandbox):
    block = "```python\nprint(1)\n```\n"
    llm = FakeLLM([block, block, "\\boxed{1}"])
    traj = (await TIR(llm, sandbox, max_tool_calls=1).run({"question": "q"})).trajectory
    assert [s.metadata["status"] for s in traj.steps] == ["executed", "limit"]
    assert "budget is exhausted" in traj.segments[4].text and traj.usage.tool_calls == 1


async def test_artist_template(sandbox):
    llm = FakeLLM(["<think>use python</think><python>print(6*7)</python>", "<answer>42</answer>"])
    traj = (await TIR(llm, sandbox, dialect="artist").run({"question": "6*7"})).trajectory
    assert traj.segments[2].text == "\n<output>\n42\n</output>\n" and traj.answer == "42"


async def test_rollout_shape_ids_and_config(sandbox):
    llm = FakeLLM(["```python\nprint(6*7)\n```\n", "\\boxed{42}"])
    rollout = await TIR(llm, sandbox, TIRConfig(max_turns=3)).run({"id": "q1", "question": "6*7?"})
    traj = rollout.trajectory
    assert rollout.example_id == "q1" and rollout.answer == "42" and rollout.engine == "tir/tir"
    assert traj.group_id == "q1" and traj.token_exact and traj.finish_reason == "answer"
    assert traj.steps[0].segment == 1 and traj.segments[1].kind == "model"
    assert traj.trl_rollout()["env_mask"].count(0) == len(traj.segments[2].token_ids)  # the output is not trained
    assert llm.prompt_ids[-1] == traj.token_ids()[: len(llm.prompt_ids[-1])]  # the last turn generated from ids


def test_config_validation():
    with pytest.raises(ConfigError, match="TIRConfig.dialect='search_o1' is not a code dialect"):
        TIRConfig(dialect="search_o1")
    with pytest.raises(ConfigError, match="max_tool_calls=-1"):
        TIRConfig(max_tool_calls=-1)
    with pytest.raises(ConfigError, match="unknown setting 'max_calls'"):
        TIR(FakeLLM([]), PythonSandbox(), max_calls=2)
    with pytest.raises(ConfigError, match="no 'question'"):
        TIR(FakeLLM([]), PythonSandbox()).messages({"text": "x"})
