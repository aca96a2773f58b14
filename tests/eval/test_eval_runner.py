"""The eval runner with FakeLLM: resumable runs equal uninterrupted ones, errors, judge, backoff, samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_infer.engines.registry import ENGINES
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.testing import FakeLLM
from eval.runner import RunConfig, run_eval
from eval.summary import read_results
from tests.eval.test_fakellm_golden import search_policy as search_o1_script  # search once, read, answer; RiD

HOTPOT = [{"_id": f"q{i}", "question": f"Which band recorded song number {i}?", "answer": "Rush" if i % 2 else "Yes",
           "supporting_facts": [["Rush", 0]],
           "context": [["Rush", [f"Rush recorded song number {i}.", " Rush is Canadian."]],
                       ["Other", ["An unrelated paragraph about cheese."]]]} for i in range(8)]


@pytest.fixture
def hq(tmp_path) -> Path:
    p = tmp_path / "hq.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in HOTPOT), encoding="utf-8")
    return p


STABLE = ("id", "index", "question", "gold", "prediction", "metrics", "completion_tokens", "tool_calls", "search_calls",
          "llm_calls", "unfinished", "output")


def _stable(rows):
    return {r["id"]: {k: r.get(k) for k in STABLE} for r in rows}


def _rollouts(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]


def _rollout_ids(out: Path) -> list[str]:
    return [r["example_id"] for r in _rollouts(out)]


async def test_kill_between_rollout_and_row_loses_nothing_and_duplicates_nothing(hq, tmp_path, monkeypatch):
    """A kill after run_many wrote a rollout and before its row: the rerun writes the row from the rollout."""
    import eval.runner

    base = dict(task="hotpotqa", data=str(hq), engine="search-o1", corpus="per-question", settings={"sampling": {"max_tokens": 256}})
    await run_eval(RunConfig(out=str(tmp_path / "a"), **base), llm=FakeLLM(search_o1_script), progress=False)
    rows_a = read_results(tmp_path / "a" / "results.jsonl")

    real_row, n = eval.runner.result_row, {"rows": 0}

    def dying_row(*args, **kwargs):
        n["rows"] += 1
        if n["rows"] == 4:  # the 4th rollout is on disk; the process dies before its row
            raise RuntimeError("killed")
        return real_row(*args, **kwargs)

    out = tmp_path / "b"
    monkeypatch.setattr(eval.runner, "result_row", dying_row)
    with pytest.raises(RuntimeError, match="killed"):
        await run_eval(RunConfig(out=str(out), **base), llm=FakeLLM(search_o1_script), progress=False)
    assert len(_rollouts(out)) == 4 and len(read_results(out / "results.jsonl")) == 3
    monkeypatch.setattr(eval.runner, "result_row", real_row)
    llm = FakeLLM(search_o1_script)
    s = await run_eval(RunConfig(out=str(out), **base), llm=llm, progress=False)
    assert s["n"] == 8 and len(llm.prompts) == 4 * 3  # only the 4 unfinished examples ran (2 turns + RiD each)
    rollouts, rows = _rollouts(out), read_results(out / "results.jsonl")
    trajectory_ids = [t["id"] for r in rollouts for t in r["trajectories"]]
    assert len(trajectory_ids) == len(set(trajectory_ids)) == 8  # every trajectory exactly once
    assert sorted(_rollout_ids(out)) == sorted(r["id"] for r in rows) == [f"q{i}" for i in range(8)]
    assert sorted(i for r in rows for i in r["trajectory_ids"]) == sorted(trajectory_ids)
    assert _stable(rows) == _stable(rows_a)
    assert all(r["rewards"]["em"] == row["metrics"]["em"] for r, row in
               zip(sorted(rollouts, key=lambda r: r["example_id"]), sorted(rows, key=lambda r: r["id"])))


async def test_resumed_run_equals_uninterrupted(hq, tmp_path):
    base = dict(task="hotpotqa", data=str(hq), engine="search-o1", corpus="per-question", concurrency=2,
                settings={"sampling": {"max_tokens": 256}})
    full = await run_eval(RunConfig(out=str(tmp_path / "a"), **base), llm=FakeLLM(search_o1_script), progress=False)
    assert full["n"] == 8 and full["complete"]
    rows_a = read_results(tmp_path / "a" / "results.jsonl")
    assert all(r["search_calls"] == 1 and r["prediction"] == "Rush" for r in rows_a)

    calls = {"n": 0}

    def dying(prompt: str) -> str:  # the process "dies" part-way through the run
        calls["n"] += 1
        if calls["n"] > 9:
            raise RuntimeError("killed")
        return search_o1_script(prompt)

    out_b = tmp_path / "b"
    with pytest.raises(RuntimeError, match="killed"):
        await run_eval(RunConfig(out=str(out_b), **base), llm=FakeLLM(dying), progress=False)
    partial = read_results(out_b / "results.jsonl")
    assert 0 < len(partial) < 8
    with open(out_b / "results.jsonl", "a", encoding="utf-8") as f:
        f.write('{"id": "q7", "torn')  # a line cut by the kill
    resumed = await run_eval(RunConfig(out=str(out_b), **base), llm=FakeLLM(search_o1_script), progress=False)
    lines = [json.loads(x) for x in (out_b / "results.jsonl").read_text().splitlines() if x.strip().endswith("}")]
    ids = [r["id"] for r in lines]
    assert len(ids) == len(set(ids)) == 8  # no duplicates
    assert _stable(read_results(out_b / "results.jsonl")) == _stable(rows_a)
    assert resumed["metrics"] == full["metrics"]
    assert sorted(_rollout_ids(out_b)) == sorted(ids)  # one rollout per example, none written twice
    # a third run does nothing: no prompt reaches the model and no file gains a line
    files = sorted(p for p in out_b.glob("*.jsonl"))
    assert {p.name for p in files} >= {"results.jsonl", "rollouts.jsonl"}
    lines_before = {p.name: len(p.read_text().splitlines()) for p in files}
    idle = FakeLLM([])
    again = await run_eval(RunConfig(out=str(out_b), **base), llm=idle, progress=False)
    assert again["n"] == 8 and idle.prompts == []
    assert {p.name: len(p.read_text().splitlines()) for p in sorted(out_b.glob("*.jsonl"))} == lines_before


async def test_summary_contents(hq, tmp_path):
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(tmp_path / "d")),
                       llm=FakeLLM(lambda p: "\\boxed{Rush}"), progress=False)
    assert s["metrics"]["em"]["mean"] == 0.5 and s["metrics"]["em"]["ci95_low"] < 0.5 < s["metrics"]["em"]["ci95_high"]
    assert s["published"]["Search-o1 EM"]["mean"] == 0.5 and "Search-R1 EM" in s["published"]
    assert len(s["data_sha256"]) == 64 and s["toolkit_version"] and s["model"]["class"] == "FakeLLM"
    assert s["config"]["engine"] == "direct" and s["totals"]["completion_tokens"]["sum"] == 8 * len("\\boxed{Rush}")
    assert s["metric_descriptions"]["search_o1_em"].startswith("Search-o1")
    row = read_results(tmp_path / "d" / "results.jsonl")[0]
    assert {"id", "question", "gold", "prediction", "metrics", "completion_tokens", "tool_calls", "wall_s",
            "trajectory_ids"} <= set(row)
    rollouts = {r["example_id"]: r for r in _rollouts(tmp_path / "d")}
    for row in read_results(tmp_path / "d" / "results.jsonl"):  # the row's metrics are the rollout's verdicts
        rollout = rollouts[row["id"]]
        [traj] = rollout["trajectories"]
        assert [traj["id"]] == row["trajectory_ids"] and traj["group_id"] == row["id"]
        assert rollout["rewards"] == traj["rewards"] == row["metrics"] and set(row["metrics"]) >= {"em", "f1"}
        assert [s["kind"] for s in traj["segments"]] == ["prompt", "model"] and traj["token_exact"]


async def test_changed_config_is_refused(hq, tmp_path):
    out = str(tmp_path / "c")
    await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=out, limit=2),
                   llm=FakeLLM(reply="\\boxed{x}"), progress=False)
    with pytest.raises(ConfigError, match=r"different config \(differs in \['engine_config.sampling.max_tokens'\]\)"):
        await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=out,
                                 settings={"sampling": {"max_tokens": 7}}),
                       llm=FakeLLM(reply="\\boxed{x}"), progress=False)
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=out, limit=5),
                       llm=FakeLLM(reply="\\boxed{x}"), progress=False)  # a larger limit extends the run
    assert s["n"] == 5


async def test_resume_may_change_threads_not_the_model(hq, tmp_path):
    """A backend's speed options (threads) may change between a run and its resume; its other options may not."""
    out = str(tmp_path / "t")
    base = {"task": "hotpotqa", "data": str(hq), "engine": "direct", "out": out}
    await run_eval(RunConfig(backend="llamacpp:///m.gguf?n_threads=2&n_ctx=512", limit=2, **base),
                   llm=FakeLLM(reply="\\boxed{x}"), progress=False)
    s = await run_eval(RunConfig(backend="llamacpp:///m.gguf?n_threads=1&n_ctx=512", limit=3, **base),
                       llm=FakeLLM(reply="\\boxed{x}"), progress=False)
    assert s["n"] == 3
    with pytest.raises(ConfigError, match=r"differs in \['backend'\]"):
        await run_eval(RunConfig(backend="llamacpp:///m.gguf?n_threads=1&n_ctx=1024", **base),
                       llm=FakeLLM(reply="\\boxed{x}"), progress=False)


