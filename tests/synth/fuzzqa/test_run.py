"""`run_fuzzqa` end to end with a scripted LLM: eval-loadable output, the funnel, resume, the request cache, the CLI."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import DOCS, World

from agentic_infer.cli import main
from agentic_infer.tasks import get_task
from agentic_infer.tasks._multihop import pooled
from agentic_infer.testing import FakeLLM
from synth.fuzzqa import GATES, FuzzQAConfig, run_fuzzqa
from tests.conftest import shared_data

DOC_TEXT = {d.id: d.text for d in DOCS}
CFG = FuzzQAConfig(k_closed_book=2, judge="em", max_tokens=512, min_seed_words=0, cache=False, max_actions=1)


def run(out, corpus, n, world=None, cfg=CFG, **kw):
    world = world or World()
    stats = asyncio.run(run_fuzzqa(out, llm=FakeLLM(world), corpus=None if corpus is None else str(corpus), n=n, config=cfg, **kw))
    return stats, world


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_output_loads_through_the_hotpotqa_task_and_stats_hold_the_funnel(tmp_path, corpus_file):
    stats, _ = run(tmp_path, corpus_file, 3)
    qa = lines(tmp_path / "qa.jsonl")
    prov = lines(tmp_path / "provenance.jsonl")
    assert len(prov) == 3 and stats["qas"] == len(qa) >= 1
    loaded = get_task("hotpotqa").load(tmp_path / "qa.jsonl")
    assert [x["question"] for x in loaded] == [r["question"] for r in qa]
    assert all(x["gold"] == ["Warsaw"] and x["id"].startswith("fuzzqa-") for x in loaded)
    row = qa[0]
    assert len(row["context"]) == row["hops"] == len(row["evidence_ids"]) == 2 and row["triples"]
    final = next(v for r in prov if f"fuzzqa-{r['seed_id']}" == row["_id"] for v in r["versions"]
                 if v["status"] == "final")
    assert row["lineage"]["gates"] == {g["gate"]: g["keep"] for g in final["gates"]} and all(
        row["lineage"]["gates"].values())  # every gate the QA passed, read back from its provenance record
    assert row["lineage"]["operator"] == final["action"] and row["lineage"]["engine"] == "fuzzqa"
    assert {d.title for d in pooled(tmp_path / "qa.jsonl")} >= {c[0] for c in row["context"]}
    # the funnel: every gate's in -> out, drops by reason, consistent with the records
    gates = stats["gates"]
    assert list(gates) == list(GATES)
    for a, b in zip(GATES, GATES[1:]):
        assert gates[b]["in"] == gates[a]["out"]
        assert gates[a]["in"] - gates[a]["out"] == sum(gates[a]["dropped"].values())
    # every seed gets the Curie base QA: seeds whose document does not say Warsaw fail gate 2, the rest are too easy
    with_warsaw = sum("Warsaw" in DOC_TEXT[r["seed_id"]] for r in prov)
    assert gates["answerable"]["dropped"] == ({"answer_not_in_evidence": 3 - with_warsaw} if with_warsaw < 3 else {})
    assert gates["too_hard_closed_book"]["dropped"]["too_easy"] == with_warsaw
    assert gates["no_alternative"]["out"] == stats["qas"]
    assert stats["write"]["by_action"]["base"] == 3 and stats["llm_requests"] > 0
    on_disk = json.loads((tmp_path / "stats.json").read_text())
    assert on_disk["gates"] == gates and on_disk["config"]["k_closed_book"] == 2


def test_resume_skips_finished_seeds_and_drops_a_torn_line(tmp_path, corpus_file):
    run(tmp_path, corpus_file, 2)
    first = [r["seed_id"] for r in lines(tmp_path / "provenance.jsonl")]
    stats, world = run(tmp_path, corpus_file, 4)
    prov = lines(tmp_path / "provenance.jsonl")
    assert [r["seed_id"] for r in prov][:2] == first and len({r["seed_id"] for r in prov}) == 4
    assert world.calls.count("base") == 2 and stats["resumed_seeds"] == 2
    # a killed run leaves a torn last line: it is dropped, and its seed is not lost
    with (tmp_path / "provenance.jsonl").open("a") as f:
        f.write('{"seed_id": "torn", "wri')
    stats, world = run(tmp_path, corpus_file, 4)
    assert world.calls == [] and stats["seeds"] == 4
    assert len(lines(tmp_path / "provenance.jsonl")) == 4
    assert len(lines(tmp_path / "qa.jsonl")) == stats["qas"]


def test_cached_requests_are_not_paid_twice(tmp_path, corpus_file):
    cfg = FuzzQAConfig(**{**CFG.__dict__, "cache": True})
    first, w1 = run(tmp_path, corpus_file, 2, cfg=cfg)
    (tmp_path / "provenance.jsonl").unlink()  # forget the finished seeds: every request is asked again
    second, w2 = run(tmp_path, corpus_file, 2, cfg=cfg)
    assert w1.calls and w2.calls == [] and second["backend_calls"] == 0
    assert second["llm_requests"] == first["llm_requests"] and second["gates"] == first["gates"]


def test_grounded_run_records_the_evidence_hops(tmp_path):
    path = shared_data("multihop/hotpotqa_dev_distractor_150.jsonl")
    stats, world = run(tmp_path, None, 2, grounded=f"hotpotqa:{path}",
                       cfg=FuzzQAConfig(**{**CFG.__dict__, "max_actions": 0}))
    prov = lines(tmp_path / "provenance.jsonl")
    assert stats["mode"] == "grounded" and len(prov) == 2 and world.calls[0] == "phrase"
    v = prov[0]["versions"][0]
    assert v["action"] == "grounded" and v["hops"] == 2 and v["triples"][-1]["object"] == "?"
    assert v["gates"][0]["gate"] == "not_covered"


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["synth", "fuzzqa", "--grounded", "strategyqa:x.json", "--out", str(tmp_path), "--llm", "fake://"])
    assert e.value.code == 2 and "TASK:FILE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["synth", "fuzzqa", "--out", str(tmp_path), "--set", "k_closed_book=0"])
    assert e.value.code == 2 and "k_closed_book" in capsys.readouterr().err
    assert not (tmp_path / "qa.jsonl").exists()


def test_judge_kinds_share_eval_vocabulary_and_the_old_spelling_names_the_new_one():
    from agentic_infer.engines.judge import EquivalenceJudge, YesNoEquivalenceJudge
    from agentic_infer.errors import ConfigError
    from agentic_infer.verify import MetricJudge
    from synth.fuzzqa.run import make_judge

    assert isinstance(make_judge(FuzzQAConfig(judge="yes-no").judge, FakeLLM([]), None), YesNoEquivalenceJudge)
    assert type(make_judge("json", FakeLLM([]), None)) is EquivalenceJudge
    assert isinstance(make_judge("f1", FakeLLM([]), None), MetricJudge)
    with pytest.raises(ConfigError, match="'yesno' is now spelled 'yes-no'"):
        FuzzQAConfig(judge="yesno")
    with pytest.raises(ConfigError, match="use one of json, yes-no, em, cover_em, f1"):
        FuzzQAConfig(judge="xml")


def test_alternative_k_is_documents_per_search_and_the_old_key_names_it():
    from agentic_infer.errors import ConfigError
    from synth.fuzzqa.config import FuzzQAConfig

    assert FuzzQAConfig(alternative_k=5).alternative_k == 5
    with pytest.raises(ConfigError, match="'alternative_top_k' is renamed 'alternative_k'"):
        FuzzQAConfig(alternative_top_k=5)
