"""TravelPlannerEnv: registry, what the agent sees, the tools over the sandbox, state, and the staged reward."""

from __future__ import annotations

import ast
import copy
import json

import pytest

from agentic_infer.envs import make_env
from agentic_infer.envs.registry import get_env_spec
from agentic_infer.envs.travelplanner import ReferenceInfo, TravelPlannerEnv
from agentic_infer.errors import ConfigError


def test_registered_with_its_data_file(tp_rows):
    spec = get_env_spec("travelplanner")
    assert spec.default_files == ("tools/travelplanner/std_travelplanner.jsonl",)
    env = make_env("travelplanner", tp_rows[0], stage=1)
    assert isinstance(env, TravelPlannerEnv) and env.stage == 1
    assert set(env.tool_names()) == set(spec.tools) == {"FlightSearch", "RestaurantSearch", "AccommodationSearch",
                                                        "AttractionSearch", "GoogleDistanceMatrix", "CitySearch"}
    with pytest.raises(ConfigError):
        TravelPlannerEnv(tp_rows[0], stage=4)
    with pytest.raises(ConfigError):
        TravelPlannerEnv({"messages": []})


def test_the_agent_sees_the_query_not_the_sandbox(tp_rows):
    env = TravelPlannerEnv(tp_rows[0])
    obs = env.first_observation()
    assert obs.startswith("Please help me plan a trip from St. Petersburg to Rockford") and "Coco Bambu" not in obs
    text = env.instructions()
    assert all(k in text for k in ("current_city", "transportation", "breakfast", "attraction", "lunch", "dinner",
                                   "accommodation", "<answer>"))


def test_tools_answer_from_the_sandbox(tp_rows):
    env = TravelPlannerEnv(tp_rows[0])
    flights = env.call("FlightSearch", {"origin": "St. Petersburg", "destination": "Rockford", "date": "2022-03-16"})
    assert flights.startswith("Flight Number: F3573659; Price: 474; DepTime: 15:40") and flights.count("\n") == 0
    assert "Coco Bambu; Average Cost: 72" in env.call("RestaurantSearch", {"city": "Rockford"})
    assert env.call("RestaurantSearch", {"city": "rockford"}).count("\n") + 1 == len(env.ref.restaurants["Rockford"])
    hotels = env.call("AccommodationSearch", {"city": "Rockford"})
    assert "NAME: Pure luxury one bdrm + sofa bed on Central Park; price: 243; room type: Entire home/apt" in hotels
    assert "Burpee Museum of Natural History" in env.call("AttractionSearch", {"city": "Rockford"})
    # the sandbox searched this route and found nothing: TravelPlanner's own answer, not an error
    assert env.call("GoogleDistanceMatrix", {"origin": "St. Petersburg", "destination": "Rockford",
                                             "mode": "self-driving"}) == \
        "Self-driving, from St. Petersburg to Rockford, no valid information."
    row5 = TravelPlannerEnv(tp_rows[5])
    assert row5.call("GoogleDistanceMatrix", {"origin": "San Antonio", "destination": "Houston", "mode": "taxi"}) == \
        "Taxi, from San Antonio to Houston, duration: 2 hours 56 mins, distance: 317 km, cost: 317"
    assert row5.call("CitySearch", {"state": "Texas"}).split("\n") == ["San Antonio", "Houston"]
    row10 = TravelPlannerEnv(tp_rows[10])
    assert row10.call("FlightSearch", {"origin": "Moab", "destination": "Vernal", "date": "2022-03-27"}) == \
        "There is no flight from Moab to Vernal on 2022-03-27."