async def test_backend_errors_are_recorded_and_retried(hq, tmp_path):
    def flaky(prompt: str) -> str:
        if "number 3" in prompt:
            raise BackendError("server went away")
        return "\\boxed{Rush}"

    out = tmp_path / "e"
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(out)), llm=FakeLLM(flaky),
                       progress=False)
    assert s["n"] == 7 and not s["complete"]
    assert json.loads((out / "rollouts.jsonl.errors.jsonl").read_text().splitlines()[0])["id"] == "q3"
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(out)),
                       llm=FakeLLM(reply="\\boxed{Rush}"), progress=False)
    assert s["n"] == 8 and s["complete"]


async def test_judge_backoff_and_samples(hq, tmp_path):
    direct = tmp_path / "direct"
    await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(direct)),
                   llm=FakeLLM(reply="\\boxed{Rush}"), progress=False)
    judge = FakeLLM(reply='{"equivalent": true, "reason": "same"}')
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="cot", out=str(tmp_path / "cot"),
                                 backoff=str(direct)), llm=FakeLLM(reply="I do not know."), judge_llm=judge,
                       progress=False)
    assert s["metrics"]["search_o1_em"]["mean"] == 0.0  # no boxed answer at all
    assert s["metrics"]["search_o1_em_backoff"]["mean"] == 0.5  # the direct run's answers fill in
    assert s["metrics"]["judge_acc"]["mean"] == 1.0 and s["published"]["ASearcher judge"]["mean"] == 1.0
    rollout = _rollouts(tmp_path / "cot")[0]  # backoff judges the direct run's answer: the rollout's, not the trajectory's
    assert rollout["rewards"]["search_o1_em_backoff"] == 0.0 and rollout["rewards"]["judge_acc"] == 1.0
    assert "search_o1_em_backoff" not in rollout["trajectories"][0]["rewards"]
    answers = iter(["\\boxed{Rush}", "\\boxed{Yes}", "\\boxed{Yes}"] * 8)
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="cot", out=str(tmp_path / "k"), samples=3),
                       llm=FakeLLM(lambda p: next(answers)), progress=False)
    assert s["metrics"]["pass@3"]["mean"] == 1.0 and s["metrics"]["maj@3"]["mean"] == 0.5
    assert s["metrics"]["pass@1"]["mean"] == pytest.approx((1 / 3 + 2 / 3) / 2)
    for rollout, row in zip(_rollouts(tmp_path / "k"), read_results(tmp_path / "k" / "results.jsonl")):
        trajs = rollout["trajectories"]  # one Rollout holds the 3 samples, each with its own verdicts
        assert [t["answer"] for t in trajs] == row["predictions"] == ["Rush", "Yes", "Yes"]
        assert [t["rewards"]["em"] for t in trajs] == [float(a in row["gold"]) for a in row["predictions"]]
        assert rollout["rewards"] == row["metrics"] and rollout["rewards"]["em"] == trajs[0]["rewards"]["em"]
        assert "pass@3" in rollout["rewards"] and not any("pass@3" in t["rewards"] for t in trajs)
        assert row["trajectory_ids"] == [t["id"] for t in trajs] and row["llm_calls"] == 3


