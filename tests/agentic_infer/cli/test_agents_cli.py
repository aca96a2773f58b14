"""`agentic run search-o1` / `agentic run tir` end to end in a subprocess (scripted backend, real index)."""

import json
import subprocess
import sys

import pytest

from tests.conftest import shared_data


def agentic(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentic_infer", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    pytest.importorskip("bm25s")
    out = tmp_path_factory.mktemp("cli") / "idx"
    r = agentic("index", "build", "--corpus", str(shared_data("multihop/musique_train_100_corpus.json")),
                "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


REPLY = "fake://?reply=I will search. <|begin_search_query|>Lady Gaga<|end_search_query|>"


def test_search_o1_json_on_a_real_index(index_dir):
    r = agentic("run", "search-o1", "--question", "Who is Lady Gaga?", "--backend", REPLY, "--index", str(index_dir),
                "--set", "max_turns=2", "--set", "k=2", "--json")
    assert r.returncode == 0, r.stderr
    rollout = json.loads(r.stdout.strip().splitlines()[-1])
    traj = rollout["trajectories"][0]
    assert traj["finish_reason"] == "max_turns"
    assert [s["metadata"]["status"] for s in traj["steps"]] == ["executed", "repeat"]
    assert len(traj["steps"][0]["metadata"]["doc_ids"]) == 2


def test_search_o1_input_file_out_file_and_readable_print(index_dir, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "a", "question": "Who is Lady Gaga?"}\n{"id": "b", "question": "Who?"}\n')
    out = tmp_path / "rollouts.jsonl"
    args = ("run", "search-o1", "--input", str(questions), "--backend", REPLY, "--index", str(index_dir),
            "--set", "max_turns=1", "--out", str(out))
    r = agentic(*args)
    assert r.returncode == 0, r.stderr
    assert sorted(json.loads(x)["example_id"] for x in out.read_text().splitlines()) == ["a", "b"]
    assert "2 rollouts" in r.stdout
    r = agentic(*args)  # resumed: nothing new
    assert r.returncode == 0, r.stderr
    assert len(out.read_text().splitlines()) == 2
    r = agentic("run", "search-o1", "--question", "Who is Lady Gaga?", "--backend", REPLY, "--index", str(index_dir),
                "--set", "max_turns=1")
    assert "search: Lady Gaga" in r.stdout and "answer:" in r.stdout


def test_tir_cli():
    r = agentic("run", "tir", "--question", "2+2?", "--backend",
                "fake://?reply=```python%0Aprint(2%2B2)%0A```%0A", "--json", "--set", "max_tool_calls=1")
    assert r.returncode == 0, r.stderr
    traj = json.loads(r.stdout.strip().splitlines()[-1])["trajectories"][0]
    assert traj["steps"][0]["observation"] == "4"
    statuses = [s["metadata"]["status"] for s in traj["steps"]]  # the model repeats its block every turn
    assert statuses[0] == "executed" and set(statuses[1:]) == {"limit"}  # the cap of 1 applied


def test_config_file_set_and_show_config(tmp_path):
    cfg = tmp_path / "so1.yaml"
    cfg.write_text("max_searches: 3\nsampling:\n  temperature: 0.1\n")
    r = agentic("run", "search-o1", "--config", str(cfg), "--set", "k=4", "--show-config")
    assert r.returncode == 0, r.stderr
    import yaml

    shown = yaml.safe_load(r.stdout)
    assert shown["max_searches"] == 3 and shown["k"] == 4 and "top_k" not in shown
    assert shown["sampling"]["temperature"] == 0.1 and shown["sampling"]["top_p"] == 0.8  # the default kept
    r = agentic("run", "search-o1", "--set", "max_serches=3", "--show-config")
    assert r.returncode == 2 and "unknown setting 'max_serches'" in r.stderr and "max_searches" in r.stderr
    r = agentic("run", "search-o1", "--set", "top_k=4", "--show-config")  # the old name of k: a clear error
    assert r.returncode == 2 and "renamed 'k'" in r.stderr and "'sampling.top_k'" in r.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "search-o1"], "exactly one of --question"),
        (["run", "search-o1", "--input", "/no/such.jsonl"], "no such file"),
        (["run", "search-o1", "--question", "x", "--index", "/no/such/dir", "--backend", "fake://"], "/no/such/dir"),
        (["run", "search-o1", "--question", "x", "--set", "dialect=klingon", "--backend", "fake://",
          "--retriever-url", "http://127.0.0.1:9"], "klingon"),
    ],
)
def test_bad_input(args, needle):
    r = agentic(*args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
