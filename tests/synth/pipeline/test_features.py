"""The rollout's driver (refill while records pass on, bounded), progress bars, LLM judges from the config,
per-question corpora for searching engines."""

import json
import re
import threading
import time

import pytest

from agentic_infer.config import build_config
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Trajectory
from synth.pipeline import JudgeConfig, PipelineConfig, Reader, RolloutStep, run_pipeline
from synth.pipeline import progress as P
from synth.pipeline.records import doc_trajectory
from tests.synth.pipeline.conftest import write_nq

# ----------------------------------------------------------------------------------- rollout driver


def test_rollout_takes_new_items_while_a_record_is_passed_on_and_stays_bounded(tmp_path):
    data = write_nq(tmp_path / "nq.jsonl", 20)
    prompts: list[str] = []
    enough = threading.Event()

    def script(prompt):
        prompts.append(prompt)
        if len(prompts) >= 5:
            enough.set()
        return "\\boxed{a0}"

    step = RolloutStep(engine="direct", backend="fake://", task="nq-open", samples=1, settings={"sampling": {"max_tokens": 8}}, concurrency=2,
                       make_llm=lambda: FakeLLM(script))
    out = step(Reader(kind="task", task="nq-open", path=str(data))())
    next(out)  # downstream holds the first record: the loop must go on taking items meanwhile
    assert enough.wait(5), f"only {len(prompts)} items started while a record was passed on"
    time.sleep(0.3)
    assert len(prompts) == 5  # 2 x concurrency items waiting to be consumed + the one being passed on
    assert len(list(out)) == 19 and len(prompts) == 20


def test_engine_errors_drop_the_item_other_errors_raise(tmp_path):
    data = write_nq(tmp_path / "nq.jsonl", 4)

    def script(prompt):
        if "number 2 " in prompt:
            raise BackendError("server went away")
        return "\\boxed{a0}"

    step = RolloutStep(engine="direct", backend="fake://", task="nq-open", settings={"sampling": {"max_tokens": 8}},
                       make_llm=lambda: FakeLLM(script))
    kept = list(step(Reader(kind="task", task="nq-open", path=str(data))()))
    assert len(kept) == 3 and step.stats["dropped_engine_error"].total == 1 and step.stats["total"].total == 4

    def broken(prompt):
        raise ValueError("a bug")

    step = RolloutStep(engine="direct", backend="fake://", task="nq-open", settings={"sampling": {"max_tokens": 8}},
                       make_llm=lambda: FakeLLM(broken))
    with pytest.raises(ValueError, match="a bug"):
        list(step(Reader(kind="task", task="nq-open", path=str(data))()))


# ----------------------------------------------------------------------------------- progress


class Recorder:
    bars: list = []

    def __init__(self, total, *, done=0, label="", enabled=True):
        self.total, self.label, self.advanced, self.closed = total, label, 0, False
        Recorder.bars.append(self)

    def advance(self, n=1):
        self.advanced += n

    def close(self):
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    Recorder.bars = []
    monkeypatch.setattr(P, "Progress", Recorder)
    monkeypatch.setattr(P, "on_terminal", lambda: True)
    return Recorder.bars


def _rollout_cfg(out, data, **executor):
    return build_config(PipelineConfig, overrides={
        "out": str(out), "reader": {"kind": "task", "task": "nq-open", "path": str(data)},
        "rollout": {"engine": "direct", "backend": "fake://?reply=\\boxed{a1}", "samples": 2, "settings": {"sampling": {"max_tokens": 16}}},
        "judge": {"metrics": ["em"]}, "filters": ["correct"], "executor": executor})


def test_progress_counts_rollout_items_against_the_reader_total(tmp_path, nq_file, bars):
    run_pipeline(_rollout_cfg(tmp_path / "o", nq_file))
    assert [(b.total, b.advanced, b.closed) for b in bars] == [(6, 6, True)]
    bars.clear()
    run_pipeline(_rollout_cfg(tmp_path / "t", nq_file, tasks=2))  # one worker: each task its own bar, its share
    assert [(b.total, b.advanced, b.closed) for b in bars] == [(3, 3, True), (3, 3, True)]


def test_progress_without_rollout_counts_records_as_they_pass(tmp_path, nq_file, bars):
    run_pipeline(_rollout_cfg(tmp_path / "o", nq_file, progress=False))
    assert bars == []  # executor.progress=false: no bar
    cfg = build_config(PipelineConfig, overrides={"out": str(tmp_path / "f"), "reader": {
        "kind": "trajectories", "path": str(tmp_path / "o")}, "filters": ["exact_dedup"]})
    run_pipeline(cfg)
    assert [(b.total, b.advanced, b.closed) for b in bars] == [(4, 4, True)]  # the 4 correct records read


def test_no_progress_off_a_terminal_or_with_several_workers(tmp_path, nq_file, bars, monkeypatch):
    run_pipeline(_rollout_cfg(tmp_path / "w", nq_file, tasks=2, workers=2))
    monkeypatch.setattr(P, "on_terminal", lambda: False)
    run_pipeline(_rollout_cfg(tmp_path / "o", nq_file))
    assert bars == []