async def test_judge_added_to_a_finished_run_without_regenerating(hq, tmp_path):
    out = tmp_path / "run"
    answers = iter(["\\boxed{Rush}", ""] * 4)
    cfg = RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(out))
    await run_eval(cfg, llm=FakeLLM(lambda p: next(answers)), progress=False)
    before = read_results(out / "results.jsonl")
    judge = FakeLLM(["Yes"] * 4)  # yes-no verdicts; empty predictions are judged without a call
    cfg = RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(out), judge="fake://", judge_verdict="yes-no")
    s = await run_eval(cfg, llm=FakeLLM([]), judge_llm=judge, progress=False)  # FakeLLM([]) fails if asked
    after = read_results(out / "results.jsonl")
    assert [r["id"] for r in after] == [r["id"] for r in before] and judge.remaining == 0
    assert [r["metrics"]["judge_acc"] for r in after] == [1.0, 0.0] * 4
    assert all(r["prediction"] == b["prediction"] for r, b in zip(after, before))
    assert s["metrics"]["judge_acc"]["mean"] == 0.5 and json.loads((out / "run.json").read_text())["judge_model"]["verdict"] == "yes-no"
    for rollout, row in zip(_rollouts(out), after):  # the verdicts are in the rollouts, the rows read them
        assert rollout["rewards"]["judge_acc"] == rollout["trajectories"][0]["rewards"]["judge_acc"] == row["metrics"]["judge_acc"]
        assert rollout["metadata"]["judged_by"] == row["judged_by"]
    s = await run_eval(cfg, llm=FakeLLM([]), judge_llm=judge, progress=False)  # all judged by it: no calls
    assert s["metrics"]["judge_acc"]["mean"] == 0.5
    cfg.judge_verdict = "json"  # another judge: every row is judged again
    s = await run_eval(cfg, llm=FakeLLM([]), judge_llm=FakeLLM(reply='{"equivalent": false, "reason": "no"}'),
                       progress=False)
    assert s["metrics"]["judge_acc"]["mean"] == 0.0
    assert {r["judged_by"] for r in read_results(out / "results.jsonl")} == {"EquivalenceJudge:fake"}
    with pytest.raises(ConfigError, match="judge verdict 'xml': choose one of json, yes-no"):
        RunConfig(task="hotpotqa", data=str(hq), judge_verdict="xml")


