"""The BFCL and ToolRL envs on real rows: gold calls pass, each kind of wrong call fails naming its cause, and
ToolRL's reward matches hand computation (ToolRL's rlla.py semantics)."""

from __future__ import annotations

import json
import time

import pytest

from agentic_infer.envs import make_env
from agentic_infer.envs.bfcl import gold_calls, load_toolrl_rows
from agentic_infer.errors import ConfigError
from agentic_infer.verify.toolrl import toolrl_correctness, toolrl_format_score, toolrl_score
from tests.conftest import shared_data

SUBSETS = {"simple": "simple_python", "multiple": "multiple", "parallel": "parallel", "irrelevance": "irrelevance"}


@pytest.fixture(scope="module")
def bfcl_rows():
    """{subset: {id: row}} of the four BFCL files."""
    out = {}
    for subset, file in SUBSETS.items():
        path = shared_data(f"tools/bfcl/BFCL_v4_{file}.json")
        out[subset] = {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r}
    return out


@pytest.fixture(scope="module")
def toolrl_rows():
    shared_data("tools/toolrl_rlla4k_test.parquet")
    return load_toolrl_rows()


def _env(bfcl_rows, subset, rid):
    return make_env("bfcl", bfcl_rows[subset][rid])


def _play(env, calls):
    for name, args in calls:
        env.call(name, args)
    return env.verify("Done.")


# ----------------------------------------------------------------------------------------------- BFCL

def test_tools_are_openai_schemas_as_bfcls_handler_converts_them(bfcl_rows):
    env = _env(bfcl_rows, "simple", "simple_python_1")
    (tool,) = env.tools()
    assert tool["function"]["name"] == "math_factorial"  # "." is not allowed in OpenAI names
    assert tool["function"]["parameters"]["type"] == "object"  # BFCL's "dict"
    assert tool["function"]["parameters"]["properties"]["number"]["type"] == "integer"
    circle = _env(bfcl_rows, "multiple", "multiple_0").tools()[1]["function"]
    assert circle["name"] == "circle_properties_get"
    assert circle["parameters"]["properties"]["radius"] == {
        "type": "number", "format": "float", "description": "The length of radius of the circle."}
    assert "factorial of 5" in env.first_observation() and "call nothing" in env.instructions()
    conditions = _env(bfcl_rows, "simple", "simple_python_96").tools()[0]["function"]["parameters"]["properties"][
        "conditions"]  # an array of "dict": nested types convert too
    assert conditions["type"] == "array" and conditions["items"]["type"] == "object"
    assert conditions["items"]["properties"]["field"]["type"] == "string"


@pytest.mark.parametrize(("subset", "rid"), [("simple", "simple_python_0"), ("simple", "simple_python_1"),
                                             ("multiple", "multiple_0"), ("parallel", "parallel_0")])
def test_the_gold_call_passes_through_call_and_verify(bfcl_rows, subset, rid):
    env = _env(bfcl_rows, subset, rid)
    assert env.category == subset
    calls = [(n.replace(".", "_"), a) for n, a in gold_calls(env.ground_truth, functions=env.functions)]
    for name, args in calls:
        assert env.call(name, args).startswith("Recorded ")
    assert env.state()["calls"][0] == {"name": calls[0][0], "arguments": calls[0][1]}
    v = env.verify("Done.")
    assert v.reward == 1.0 and v.success and v.passed == ["format", "ast"]
    assert v.info["source"] == "calls" and v.info["toolrl"] == {"format": 1.0, "correctness": 3.0, "reward": 4.0}


def test_parallel_calls_pass_in_any_order_and_a_missing_one_names_the_gold_call(bfcl_rows):
    taylor, maroon = ("spotify_play", {"artist": "Taylor Swift", "duration": 20}), \
        ("spotify_play", {"artist": "maroon 5", "duration": 15})  # strings compare case-insensitively
    assert _play(_env(bfcl_rows, "parallel", "parallel_0"), [maroon, taylor]).reward == 1.0
    v = _play(_env(bfcl_rows, "parallel", "parallel_0"), [taylor, ("spotify_play", {"artist": "Maroon 5",
                                                                                     "duration": 16})])
    assert v.reward == 0.0
    assert "no call matches gold call 2 (spotify.play)" in v.failed["ast"] and "'duration' = 16" in v.failed["ast"]
    assert "wrong number of calls: 1, expected 2" in _play(_env(bfcl_rows, "parallel", "parallel_0"),
                                                           [taylor]).failed["ast"]


