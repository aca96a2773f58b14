"""Eval results on fixed FakeLLM runs of every engine equal a recorded golden file.

The golden file (`fakellm_golden.json`) was written before the engine contract was unified (one
`Engine.run -> Rollout`, one runner); this test holds every refactor to "what users see does not
change". Regenerate it only for an intended change: `AGENTIC_REGEN_GOLDEN=1 pytest tests/eval/test_fakellm_golden.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentic_infer.testing import FakeLLM
from eval.runner import RunConfig, run_eval
from eval.summary import read_results

GOLDEN = Path(__file__).with_name("fakellm_golden.json")
STABLE = ("id", "index", "question", "gold", "prediction", "metrics", "completion_tokens", "prompt_tokens",
          "tool_calls", "search_calls", "llm_calls", "unfinished", "output", "predictions")
HOTPOT = [{"_id": f"q{i}", "question": f"Which band recorded song number {i}?", "answer": "Rush" if i % 2 else "Yes",
           "supporting_facts": [["Rush", 0]],
           "context": [["Rush", [f"Rush recorded song number {i}.", " Rush is Canadian."]],
                       ["Other", ["An unrelated paragraph about cheese."]]]} for i in range(4)]
GSM = [{"question": "What is 16-3-4?", "answer": "so\n#### 9"}, {"question": "What is 2+3?", "answer": "so\n#### 5"}]


def search_policy(prompt: str) -> str:
    if "**Searched Documents:**" in prompt:
        return "**Final Information**\nRush recorded it."
    tail = prompt.rsplit("<|im_start|>assistant", 1)[-1]
    if "<|end_search_result|>" in tail:
        return "The documents say Rush. \\boxed{Rush}"
    number = prompt.rsplit("song number ", 1)[-1].split("?")[0]
    return f"I should search. <|begin_search_query|>song number {number}<|end_search_query|>"


def tir_policy(prompt: str) -> str:
    tail = prompt.rsplit("<|im_start|>assistant", 1)[-1]
    if "```output" in tail:
        return "So the answer is \\boxed{" + tail.split("```output\n", 1)[1].split("\n", 1)[0] + "}"
    expr = prompt.rsplit("What is ", 1)[-1].split("?")[0]
    return f"```python\nprint({expr})\n```"


def counting_policy():
    n = {"i": 0}

    def policy(prompt: str) -> str:
        n["i"] += 1
        return f"Thinking step {n['i']}. The answer is \\boxed{{{9 if n['i'] % 3 else 5}}}"

    return policy


RUNS = {
    "direct": (dict(task="hotpotqa", engine="direct"), lambda: FakeLLM(reply="\\boxed{Rush}")),
    "cot_samples": (dict(task="hotpotqa", engine="cot", samples=3), counting_policy),
    "search_o1": (dict(task="hotpotqa", engine="search-o1", corpus="per-question", settings={"sampling": {"max_tokens": 256}}),
                  lambda: FakeLLM(search_policy)),
    "search_o1_first_query": (dict(task="hotpotqa", engine="search-o1", corpus="per-question",
                                   settings={"sampling": {"max_tokens": 256}, "first_query": "question"}),
                              lambda: FakeLLM(lambda p: "**Final Information**\nRush." if "**Searched Documents:**" in p
                                              else "The answer is \\boxed{Rush}")),
    "tir": (dict(task="gsm8k", engine="tir", settings={"sampling": {"max_tokens": 128}}), lambda: FakeLLM(tir_policy)),
    "deepconf": (dict(task="gsm8k", engine="deepconf", samples=4, settings={"sampling": {"max_tokens": 64}}), counting_policy),
    "lats": (dict(task="game24", engine="lats", settings={"iterations": 2}),
             lambda: FakeLLM(lambda p: "4 * 6 = 24\nScore: 7")),
    "rap": (dict(task="game24", engine="rap", settings={"iterations": 2}),
            lambda: FakeLLM(lambda p: "4 * 6 = 24\nScore: 7")),
}


def _data(tmp_path: Path, task: str) -> Path:
    if task == "hotpotqa":
        p = tmp_path / "hq.jsonl"
        p.write_text("\n".join(json.dumps(r) for r in HOTPOT), encoding="utf-8")
    elif task == "gsm8k":
        p = tmp_path / "g.jsonl"
        p.write_text("\n".join(json.dumps(r) for r in GSM), encoding="utf-8")
    else:
        p = tmp_path / "g24.csv"
        p.write_text("Rank,Puzzles\n1,4 6 1 1\n2,1 2 3 4\n")
    return p


async def _rows(name: str, tmp_path: Path) -> dict:
    cfg, make_llm = RUNS[name]
    llm = make_llm()
    llm = llm if isinstance(llm, FakeLLM) else FakeLLM(llm)
    out = tmp_path / name
    await run_eval(RunConfig(data=str(_data(tmp_path, cfg["task"])), out=str(out), **cfg), llm=llm, progress=False)
    return {r["id"]: {k: r.get(k) for k in STABLE} for r in read_results(out / "results.jsonl")}


@pytest.mark.parametrize("name", sorted(RUNS))
async def test_eval_rows_equal_the_golden_file(name, tmp_path):
    rows = await _rows(name, tmp_path)
    if os.environ.get("AGENTIC_REGEN_GOLDEN"):
        golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        golden[name] = rows
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        return
    assert rows == json.loads(json.dumps(json.loads(GOLDEN.read_text())[name]))