async def test_kill_between_the_judged_rollouts_and_rows_costs_no_second_verdict(hq, tmp_path, monkeypatch):
    import eval.runner

    out = tmp_path / "run"
    await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(out)),
                   llm=FakeLLM(reply="\\boxed{Rush}"), progress=False)
    real, writes = eval.runner.write_jsonl, []

    def dying(path, lines):
        writes.append(path.name)
        if path.name == "results.jsonl":
            raise RuntimeError("killed")
        real(path, lines)

    monkeypatch.setattr(eval.runner, "write_jsonl", dying)
    cfg = RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(out), judge="fake://",
                    judge_verdict="yes-no")
    with pytest.raises(RuntimeError, match="killed"):
        await run_eval(cfg, llm=FakeLLM([]), judge_llm=FakeLLM(["Yes"] * 8), progress=False)
    assert writes == ["rollouts.jsonl", "results.jsonl"]
    assert all("judge_acc" in r["rewards"] for r in _rollouts(out))
    assert not any("judge_acc" in r["metrics"] for r in read_results(out / "results.jsonl"))
    monkeypatch.setattr(eval.runner, "write_jsonl", real)
    for cache in out.glob("judge_cache.sqlite*"):  # the verdicts must come from the rollouts, not the judge's cache
        cache.unlink()
    judge = FakeLLM([])  # fails if asked
    s = await run_eval(cfg, llm=FakeLLM([]), judge_llm=judge, progress=False)
    assert judge.prompts == []
    assert s["metrics"]["judge_acc"]["mean"] == 1.0 and s["n"] == 8
    assert len(_rollouts(out)) == 8