@pytest.mark.parametrize(("calls", "cause"), [
    ([("calculate_circle_area", {"base": 10, "height": 5})], "called 'calculate_circle_area', expected "
                                                               "'calculate_triangle_area'"),
    ([("calculate_triangle_area", {"base": 10, "height": 6})], "parameter 'height' = 6 is not one of the allowed [5]"),
    ([("calculate_triangle_area", {"base": 10})], "missing required parameter 'height'"),
    ([("calculate_triangle_area", {"base": 10, "height": 5})] * 2, "wrong number of calls: 2, expected 1"),
    ([("calculate_triangle_area", {"base": 10, "height": 5, "color": "red"})], "unexpected parameter 'color'"),
    ([("calculate_triangle_area", {"base": "ten", "height": 5})], "'base' has type str, expected integer"),
    ([("calculate_triangle_area", {"base": 10.5, "height": 5})], "'base' has type float, expected integer"),
])
def test_wrong_calls_in_simple_fail_naming_the_cause(bfcl_rows, calls, cause):
    env = _env(bfcl_rows, "simple", "simple_python_0")
    v = _play(env, calls)
    assert len(env.calls) == len(calls)  # recorded even when they break the schema
    assert v.reward == 0.0 and not v.success and cause in v.failed["ast"], v.failed


def test_multiple_checks_the_gold_function_among_several(bfcl_rows):
    right = ("triangle_properties_get", {"side1": 5, "side2": 4, "side3": 3, "get_area": True})
    assert _play(_env(bfcl_rows, "multiple", "multiple_0"), [right]).reward == 1.0
    v = _play(_env(bfcl_rows, "multiple", "multiple_0"), [("circle_properties_get", {"radius": 3.0})])
    assert "called 'circle_properties.get', expected 'triangle_properties.get'" in v.failed["ast"]
    v = _play(_env(bfcl_rows, "multiple", "multiple_0"), [(right[0], {**right[1], "get_area": 1})])
    assert "'get_area' has type int, expected boolean" in v.failed["ast"]


def test_irrelevance_passes_iff_no_call(bfcl_rows):
    env = _env(bfcl_rows, "irrelevance", "irrelevance_0")
    assert env.ground_truth == [] and env.category == "irrelevance"
    v = env.verify("None of these functions computes a triangle's area.")
    assert v.reward == 1.0 and v.success and v.info["toolrl"]["reward"] == 4.0
    assert _env(bfcl_rows, "irrelevance", "irrelevance_0").verify("[]").reward == 1.0
    v = _play(_env(bfcl_rows, "irrelevance", "irrelevance_0"),
              [("determine_body_mass_index", {"weight": 10.0, "height": 5.0})])
    assert v.reward == 0.0 and "no call was expected" in v.failed["ast"] and "determine_body_mass_index" in v.failed["ast"]
    assert v.info["toolrl"] == {"format": 1.0, "correctness": -3.0, "reward": -2.0}
    v = _env(bfcl_rows, "irrelevance", "irrelevance_0").verify("[determine_body_mass_index(weight=1.0, height=2.0)]")
    assert v.reward == 0.0 and v.info["source"] == "text"


def test_calls_written_as_text_are_parsed(bfcl_rows):
    v = _env(bfcl_rows, "simple", "simple_python_1").verify("```python\n[math.factorial(number=5)]\n```")
    assert v.reward == 1.0 and v.info["source"] == "text" and v.info["calls"] == [
        {"name": "math.factorial", "arguments": {"number": 5}}]
    tool_call = '<think>t</think>\n<tool_call>\n{"name": "math_factorial", "arguments": {"number": 5}}\n</tool_call>'
    assert _env(bfcl_rows, "simple", "simple_python_1").verify(tool_call).reward == 1.0
    v = _env(bfcl_rows, "simple", "simple_python_1").verify("The factorial of 5 is 120.")
    assert v.reward == 0.0 and set(v.failed) == {"format", "ast"}
    assert v.info["toolrl"] == {"format": 0.0, "correctness": -3.0, "reward": -3.0}


