"""Each TravelPlanner check fails on a hand-broken gold plan; the Drive hack and out-of-sandbox names are closed;
plans parse from JSON, Python literals, fenced or tagged text and TravelPlanner's "Day 1:" format."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json

import pytest

from agentic_infer.envs.travelplanner import TravelPlannerEnv, parse_plan
from agentic_infer.envs.travelplanner.constraints import evaluate_plan, transport_mode


def _gold(row):
    return [d for d in ast.literal_eval(row["messages"][2]["content"]) if d]


def _failed(row, plan):
    verdict = TravelPlannerEnv(row).verify(json.dumps(plan))
    return {c.name for c in verdict.checks if not c.passed}


def _apply(row, edit):
    plan = copy.deepcopy(_gold(row))
    edit(plan)
    return plan


def _broken(row, edit):
    return _failed(row, _apply(row, edit))


# row 0: St. Petersburg -> Rockford, 3 days, 1 person, $1,700; its gold plan (below, by day) passes everything.
def test_row0_gold_passes(tp_rows):
    assert _failed(tp_rows[0], _gold(tp_rows[0])) == set()


def test_repeated_restaurant_fails_diverse_restaurants(tp_rows):
    def edit(p):
        p[2]["breakfast"] = p[1]["breakfast"]  # Dial A Cake twice
    assert _broken(tp_rows[0], edit) == {"diverse_restaurants"}


def test_repeated_attraction_fails_diverse_attractions(tp_rows):
    def edit(p):
        p[2]["attraction"] = "Burpee Museum of Natural History, Rockford;"  # already on day 2
    assert _broken(tp_rows[0], edit) == {"diverse_attractions"}


def test_a_meal_in_another_city_fails_within_current_city(tp_rows):
    # row 5: Orlando -> San Antonio (days 1-2) -> Houston (days 3-4); a Houston restaurant for day 2's lunch
    used = json.dumps(_gold(tp_rows[5]))
    cheap = min((r for r in TravelPlannerEnv(tp_rows[5]).ref.restaurants["Houston"] if r.name not in used),
                key=lambda r: r.average_cost)

    def edit(p):
        p[1]["lunch"] = f"{cheap.name}, Houston(Texas)"
    assert _broken(tp_rows[5], edit) == {"within_current_city"}


def test_a_trip_that_does_not_return_fails_the_route(tp_rows):
    def edit(p):
        p[2]["current_city"], p[2]["transportation"] = "Rockford", "-"
    assert _broken(tp_rows[0], edit) == {"reasonable_city_route"}


def test_self_driving_with_a_taxi_fails_non_conflicting(tp_rows):
    # row 10 self-drives every leg; the last leg by taxi (in the sandbox: 2167) conflicts
    def edit(p):
        p[6]["transportation"] = "Taxi, from Vernal(Utah) to Houston, duration: 20 hours 31 mins, cost: 2167"
    failed = _broken(tp_rows[10], edit)
    assert "non_conflicting_transportation" in failed and failed <= {"non_conflicting_transportation", "budget"}


def test_one_night_at_a_two_night_minimum_fails_minimum_nights(tp_rows):
    def edit(p):  # Pure luxury ... (minimum 2 nights) only on day 1; day 2 at a 1-night-minimum room
        p[1]["accommodation"] = "Private Room in a two bedroom apt., Rockford"
    assert _broken(tp_rows[0], edit) == {"minimum_nights"}


def test_a_missing_meal_fails_complete_information_and_skips_hard(tp_rows):
    def edit(p):
        p[1]["lunch"] = "-"
    verdict = TravelPlannerEnv(tp_rows[0]).verify(json.dumps(_apply(tp_rows[0], edit)))
    assert verdict.failed.keys() == {"complete_information", "budget"}
    assert verdict.failed["budget"].startswith("not evaluated")


def test_an_expensive_hotel_fails_the_budget(tp_rows):
    def edit(p):  # 2 nights x $1,030 > $1,700 on their own
        p[0]["accommodation"] = p[1]["accommodation"] = "Spacious 3BDR Prime Location!, Rockford"
    assert _broken(tp_rows[0], edit) == {"budget"}


def test_house_rule_room_type_cuisine_and_transportation(tp_rows):
    env16 = TravelPlannerEnv(tp_rows[16])  # parties allowed, Atlanta, 2 nights
    no_parties = next(a for a in env16.ref.accommodations["Atlanta"]
                      if "No parties" in a.house_rules and a.minimum_nights <= 2)
    assert _broken(tp_rows[16], lambda p: [d.update(accommodation=f"{no_parties.name}, Atlanta")
                                        for d in p[:2]]) >= {"room_rule"}

    env18 = TravelPlannerEnv(tp_rows[18])  # private room, Orlando
    entire = next(a for a in env18.ref.accommodations["Orlando"] if a.room_type == "Entire home/apt")
    assert "room_type" in _broken(tp_rows[18], lambda p: [d.update(accommodation=f"{entire.name}, Orlando")
                                                       for d in p[:2]])

    env15 = TravelPlannerEnv(tp_rows[15])  # American and French, Norfolk
    plain = [r for r in env15.ref.restaurants["Norfolk"] if "American" not in r.cuisines and "French" not in r.cuisines]

    def no_cuisine(p):
        slots = [(d, m) for d in p for m in ("breakfast", "lunch", "dinner") if d[m] != "-"]
        for (d, m), r in zip(slots, plain):
            d[m] = f"{r.name}, Norfolk"
    assert "cuisine" in _broken(tp_rows[15], no_cuisine)

    env32 = TravelPlannerEnv(tp_rows[32])  # no flight; the gold plan self-drives
    out, back = env32.ref.flights_between("Grand Forks", "Minneapolis"), env32.ref.flights_between("Minneapolis",
                                                                                                     "Grand Forks")

    def fly(p):
        p[0]["transportation"] = f"Flight Number: {out[0].number}, from Grand Forks to Minneapolis"
        p[2]["transportation"] = f"Flight Number: {back[0].number}, from Minneapolis to Grand Forks"
    assert "transportation" in _broken(tp_rows[32], fly)


def test_drive_is_self_driving_not_a_free_pass(tp_rows):
    """TravelPlanner #51: its matcher looks for "self-driving", so "Drive" escapes every rule about it."""
    assert "self-driving" not in "drive from houston to fayetteville"  # what the official matcher sees
    assert transport_mode("Drive from Houston to Fayetteville") == "self-driving"
    assert transport_mode("Driving, from A to B") == "self-driving"
    assert transport_mode("Flight Number: F1, from A to B") == "flight"

    # row 30 says "no self-driving"; its gold plan flies both ways
    def drive(p):
        p[0]["transportation"] = "Drive from Houston to Fayetteville"
        p[2]["transportation"] = "Drive from Fayetteville to Houston"
    assert _broken(tp_rows[30], drive) == {"transportation"}

    def mixed(p):  # driving out, flying back: a conflict, whatever the wording
        p[0]["transportation"] = "Driving from Houston to Fayetteville"
    assert "non_conflicting_transportation" in _broken(tp_rows[30], mixed)

    def walk(p):  # a mode the sandbox does not have is not free
        p[0]["transportation"] = "Walk from Houston to Fayetteville"
    assert "within_sandbox" in _broken(tp_rows[30], walk)