async def test_engine_and_corpus_errors(hq, tmp_path):
    with pytest.raises(ConfigError, match=r"searches: give an index \(--index DIR\) or a corpus"):
        await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="search-o1", out=str(tmp_path / "x")),
                       llm=FakeLLM(reply=""), progress=False)
    with pytest.raises(ConfigError, match="has no per-question paragraphs"):
        nq = tmp_path / "nq.jsonl"
        nq.write_text('{"question": "q", "answer": ["a"]}')
        await run_eval(RunConfig(task="nq-open", data=str(nq), engine="search-o1", corpus="per-question",
                                 out=str(tmp_path / "y")), llm=FakeLLM(reply=""), progress=False)
    with pytest.raises(ConfigError, match="unknown engine"):
        await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="nope", out=str(tmp_path / "z")),
                       llm=FakeLLM(reply=""), progress=False)
    assert {"direct", "cot", "search-o1", "tir", "deepconf", "lats", "rap"} <= set(ENGINES)


async def test_pooled_corpus_search(hq, tmp_path):
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="search-o1", corpus="pooled", limit=3,
                                 out=str(tmp_path / "p"), settings={"sampling": {"max_tokens": 256}}), llm=FakeLLM(search_o1_script), progress=False)
    assert s["totals"]["search_calls_per_question"]["mean"] == 1.0 and s["corpus"] == "pooled"


async def test_tir_engine_runs_code(tmp_path):
    data = tmp_path / "g.jsonl"
    data.write_text('{"question": "What is 16-3-4?", "answer": "so\\n#### 9"}\n')

    def policy(prompt: str) -> str:
        tail = prompt.rsplit("<|im_start|>assistant", 1)[-1]
        return "\\boxed{9}" if "9" in tail else "```python\nprint(16-3-4)\n```"

    s = await run_eval(RunConfig(task="gsm8k", data=str(data), engine="tir", out=str(tmp_path / "t"), settings={"sampling": {"max_tokens": 128}}),
                       llm=FakeLLM(policy), progress=False)
    assert s["metrics"]["math_equal"]["mean"] == 1.0 and s["totals"]["tool_calls"]["sum"] == 1


@pytest.mark.parametrize("engine", ["lats", "rap"])
async def test_tree_engines_run_on_game24(tmp_path, engine):
    data = tmp_path / "g24.csv"
    data.write_text("Rank,Puzzles\n1,4 6 1 1\n")
    s = await run_eval(RunConfig(task="game24", data=str(data), engine=engine, out=str(tmp_path / engine),
                                 settings={"iterations": 2}), llm=FakeLLM(lambda p: "4 * 6 = 24\nScore: 7"),
                       progress=False)
    row = read_results(tmp_path / engine / "results.jsonl")[0]
    assert s["n"] == 1 and "game24_valid" in row["metrics"] and row["llm_calls"] >= 1 and "tree" in row


async def test_simpleqa_uses_its_grader(tmp_path):
    data = tmp_path / "simple_qa_test_set.csv"
    data.write_text("metadata,problem,answer\n{},Who wrote Hamlet?,William Shakespeare\n{},Capital of France?,Paris\n")
    grades = iter(["B", "C"])
    s = await run_eval(RunConfig(task="simpleqa", data=str(data), engine="direct", out=str(tmp_path / "s")),
                       llm=FakeLLM(reply="\\boxed{Shakespeare}"), judge_llm=FakeLLM(lambda p: next(grades)),
                       progress=False)
    assert s["metrics"]["judge_acc"]["mean"] == 0.0 and s["metrics"]["simpleqa_not_attempted"]["mean"] == 0.5