def test_toolrl_reward_of_a_bfcl_answer_hand_computed(bfcl_rows):
    # gold (first allowed values): calculate_triangle_area(base=10, height=5, unit="units"); the agent leaves
    # the optional unit out: AST passes; ToolRL: r_name 1, keys 2/3, values 2; S_max 1 + 1 + 3 = 5.
    v = _play(_env(bfcl_rows, "simple", "simple_python_0"), [("calculate_triangle_area", {"base": 10, "height": 5})])
    assert v.reward == 1.0
    assert v.info["toolrl"]["correctness"] == pytest.approx(6 * (1 + 2 / 3 + 2) / 5 - 3)  # 1.4
    assert v.info["toolrl"]["reward"] == pytest.approx(2.4)


def test_episode_shape_snapshot_and_ground_truth_sources(bfcl_rows, tmp_path):
    import asyncio

    env = _env(bfcl_rows, "simple", "simple_python_1")
    snap = env.snapshot()
    env.call("math_factorial", {"number": 5})
    assert env.verify("").reward == 1.0 and asyncio.run(env.reply("done")) is None
    env.restore(snap)
    assert env.calls == [] and env.state() == {"calls": []} and env.verify("").reward == 0.0
    assert "Error: unknown tool" in env.call("math.factorial", {"number": 5})  # the tool is math_factorial
    # gold: the row's own ground_truth, or data_file='s possible_answer/<name>
    row = {"id": "simple_python_9", "question": [[{"role": "user", "content": "5!"}]],
           "function": bfcl_rows["simple"]["simple_python_1"]["function"]}
    own = make_env("bfcl", {**row, "ground_truth": [{"math.factorial": {"number": [5]}}]})
    assert _play(own, [("math_factorial", {"number": 5})]).reward == 1.0
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "possible_answer" / "B.json").write_text(json.dumps(
        {"id": "simple_python_9", "ground_truth": [{"math.factorial": {"number": [6]}}]}))
    env = make_env("bfcl", row, data_file=tmp_path / "B.json")
    assert env.ground_truth == [{"math.factorial": {"number": [6]}}]
    with pytest.raises(ConfigError, match="no gold answers at .*give the row a 'ground_truth'"):
        make_env("bfcl", row, data_file=tmp_path / "C.json")
    with pytest.raises(ConfigError, match="not covered"):
        make_env("bfcl", {**row, "id": "multi_turn_base_0", "ground_truth": []})
    with pytest.raises(ConfigError, match="expected a BFCL v4 row"):
        make_env("bfcl", {"id": "simple_python_0"})


def test_every_gold_answer_passes(bfcl_rows):
    """All gold answers (first allowed values) of each subset pass, through tool calls and as text."""
    for subset, rows in bfcl_rows.items():
        t0, n = time.perf_counter(), 0
        for rid, row in rows.items():
            env, text_env = make_env("bfcl", row), make_env("bfcl", row)
            gold = gold_calls(env.ground_truth, functions=env.functions)
            v = _play(env, [(n_.replace(".", "_"), a) for n_, a in gold])
            text = "[" + ", ".join(f"{n_}(" + ", ".join(f"{k}={a!r}" for k, a in args.items()) + ")"
                                   for n_, args in gold) + "]"
            assert v.reward == 1.0 and text_env.verify(text).reward == 1.0, (rid, v.failed)
            assert v.info["toolrl"]["reward"] == 4.0
            n += 1
        assert n == {"simple": 400, "multiple": 200, "parallel": 200, "irrelevance": 240}[subset]
        assert (time.perf_counter() - t0) / n < 0.05  # 2 env builds + 2 verifies per row


def test_irrelevance_text_task_and_its_metric():
    from agentic_infer.tasks import get_task
    from agentic_infer.verify.registry import METRICS, Scored

    examples = get_task("bfcl-irrelevance").load(shared_data("tools/bfcl/BFCL_v4_irrelevance.json"))
    assert len(examples) == 240 and all(e["ground_truth"] == [] and e["category"] == "irrelevance" for e in examples)
    ast = METRICS["bfcl_ast"].fn
    assert ast(Scored(None, [], text="None of these functions fits.", example=examples[0])) == 1.0
    assert ast(Scored(None, [], text="[determine_body_mass_index(weight=1.0, height=2.0)]", example=examples[0])) == 0.0


