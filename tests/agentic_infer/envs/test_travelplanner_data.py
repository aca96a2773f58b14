"""TravelPlanner's 45 training queries: the query parser, the reference parser and the gold plans, on all tp_rows.

Expected values come from the data itself where it has them (the aligned train_ref_info.jsonl: origin, dates,
destination cities; the gold plans: days and the "(State)" of multi-city trips), otherwise from reading the
queries by hand (people, budgets, local constraints below).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from collections import Counter

from agentic_infer.envs.travelplanner.constraints import COMMONSENSE, evaluate_plan
from agentic_infer.envs.travelplanner.plan import parse_plan, schema_problems
from agentic_infer.envs.travelplanner.query import parse_query
from agentic_infer.envs.travelplanner.reference import ReferenceInfo, user_message

# read off the 45 queries by hand ("a single person", "solo", unstated -> 1)
PEOPLE = [1] * 15 + [2, 2, 8, 2, 2, 6, 4, 7, 2, 4, 4, 5, 2, 4, 2, 2, 3, 2, 2, 5, 3, 7, 3, 2, 5, 5, 4, 2, 2, 2]
BUDGETS = [1700, 900, 1400, 1900, 1600, 3100, 3600, 2300, 1400, 3400, 7700, 3000, 4200, 3600, 5700, 2300, 4700,
           6500, 2000, 1100, 15100, 12300, 13900, 4700, 13800, 5800, 12700, 9500, 19400, 4500, 1500, 3100, 1300, 1400,
           3600, 7900, 8500, 3600, 2800, 7100, 15100, 11000, 3800, 5500, 5100]
AF, AC = ["American", "Mediterranean", "French", "Chinese"], ["American", "Chinese"]
LOCAL = {  # row -> the local constraints it sets (house rule, cuisine, room type, transportation)
    15: {"cuisine": ["American", "French"]}, 16: {"house rule": "parties"}, 17: {"house rule": "children under 10"},
    18: {"room type": "private room"}, 19: {"cuisine": AC}, 20: {"room type": "entire room"},
    21: {"house rule": "smoking"}, 22: {"cuisine": ["Indian", "French"]}, 23: {"cuisine": ["Mexican", "Chinese"]},
    24: {"room type": "private room"}, 25: {"house rule": "children under 10"}, 26: {"room type": "entire room"},
    27: {"cuisine": AC}, 28: {"room type": "private room"}, 29: {"cuisine": ["Italian", "Mediterranean"]},
    30: {"house rule": "children under 10", "transportation": "no self-driving", "cuisine": AF},
    31: {"house rule": "pets", "room type": "entire room", "transportation": "no self-driving"},
    32: {"house rule": "parties", "room type": "entire room", "transportation": "no flight"},
    33: {"house rule": "pets", "room type": "private room", "cuisine": ["Indian", "American", "French", "Italian"]},
    34: {"cuisine": ["French", "Mediterranean", "Indian", "Chinese"], "room type": "entire room",
         "transportation": "no self-driving"},
    35: {"house rule": "parties", "room type": "entire room", "transportation": "no self-driving"},
    36: {"house rule": "visitors", "room type": "entire room",
         "cuisine": ["French", "American", "Mediterranean", "Italian"]},
    37: {"room type": "entire room", "transportation": "no flight",
         "cuisine": ["American", "Mediterranean", "Italian", "French"]},
    38: {"room type": "private room", "house rule": "children under 10", "transportation": "no flight"},
    39: {"house rule": "smoking", "cuisine": ["American", "French", "Mediterranean", "Italian"],
         "transportation": "no flight"},
    40: {"house rule": "pets", "cuisine": ["Mexican", "Italian", "Mediterranean", "Indian"], "room type": "entire room"},
    41: {"room type": "entire room", "house rule": "parties", "transportation": "no self-driving"},
    42: {"room type": "entire room", "transportation": "no flight", "cuisine": ["Chinese", "French", "American", "Indian"]},
    43: {"room type": "entire room", "transportation": "no flight",
         "cuisine": ["American", "Chinese", "Mexican", "French"]},
    44: {"house rule": "pets", "cuisine": ["American", "Mediterranean", "Chinese", "Italian"],
         "transportation": "no flight"},
}
# Row 41's gold plan spends day 4 at San Angelo's attractions and day 5 at Houston's while staying in San Antonio;
# San Angelo is not in that query's sandbox. TravelPlanner's own checker passes it only through two bugs: on a
# non-travel day it iterates the city name's characters ('S' in the text suffices), and it searches the full
# database. It is the one gold plan that fails here, on exactly these two checks.
GOLD_DEFECTS = {41: {"within_current_city", "within_sandbox"}}


def _gold(row):
    return ast.literal_eval(row["messages"][2]["content"])


def test_rows_and_reference_lines_are_aligned(tp_rows, tp_refs):
    assert len(tp_rows) == len(tp_refs) == 45
    for row, ref in zip(tp_rows, tp_refs):
        given = ast.literal_eval(user_message(row)[len("Given Information:"):].rsplit("\nQuery:", 1)[0])
        assert [item["Description"] for item in given] == list(ref)


def test_reference_parsed_from_text_equals_the_json_lines(tp_rows, tp_refs):
    def same(a, b):
        if isinstance(a, float):
            return math.isclose(a, b, abs_tol=1e-5)  # the text rounds coordinates to 6 decimals
        return " ".join(str(a).split()) == " ".join(str(b).split())  # the text drops trailing blanks

    for i, (row, ref) in enumerate(zip(tp_rows, tp_refs)):
        text, js = ReferenceInfo.from_task_row(row), ReferenceInfo.from_json(ref)
        for table in ("attractions", "restaurants", "accommodations", "flights", "ground"):
            a, b = getattr(text, table), getattr(js, table)
            assert a.keys() == b.keys(), (i, table)
            for key in a:
                xs, ys = (a[key], b[key]) if table != "ground" else ([a[key]], [b[key]])
                assert len(xs) == len(ys), (i, key)
                for x, y in zip(xs, ys):
                    dx, dy = dataclasses.asdict(x), dataclasses.asdict(y)
                    assert all(same(dx[f], dy[f]) for f in dx), (i, key, dx, dy)


def test_query_parser_on_all_45(tp_rows, tp_refs):
    for i, (row, ref) in enumerate(zip(tp_rows, tp_refs)):
        q = parse_query(user_message(row))
        flights = [re.match(r"Flight from (.+?) to (.+?) on (\S+)$", k).groups() for k in ref if k.startswith("Flight")]
        cities = list(dict.fromkeys(k.split(" in ", 1)[1] for k in ref if k.startswith("Attractions")))
        gold = [d for d in _gold(row) if d]
        assert q.org == flights[0][0] == flights[-1][1], i
        assert (q.dates[0], q.dates[-1]) == (flights[0][2], flights[-1][2]), i
        assert q.days == len(q.dates) == len(gold), i
        assert q.visiting_city_number == len(cities), i
        if len(cities) == 1:
            assert q.dest == cities[0], i
        else:
            states = set(re.findall(r"\((.+?)\)", " ".join(d["current_city"] for d in gold)))
            assert {q.dest} == states, i
        assert q.people_number == PEOPLE[i], i
        assert q.budget == BUDGETS[i] and isinstance(q.budget, int), i
        assert {k: v for k, v in q.local_constraint.items() if v} == LOCAL.get(i, {}), i


def test_gold_plans_pass_every_check_except_row_41s_two_defects(tp_rows):
    per_check = Counter()
    for i, row in enumerate(tp_rows):
        q, ref = parse_query(user_message(row)), ReferenceInfo.from_task_row(row)
        parsed = parse_plan(row["messages"][2]["content"])
        assert parsed.source == "literal" and schema_problems(parsed.plan) == [], i
        checks = evaluate_plan(q, ref, parsed.plan)
        failed = {c.name for c in checks if not c.passed}
        if i in GOLD_DEFECTS:
            assert {c.name for c in checks if not c.passed and c.category == "commonsense"} == GOLD_DEFECTS[i]
            assert all(c.detail.startswith("not evaluated") for c in checks if c.category == "hard")
            continue
        assert failed == set(), (i, {c.name: c.detail for c in checks if not c.passed})
        for c in checks:
            per_check[c.name] += c.passed
    assert all(per_check[name] == 44 for name in COMMONSENSE)
    assert per_check["budget"] == 44


def test_denominators_match_travelplanner_train(tp_rows):
    cats = Counter()
    for row in tp_rows:
        q, ref = parse_query(user_message(row)), ReferenceInfo.from_task_row(row)
        cats.update(c.category for c in evaluate_plan(q, ref, None))
    assert cats == {"commonsense": 360, "hard": 105}