async def test_renamed_columns_through_the_field_mapping(tmp_path):
    data = tmp_path / "simpleqa_copy.csv"  # a copy in the wild: question / true_answer columns
    data.write_text("question,true_answer\nWho wrote Hamlet?,William Shakespeare\n")
    cfg = dict(task="simpleqa", data=str(data), engine="direct", out=str(tmp_path / "r"))
    with pytest.raises(ConfigError, match="missing field 'answer'"):
        await run_eval(RunConfig(**cfg), llm=FakeLLM(reply="x"), progress=False)
    s = await run_eval(RunConfig(**cfg, fields={"answer": "true_answer"}), llm=FakeLLM(reply="\\boxed{William Shakespeare}"),
                       progress=False)
    assert s["n"] == 1 and s["metrics"]["em"]["mean"] == 1.0


async def test_first_query_option_forces_a_search_for_the_question(hq, tmp_path):
    def policy(prompt: str) -> str:  # a model that never closes a query tag by itself
        if "**Searched Documents:**" in prompt:
            return "**Final Information**\nRush."
        return "The answer is \\boxed{Rush}"

    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="search-o1", corpus="per-question", limit=2,
                                 out=str(tmp_path / "f"), settings={"sampling": {"max_tokens": 256}, "first_query": "question"}),
                       llm=FakeLLM(policy), progress=False)
    assert s["totals"]["search_calls_per_question"]["mean"] == 1.0 and s["metrics"]["em"]["mean"] == 0.5
    [traj] = _rollouts(tmp_path / "f")[0]["trajectories"]
    assert traj["segments"][1]["text"] == "<|begin_search_query|>Which band recorded song number 0?<|end_search_query|>"
    assert traj["usage"]["llm_calls"] == 2  # Reason-in-Documents and the answer: no call for the forced query
    with pytest.raises(ConfigError, match="first_query='x'"):
        await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="search-o1", corpus="per-question",
                                 out=str(tmp_path / "g"), settings={"first_query": "x"}), llm=FakeLLM(policy),
                       progress=False)


async def test_prebuilt_index(hq, tmp_path):
    from agentic_infer.tools.retrieval.base import Document
    from agentic_infer.tools.retrieval.index import build_index

    docs = [Document(id=f"d{i}", title="Rush", text=f"Rush recorded song number {i}.") for i in range(8)]
    build_index(docs, out=tmp_path / "idx", kind="bm25")
    s = await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="search-o1", index=str(tmp_path / "idx"),
                                 limit=2, out=str(tmp_path / "i"), settings={"sampling": {"max_tokens": 256}}), llm=FakeLLM(search_o1_script),
                       progress=False)
    assert s["corpus"].startswith("index:") and s["totals"]["search_calls_per_question"]["mean"] == 1.0
    with pytest.raises(ConfigError, match="not both"):
        RunConfig(task="hotpotqa", data=str(hq), index="x", corpus="pooled")


async def test_backoff_added_later_covers_earlier_rows(hq, tmp_path):
    direct = tmp_path / "direct"
    await run_eval(RunConfig(task="hotpotqa", data=str(hq), engine="direct", out=str(direct)),
                   llm=FakeLLM(reply="\\boxed{Rush}"), progress=False)
    base = dict(task="hotpotqa", data=str(hq), engine="cot", out=str(tmp_path / "c"))
    await run_eval(RunConfig(limit=3, **base), llm=FakeLLM(reply="no box"), progress=False)
    s = await run_eval(RunConfig(backoff=str(direct), **base), llm=FakeLLM(reply="no box"), progress=False)
    assert s["metrics"]["search_o1_em_backoff"] == {**s["metrics"]["search_o1_em_backoff"], "n": 8, "mean": 0.5}
