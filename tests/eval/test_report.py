"""Reports: comparison table with intervals, per-question diffs, PNG plots, Markdown twin."""

from __future__ import annotations

import itertools
import json

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.testing import FakeLLM
from eval.report import write_report
from eval.runner import RunConfig, run_eval
from tests.eval.test_eval_runner import HOTPOT, search_o1_script


async def test_report_renders(tmp_path):
    data = tmp_path / "hq.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in HOTPOT), encoding="utf-8")
    base = dict(task="hotpotqa", data=str(data), settings={"sampling": {"max_tokens": 256}})
    await run_eval(RunConfig(engine="direct", out=str(tmp_path / "direct"), **base), llm=FakeLLM(reply="\\boxed{Yes}"),
                   progress=False)
    await run_eval(RunConfig(engine="search-o1", corpus="per-question", out=str(tmp_path / "so1"), **base),
                   llm=FakeLLM(search_o1_script), progress=False)
    answers = itertools.cycle(["\\boxed{Rush}", "\\boxed{Yes}", "\\boxed{Yes}", "\\boxed{Rush}"])
    await run_eval(RunConfig(engine="cot", samples=4, out=str(tmp_path / "sampled"),
                             **{**base, "settings": {"sampling": {"max_tokens": 256, "temperature": 0.7}}}),
                   llm=FakeLLM(lambda p: next(answers)), progress=False)
    paths = write_report([tmp_path / "direct", tmp_path / "so1", tmp_path / "sampled"], out=tmp_path / "r" / "report.html")
    names = {p.name for p in paths}
    assert {"report.html", "report.md", "accuracy_vs_tokens.png", "search_calls.png", "budget.png"} <= names
    for p in paths:
        assert p.stat().st_size > 200
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "r" / "report.html").read_text()
    md = (tmp_path / "r" / "report.md").read_text()
    assert "<b>0.500</b>" in html and "0.500 [" in md and "search-o1" in html and "Search-o1 EM" in html
    assert "Per-question diff: direct vs so1" in md and "so1 better on 4" in md
    assert "report_files/accuracy_vs_tokens.png" in html


def test_report_needs_runs(tmp_path):
    with pytest.raises(ConfigError, match="no results.jsonl rows"):
        write_report([tmp_path], out=tmp_path / "r.html")