@pytest.mark.parametrize("tool, args, needle", [
    ("RestaurantSearch", {"city": "Paris"}, "no restaurant data for 'Paris'"),
    ("FlightSearch", {"origin": "St. Petersburg", "destination": "Rockford", "date": "2022-03-17"}, "no flight data"),
    ("FlightSearch", {"origin": "St. Petersburg", "destination": "Rockford", "date": "March 16"}, "not YYYY-MM-DD"),
    ("GoogleDistanceMatrix", {"origin": "Rockford", "destination": "Paris", "mode": "taxi"}, "no taxi data"),
    ("GoogleDistanceMatrix", {"origin": "Rockford", "destination": "Paris", "mode": "walk"}, "not 'self-driving'"),
    ("CitySearch", {"state": "Illinois"}, "one-city trip"),
    ("AttractionSearch", {}, "argument 'city'"),
    ("Planner", {"x": 1}, "unknown tool"),
])
def test_calls_without_data_are_clear_errors(tp_rows, tool, args, needle):
    env = TravelPlannerEnv(tp_rows[0])
    record = env.call_record(tool, args)
    assert record.error and record.output.startswith("Error: ") and needle in record.output


def test_state_is_the_queries_made_and_restores(tp_rows):
    env = TravelPlannerEnv(tp_rows[0])
    empty = env.digest()
    snap = env.snapshot()
    env.call("RestaurantSearch", {"city": "Rockford"})
    env.call("RestaurantSearch", {"city": "Paris"})
    assert env.state() == {"queries": [
        {"tool": "RestaurantSearch", "arguments": {"city": "Rockford"}, "found": True},
        {"tool": "RestaurantSearch", "arguments": {"city": "Paris"}, "found": False}]}
    other = TravelPlannerEnv(tp_rows[0])
    other.call("RestaurantSearch", {"city": "Paris"})
    other.call("RestaurantSearch", {"city": "Rockford"})
    assert other.digest() == env.digest() != empty  # the same queries, in any order
    env.restore(snap)
    assert env.digest() == empty and env.calls == []


def test_ref_info_override_gives_the_same_verdict(tp_rows, tp_refs):
    gold = tp_rows[7]["messages"][2]["content"]
    from_text = TravelPlannerEnv(tp_rows[7]).verify(gold)
    from_json = TravelPlannerEnv(tp_rows[7], ref_info=tp_refs[7]).verify(gold)
    from_obj = TravelPlannerEnv(tp_rows[7], ref_info=ReferenceInfo.from_json(tp_refs[7])).verify(gold)
    assert from_text.to_dict() == from_json.to_dict() == from_obj.to_dict()
    assert from_text.success and from_text.info["cost"] <= from_text.info["budget"]


def test_verdict_reward_per_stage_hand_computed(tp_rows):
    gold = [d for d in ast.literal_eval(tp_rows[0]["messages"][2]["content"]) if d]
    perfect = TravelPlannerEnv(tp_rows[0]).verify(json.dumps(gold))
    assert perfect.success and perfect.reward == 1.0  # stage 3 by default: the final pass
    assert perfect.info["rewards"] == {"stage1": 6.0, "stage2": 3.0, "stage3": 1.0}

    repeated = copy.deepcopy(gold)
    repeated[2]["breakfast"] = repeated[1]["breakfast"]
    v = TravelPlannerEnv(tp_rows[0], stage=1).verify(json.dumps(repeated))
    # schema 1 + cs 7/8 + hard 1/1 + cs macro 0 + hard macro 1 + pass 0
    assert v.info["terms"] == {"schema": 1.0, "cs_micro": 0.875, "hard_micro": 1.0, "cs_macro": 0.0,
                               "hard_macro": 1.0, "pass": 0.0}
    assert v.reward == 3.875 and v.info["rewards"] == {"stage1": 3.875, "stage2": 1.0, "stage3": 0.0} and not v.success

    incomplete = copy.deepcopy(gold)
    incomplete[1]["lunch"] = "-"
    v = TravelPlannerEnv(tp_rows[0], stage=2).verify(json.dumps(incomplete))
    # the hard checks are not evaluated (so failed): 1 + 7/8 + 0 + 0 + 0 + 0 in stage 1; nothing in stage 2
    assert v.info["rewards"] == {"stage1": 1.875, "stage2": 0.0, "stage3": 0.0} and v.reward == 0.0

    extra_key = copy.deepcopy(gold)
    extra_key[0]["notes"] = "x"
    v = TravelPlannerEnv(tp_rows[0], stage=1).verify(json.dumps(extra_key))
    # schema and pass (every check, schema included) are lost, the four constraint terms stay: a sum, not a chain
    assert v.failed.keys() == {"schema"} and v.reward == 4.0 and not v.success