@pytest.mark.parametrize("day, key, value", [
    (1, "dinner", "Le Fake Bistro, Rockford"),                      # a restaurant the sandbox lacks
    (1, "dinner", "Coco, Rockford"),                                # a substring of "Coco Bambu" is not its name
    (0, "accommodation", "The Ritz, Rockford"),                     # a hotel the sandbox lacks
    (0, "transportation", "Flight Number: F0000001, from St. Petersburg to Rockford, Departure Time: 15:40"),
    (1, "attraction", "Eiffel Tower, Rockford;"),
])
def test_names_outside_the_sandbox_fail(tp_rows, day, key, value):
    def edit(p):
        p[day][key] = value
        if key == "accommodation":
            p[1][key] = value
    failed = _broken(tp_rows[0], edit)
    assert "within_sandbox" in failed and "budget" in failed  # hard checks are not evaluated then


def test_plan_parsing_formats(tp_rows):
    gold = _gold(tp_rows[0])
    js = json.dumps(gold)
    for text, source in [(js, "json"), (tp_rows[0]["messages"][2]["content"], "literal"),
                         (f"Thinking...\n<answer>{js}</answer>", "json"), (f"Here you go:\n```json\n{js}\n```", "json"),
                         (f"Travel Plan: {gold!r}", "literal"), (json.dumps({"plan": gold}), "json")]:
        parsed = parse_plan(text)
        assert parsed.source == source and [d for d in parsed.plan if d] == gold, text[:40]
    day_text = ("Day 1:\nCurrent City: from A to B\nTransportation: Flight Number: F1, from A to B\nBreakfast: -\n"
                "Attraction: -\nLunch: -\nDinner: X, B\nAccommodation: H, B\n\nDay 2:\nCurrent City: B\n")
    parsed = parse_plan(day_text)
    assert parsed.source == "text" and parsed.plan[0]["dinner"] == "X, B" and parsed.plan[1] == {
        "days": 2, "current_city": "B"}
    nothing = parse_plan("I could not make a plan.")
    assert nothing.plan is None and "no plan found" in nothing.error