# ----------------------------------------------------------------------------------------------- ToolRL

def test_toolrl_rows_load_and_their_gold_scores_the_maximum(toolrl_rows):
    assert len(toolrl_rows) == 80
    for row in toolrl_rows:
        env = make_env("toolrl", row)
        listed = row["prompt"][0]["content"].split("**Steps")[0].count("\nDescription: ")
        assert len(env.tools()) == listed > 0
        v = env.verify(row["reward_model"]["ground_truth"])
        assert v.reward == 4.0 and v.success, (env.task_id, v.failed)


def test_toolrl_env_rewards_hand_computed(toolrl_rows):
    env = make_env("toolrl", toolrl_rows[0])  # gold: GetNews(page="1")
    assert env.task_id == "rlla-0" and "Azure" in env.first_observation() and "<tool_call>" in env.instructions()
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in env.tools()}
    assert tools["GetNews"] == {"type": "object", "properties": {"page": {
        "type": "integer", "description": "The page number of news articles to retrieve"}}, "required": ["page"]}
    assert tools["SingleOffer"]["required"] == []  # it has a default
    assert "Domain WHOIS Lookup API" in tools  # names kept as the gold writes them
    password = make_env("toolrl", toolrl_rows[5]).tools()[1]["function"]["parameters"]
    assert password["required"] == [] and password["properties"]["include_special"]["type"] == "boolean"
    # page as an int: r_name 1, keys 1, values 0; S_max 1 + 1 + 1 = 3 -> 6·2/3 − 3 = 1; format 1
    text = '<think>news</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": 1}}\n</tool_call>'
    v = env.verify(text)
    assert v.reward == pytest.approx(2.0) and v.failed == {"calls": "GetNews: page = 1, expected '1'"}
    # two gold calls, only the first made, exactly: r_name 1/2, match 1 + 3; S_max 1 + 2 + 6 = 9 -> 0
    env = make_env("toolrl", toolrl_rows[4])
    env.call("dashboard", {"login_id": "user123", "api_key": "key123", "survey_code": "ABC123"})
    v = env.verify("Here is your dashboard.")
    assert v.info["toolrl"] == {"format": 1.0, "correctness": pytest.approx(0.0), "reward": pytest.approx(1.0)}
    assert v.failed == {"calls": "missing call tsv2"} and v.info["source"] == "calls"
    # a <response>-only gold: a tool call breaks the gold-aware format (0) and scores −3
    env = make_env("toolrl", toolrl_rows[1])
    v = env.verify('<think>t</think>\n<tool_call>\n{"name": "getSentenceLength", "parameters": {}}\n</tool_call>')
    assert v.reward == -3.0 and "<think> + <response>" in v.failed["format"]
    assert "unexpected call getSentenceLength" in v.failed["calls"]
    assert env.verify("<think>t</think>\n<response>Please give me the text.</response>").reward == 4.0


def test_toolrl_core_follows_rlla(toolrl_rows):
    # ToolRL matches only calls of the same tool: a wrong name earns no parameter credit
    assert toolrl_correctness([("g", {"a": 1})], [("f", {"a": 1})]) == -3.0
    # tool names overlap as multisets (rlla.py's match_score): r_name 1/2, match 2, S_max 5 -> 0
    assert toolrl_correctness([("f", {"a": 1})], [("f", {"a": 1}), ("f", {"a": 2})]) == pytest.approx(0.0)
    assert toolrl_format_score("<think>t</think>\n<response>r</response>", expect={"tool_call"}) == 0.0
    assert toolrl_format_score("<think>t</think>\n<response>r</response>") == 1.0
    gold = toolrl_rows[0]["reward_model"]["ground_truth"]
    assert toolrl_score(gold, gold).reward == 4.0
    with pytest.raises(ConfigError, match="not JSON call lines"):
        toolrl_score("x", "<tool_call>{oops</tool_call>")