def test_cli_no_progress_flag(tmp_path, nq_file, bars):
    from agentic_infer.cli import main

    args = ["synth", "rollouts", "--task", "nq-open", "--data", str(nq_file), "--backend", "fake://?reply=x",
            "--set", "rollout.settings.sampling.max_tokens=8"]
    for out, flag in (("a", ["--no-progress"]), ("b", [])):
        with pytest.raises(SystemExit) as e:
            main([*args, "--out", str(tmp_path / out), *flag])
        assert e.value.code == 0
    assert [(b.total, b.advanced) for b in bars] == [(6, 6)]  # the run without --no-progress only


# ----------------------------------------------------------------------------------- LLM judges


def test_llm_judges_from_the_config(tmp_path, nq_file):
    out = tmp_path / "o"
    judges = [{"name": "judge_acc", "backend": "fake://?reply=equivalent: true", "verdict": "json"},
              {"name": "yn", "backend": "fake://?reply=No, equivalent: true", "verdict": "yes-no"}]  # one token: No
    cfg = build_config(PipelineConfig, overrides={
        "out": str(out), "reader": {"kind": "task", "task": "nq-open", "path": str(nq_file)},
        "rollout": {"engine": "direct", "backend": "fake://?reply=\\boxed{a1}", "samples": 2, "settings": {"sampling": {"max_tokens": 16}}},
        "judge": {"metrics": ["em", *judges], "concurrency": 4}, "filters": ["correct:metric=judge_acc"]})
    stats = run_pipeline(cfg)
    by = {s["step"]: s for s in stats["steps"]}
    assert by["judge"]["correct:judge_acc"] == 12 and by["judge"]["correct:em"] == 4
    assert "correct:yn" not in by["judge"] and by["judge"]["judge_calls"] == 24
    assert by["judge"]["judge_backend_calls"] == 12  # 6 distinct (question, answer) pairs per judge: the rest cached
    trajs = [Trajectory.from_json(x) for f in (out / "trajectories").glob("*.jsonl") for x in f.read_text().splitlines()]
    assert len(trajs) == 12 and all(t.rewards["judge_acc"] == 1.0 and t.rewards["yn"] == 0.0 for t in trajs)
    assert (out / "cache" / "judge-judge_acc.sqlite3").exists()
    cfg.filters = []  # a changed config reruns every step: the verdicts come back from the judges' caches
    again = {s["step"]: s for s in run_pipeline(cfg)["steps"]}
    assert again["judge"]["judge_calls"] == 24 and again["judge"]["judge_backend_calls"] == 0


def test_judge_spec_errors_name_the_key():
    with pytest.raises(ConfigError, match="unknown key.*'model'"):
        JudgeConfig(metrics=("em", {"name": "j", "backend": "fake://", "model": "x"}))
    with pytest.raises(ConfigError, match="judge verdict 'maybe': choose one of json, yes-no"):
        JudgeConfig(metrics=({"name": "j", "backend": "fake://", "verdict": "maybe"},))
    with pytest.raises(ConfigError, match="not a backend URI"):
        JudgeConfig(metrics=({"name": "j", "backend": "localhost"},))
    with pytest.raises(ConfigError, match="metric name or"):
        JudgeConfig(metrics=({"name": "j"},))
    with pytest.raises(ConfigError, match="unknown metric"):
        JudgeConfig(metrics=("emm",))
    from synth.pipeline import JudgeStep

    with pytest.raises(ConfigError, match="given twice"):
        JudgeStep(metrics=("em",), judge_specs=[{"name": "em", "backend": "fake://"}])


# ----------------------------------------------------------------------------------- per-question corpora

HOTPOT = [{"_id": f"q{i}", "question": f"Which band recorded song number {i}?", "answer": "Rush",
           "supporting_facts": [["Rush", 0]],
           "context": [["Rush", [f"Rush recorded song number {i} in the year 19{70 + i}."]],
                       ["Other", ["An unrelated paragraph about cheese."]]]} for i in range(3)]


def test_rollout_index_per_question_searches_each_examples_own_paragraphs(tmp_path):
    from tests.eval.test_fakellm_golden import search_policy

    data = tmp_path / "hq.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in HOTPOT))
    read: list[str] = []  # the Reason-in-Documents prompts: they hold the documents the search returned

    def script(prompt):
        if "**Searched Documents:**" in prompt:
            read.append(prompt)
        return search_policy(prompt)

    step = RolloutStep(engine="search-o1", backend="fake://", task="hotpotqa", settings={"sampling": {"max_tokens": 128}},
                       index="per-question", make_llm=lambda: FakeLLM(script))
    trajs = [doc_trajectory(d) for d in step(Reader(kind="task", task="hotpotqa", path=str(data))())]
    assert len(trajs) == 3 and all(t.answer == "Rush" for t in trajs) and len(read) == 3
    for prompt in read:
        docs = prompt.split("**Searched Documents:**", 1)[1]
        i = int(re.search(r"song number (\d+)", prompt).group(1))
        assert f"in the year 19{70 + i}" in docs  # its own paragraph was found
        assert all(f"in the year 19{70 + j}" not in docs for j in range(3) if j != i)  # no other question's


def test_rollout_index_per_question_errors(tmp_path, nq_file):
    with pytest.raises(ConfigError, match="has no per-question paragraphs"):
        RolloutStep(engine="search-o1", backend="fake://", task="nq-open", index="per-question")
    with pytest.raises(ConfigError, match="rollout.index='nowhere'.*per-question"):
        RolloutStep(engine="search-o1", backend="fake://", task="hotpotqa", index="nowhere")