def test_unparsable_response_fails_everything(tp_rows):
    verdict = TravelPlannerEnv(tp_rows[0], stage=1).verify("no plan here")
    assert not any(c.passed for c in verdict.checks) and verdict.reward == 0.0
    assert len(verdict.checks) == 1 + 8 + 1  # schema, 8 commonsense, budget


def test_a_flight_on_another_day_fails_within_sandbox(tp_rows):
    env = TravelPlannerEnv(tp_rows[0])
    late = dataclasses.replace(env.query, dates=["2022-03-17", "2022-03-18", "2022-03-19"])
    checks = {c.name: c for c in evaluate_plan(late, env.ref, _gold(tp_rows[0]))}
    assert not checks["within_sandbox"].passed and "flies on 2022-03-16" in checks["within_sandbox"].detail
    assert checks["within_current_city"].passed


def test_costs_hand_computed(tp_rows):
    # row 0, 1 person: flights 474 + 346, meals 72+29+20+56+42+49+34, 2 nights at 243 (occupancy 3: one room)
    assert TravelPlannerEnv(tp_rows[0]).verify(json.dumps(_gold(tp_rows[0]))).info["cost"] == 820 + 302 + 2 * 243
    # row 17, 8 people: self-driving 40 per car of 5 (2 cars) each way, meals (96+28+65+86+12+74) x 8,
    # 2 nights at 933 (occupancy 9: one room)
    assert TravelPlannerEnv(tp_rows[17]).verify(json.dumps(_gold(tp_rows[17]))).info["cost"] == 2 * 80 + 361 * 8 + 2 * 933

    def taxi_and_small_rooms(p):  # taxis of 4 (2 each way at 819), rooms of 2 (4 rooms at 290 per night)
        p[0]["transportation"] = "Taxi, from Asheville to Baltimore"
        p[2]["transportation"] = "Taxi, from Baltimore to Asheville"
        p[0]["accommodation"] = p[1]["accommodation"] = "Contemporary Home Away from Home, Entire house, Baltimore"
    verdict = TravelPlannerEnv(tp_rows[17]).verify(json.dumps(_apply(tp_rows[17], taxi_and_small_rooms)))
    assert verdict.info["cost"] == 2 * 2 * 819 + 361 * 8 + 2 * 4 * 290 and "budget" in verdict.failed


def test_taxis_seat_four_and_cars_five(tp_rows):
    # row 34, 5 people, Atlanta <-> Chattanooga: taxi 190 each way (2 taxis), self-driving 9 each way (1 car)
    def by(mode):
        def edit(p):
            p[0]["transportation"] = f"{mode}, from Atlanta to Chattanooga"
            p[2]["transportation"] = f"{mode}, from Chattanooga to Atlanta"
        return TravelPlannerEnv(tp_rows[34]).verify(json.dumps(_apply(tp_rows[34], edit))).info["cost"]
    assert by("Taxi") - by("Self-driving") == 2 * 2 * 190 - 2 * 9
