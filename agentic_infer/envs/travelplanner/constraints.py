"""TravelPlanner's constraint checks of a plan: 8 commonsense and up to 5 hard ones, each a `Check`.

    checks = evaluate_plan(query, ref, plan)     # Query (query.py), ReferenceInfo (reference.py), day records
    [c.name for c in checks if not c.passed]     # e.g. ["diverse_restaurants", "budget"]

Commonsense (category "commonsense", always all 8): within_current_city, within_sandbox, reasonable_city_route,
diverse_restaurants, non_conflicting_transportation, diverse_attractions, minimum_nights, complete_information.
Hard (category "hard"): budget always, then room_rule, cuisine, room_type, transportation for each local
constraint the query sets (TravelPlanner's denominators: 45 train plans give 360 commonsense and 105 hard
checks). As in TravelPlanner's eval, the hard checks are evaluated only when the plan is complete and within
the sandbox; otherwise they are present and failed ("not evaluated"), so a query's denominator never moves.

Semantics follow TravelPlanner's evaluation/commonsense_constraint.py and hard_constraint.py, over the query's
own sandbox (its reference information), with these deliberate changes, each closing a way to pass by
wording instead of planning:
- transport modes are read by word, not by the substring "self-driving" (TravelPlanner #51): "Drive" or
  "Driving from A to B" is self-driving (it conflicts with flights, breaks "no self-driving", costs fuel), and a
  mode the sandbox lacks ("Walk", "Bus") fails within_sandbox instead of passing every check for free;
- names match exactly (see reference.name_key), not as a substring of a real name;
- an attraction list is split on ";" (TravelPlanner drops the last entry when it lacks a trailing ";");
- a flight must fly on its day's date (TravelPlanner matches number and cities only);
- an intermediate city must be one of the sandbox's destination cities (TravelPlanner: in the destination
  state, for trips over 3 days), and day 1 must leave from the query's origin.
Not covered: TravelPlanner's delivery rate (a parse failure simply fails every check).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from agentic_infer.envs.base import Check
from agentic_infer.envs.travelplanner.query import Query
from agentic_infer.envs.travelplanner.reference import ReferenceInfo, city_of, name_key

COMMONSENSE = ("within_current_city", "within_sandbox", "reasonable_city_route", "diverse_restaurants",
               "non_conflicting_transportation", "diverse_attractions", "minimum_nights", "complete_information")
HARD = ("budget", "room_rule", "cuisine", "room_type", "transportation")
_HARD_KEY = {"room_rule": "house rule", "cuisine": "cuisine", "room_type": "room type",
             "transportation": "transportation"}
MEALS = ("breakfast", "lunch", "dinner")
_NO_MORE = "You don't need to fill in the information for this or later days."
_ROOM_TYPES = {"shared room": "Shared room", "private room": "Private room", "entire room": "Entire home/apt"}

Result = tuple[bool, str]  # (passed, detail on failure)


# -- reading a day record -----------------------------------------------------------------------------
def filled(value: Any) -> bool:
    return value is not None and str(value).strip() not in ("", "-")


def from_to(text: str) -> tuple[str, str] | None:
    """(A, B) of "from A to B" (each without its "(State)"), as TravelPlanner's extract_from_to."""
    m = re.search(r"from\s+(.+?)\s+to\s+([^,]+)(?=[,\s]|$)", str(text))
    return (city_of(m.group(1)), city_of(m.group(2))) if m else None


def day_cities(unit: dict[str, Any]) -> list[str]:
    cc = str(unit.get("current_city", ""))
    pair = from_to(cc) if "from" in cc else None
    return list(pair) if pair else [city_of(cc)]


def name_city(text: str) -> tuple[str, str] | None:
    """("Coco Bambu", "Rockford") of "Coco Bambu, Rockford" (the city is after the last comma)."""
    head, sep, tail = str(text).rpartition(",")
    return (head.strip(), city_of(tail)) if sep and head.strip() and tail.strip() else None


def attractions_of(value: Any) -> list[str]:
    return [a.strip() for a in str(value).split(";") if a.strip()] if filled(value) else []


def transport_mode(text: str) -> str | None:
    """"taxi" | "self-driving" | "flight" by word (TravelPlanner's priority), or None: no mode named."""
    low = str(text).lower()
    if re.search(r"\btaxi", low):
        return "taxi"
    if re.search(r"self[-\s]?driv|\bdriv(?:e|es|ing|en)\b|\bdrove\b", low):
        return "self-driving"
    if re.search(r"\bflight|\bf\d{5,}\b", low):
        return "flight"
    return None


def _flight_number(text: str) -> str | None:
    m = re.search(r"flight number:\s*(\w+)", text, re.IGNORECASE) or re.search(r"\b(F\d{5,})\b", text)
    return m.group(1) if m else None


def _same(a: str, b: str) -> bool:
    return name_key(a) == name_key(b)


class PlanChecker:
    """The checks of one plan against one query and its sandbox; `checks()` runs them all."""

    def __init__(self, query: Query, ref: ReferenceInfo, plan: list[dict[str, Any]]) -> None:
        self.q, self.ref, self.plan = query, ref, plan
        self.units = [u if isinstance(u, dict) else {} for u in plan[:query.days]]

    def _transports(self) -> Iterator[tuple[int, str, str | None, tuple[str, str] | None]]:
        """(day, text, mode, (origin, destination)) of every filled transportation."""
        for i, u in enumerate(self.units, start=1):
            value = u.get("transportation")
            if filled(value):
                value = str(value)
                pair = from_to(value) or from_to(str(u.get("current_city", "")))
                yield i, value, transport_mode(value), pair

    def _meals(self) -> Iterator[tuple[int, str, str]]:
        for i, u in enumerate(self.units, start=1):
            for meal in MEALS:
                if filled(u.get(meal)):
                    yield i, meal, str(u[meal])

    # -- commonsense --------------------------------------------------------------------------------
    def within_current_city(self) -> Result:
        for i, u in enumerate(self.units, start=1):
            cities = day_cities(u)
            here = [name_key(c) for c in cities]
            if filled(u.get("transportation")) and not all(c in str(u["transportation"]) for c in cities):
                return False, f"day {i}: the transportation {u['transportation']!r} does not go between {cities}"
            places = [(m, str(u[m])) for m in MEALS if filled(u.get(m))]
            for what, value in places + [("attraction", a) for a in attractions_of(u.get("attraction"))]:
                nc = name_city(value)
                if nc is None or name_key(nc[1]) not in here:
                    return False, f"day {i}: {what} {value!r} is not in the day's cities {cities}"
            if filled(u.get("accommodation")):
                nc = name_city(u["accommodation"])
                if nc is None or not _same(nc[1], cities[-1]):
                    return False, f"day {i}: accommodation {u['accommodation']!r} is not in {cities[-1]!r}"
        return True, ""

    def within_sandbox(self) -> Result:
        for i, value, mode, pair in self._transports():
            if mode is None:
                return False, (f"day {i}: transportation {value!r} names no mode the sandbox has; write "
                               "'Flight Number: F..., from A to B', 'Self-driving, from A to B' or 'Taxi, from A to B'")
            if pair is None:
                return False, f"day {i}: transportation {value!r} has no 'from A to B'"
            if mode == "flight":
                number = _flight_number(value)
                flight = self.ref.flight(number, *pair) if number else None
                if flight is None:
                    return False, f"day {i}: flight {number or value!r} from {pair[0]} to {pair[1]} is not in the sandbox"
                if i <= len(self.q.dates) and flight.date != self.q.dates[i - 1]:
                    return False, f"day {i} ({self.q.dates[i - 1]}): flight {number} flies on {flight.date}"
            else:
                route = self.ref.route(mode, *pair)
                if route is None or route.cost is None:
                    return False, f"day {i}: {mode} from {pair[0]} to {pair[1]} is not in the sandbox"
        for i, meal, value in self._meals():
            nc = name_city(value)
            if nc is None or self.ref.restaurant(*nc) is None:
                return False, f"day {i}: {meal} {value!r} is not a restaurant in the sandbox"
        for i, u in enumerate(self.units, start=1):
            for a in attractions_of(u.get("attraction")):
                nc = name_city(a)
                if nc is None or self.ref.attraction(*nc) is None:
                    return False, f"day {i}: attraction {a!r} is not in the sandbox"
            if filled(u.get("accommodation")):
                nc = name_city(u["accommodation"])
                if nc is None or self.ref.accommodation(*nc) is None:
                    return False, f"day {i}: accommodation {u['accommodation']!r} is not in the sandbox"
        return True, ""

    def reasonable_city_route(self) -> Result:
        route: list[str] = []
        for u in self.units:
            if "current_city" in u:
                route += day_cities(u)
        if not route:
            return False, "the plan names no current city"
        if not _same(route[0], self.q.org):
            return False, f"the trip should start from {self.q.org!r}, not {route[0]!r}"
        if not _same(route[0], route[-1]):
            return False, f"the trip should be a closed circle back to {self.q.org!r}; it ends in {route[-1]!r}"
        if not _valid_sequence([name_key(c) for c in route]):
            return False, f"the city sequence {route} is invalid (each visited city once, for at least a day)"
        destinations = {name_key(c) for c in self.ref.cities()}
        for c in route[1:-1]:
            if name_key(c) not in destinations:
                return False, f"{c!r} is not one of the sandbox's destination cities {self.ref.cities()}"
        return True, ""

    def _diverse(self, items: list[tuple[int, str]], what: str) -> Result:
        seen: set[str] = set()
        for i, value in items:
            nc = name_city(value)
            key = name_key(f"{nc[0]}, {nc[1]}") if nc else name_key(value)
            if key in seen:
                return False, f"day {i}: the {what} {value!r} is repeated"
            seen.add(key)
        return True, ""

    def diverse_restaurants(self) -> Result:
        return self._diverse([(i, v) for i, _, v in self._meals()], "restaurant")

    def diverse_attractions(self) -> Result:
        items = [(i, a) for i, u in enumerate(self.units, start=1) for a in attractions_of(u.get("attraction"))]
        return self._diverse(items, "attraction")

    def non_conflicting_transportation(self) -> Result:
        if not self.units or not filled(self.units[0].get("transportation")):
            return False, "the transportation of day 1 should not be empty"
        modes = {mode for *_, mode, _ in self._transports()}
        if "self-driving" in modes and modes & {"flight", "taxi"}:
            return False, f"self-driving conflicts with {sorted(modes & {'flight', 'taxi'})} in one trip"
        return True, ""

    def minimum_nights(self) -> Result:
        if any("accommodation" not in u for u in self.units):
            return False, "a day record has no accommodation"
        runs: list[list[Any]] = []
        for u in self.units:
            value = str(u["accommodation"])
            if runs and _same(runs[-1][0], value):
                runs[-1][1] += 1
            else:
                runs.append([value, 1])
        for value, nights in runs:
            nc = name_city(value) if filled(value) else None
            acc = self.ref.accommodation(*nc) if nc else None
            if acc is not None and nights < acc.minimum_nights:
                return False, f"{value!r} needs at least {acc.minimum_nights:g} nights; the plan stays {nights}"
        return True, ""

    def complete_information(self) -> Result:
        days = sum(1 for u in self.units if u and u.get("current_city") != _NO_MORE)
        if days != self.q.days:
            return False, f"the plan has {days} day records; the query asks for {self.q.days} days"
        visited: set[str] = set()
        for u in self.units:
            visited |= {name_key(c) for c in day_cities(u)}
        visited.discard(name_key(self.q.org))
        if len(visited) != self.q.visiting_city_number:
            return False, f"the plan visits {len(visited)} cities; the query asks for {self.q.visiting_city_number}"
        valid = 0
        for i, u in enumerate(self.units, start=1):
            missing = [k for k in ("transportation", *MEALS, "attraction", "accommodation") if k not in u]
            if missing:
                return False, f"day {i} has no {missing[0]}"
            cc = str(u.get("current_city", ""))
            travel = "from " in cc or " to " in cc
            if travel and not filled(u["transportation"]):
                return False, f"day {i} travels ({cc!r}) without transportation"
            if not travel and not filled(u["attraction"]):
                return False, f"day {i} has no attraction"
            if i != self.q.days and not filled(u["accommodation"]):
                return False, f"day {i} has no accommodation"
            if "from " not in cc and not all(filled(u[m]) for m in MEALS):
                return False, f"day {i} misses a meal"
            valid += sum(filled(u[k]) for k in ("transportation", *MEALS, "attraction", "accommodation"))
        if valid < 0.5 * 6 * self.q.days:
            return False, f"only {valid} of {6 * self.q.days} plan fields are filled (at least half are needed)"
        return True, ""

    # -- hard ---------------------------------------------------------------------------------------
    def total_cost(self) -> float:
        """The plan's cost as TravelPlanner computes it (people, cars of 5, taxis of 4, rooms by occupancy)."""
        people, total = self.q.people_number, 0.0
        for _, value, mode, pair in self._transports():
            if pair is None:
                continue
            if mode == "flight":
                number = _flight_number(value)
                f = self.ref.flight(number, *pair) if number else None
                total += f.price * people if f else 0.0
            elif mode in ("self-driving", "taxi"):
                route = self.ref.route(mode, *pair)
                if route is not None and route.cost is not None:
                    total += route.cost * math.ceil(people / (5 if mode == "self-driving" else 4))
        for _, _, value in self._meals():
            nc = name_city(value)
            r = self.ref.restaurant(*nc) if nc else None
            total += r.average_cost * people if r else 0.0
        for u in self.units:
            nc = name_city(u["accommodation"]) if filled(u.get("accommodation")) else None
            a = self.ref.accommodation(*nc) if nc else None
            if a is not None:
                total += a.price * math.ceil(people / max(a.maximum_occupancy, 1))
        return total

    def budget(self) -> Result:
        cost = self.total_cost()
        return (cost <= self.q.budget, f"the plan costs ${cost:,.0f}, over the budget of ${self.q.budget:,}")

    def _accommodations(self) -> Iterator[tuple[int, Any]]:
        for i, u in enumerate(self.units, start=1):
            nc = name_city(u["accommodation"]) if filled(u.get("accommodation")) else None
            a = self.ref.accommodation(*nc) if nc else None
            if a is not None:
                yield i, a

    def room_rule(self) -> Result:
        rule = self.q.local_constraint["house rule"]
        for i, a in self._accommodations():
            if f"no {rule}" in a.house_rules.lower():
                return False, f"day {i}: {a.name!r} has the rule {a.house_rules!r}; the query needs {rule} allowed"
        return True, ""

    def room_type(self) -> Result:
        wanted = self.q.local_constraint["room type"]
        for i, a in self._accommodations():
            bad = (a.room_type == "Shared room") if wanted == "not shared room" else \
                (a.room_type != _ROOM_TYPES.get(wanted, wanted))
            if bad:
                return False, f"day {i}: {a.name!r} is a {a.room_type!r}; the query asks for {wanted}"
        return True, ""

    def cuisine(self) -> Result:
        wanted = list(self.q.local_constraint["cuisine"])
        found: set[str] = set()
        for _, _, value in self._meals():
            nc = name_city(value)
            if nc is None or _same(nc[1], self.q.org):
                continue
            r = self.ref.restaurant(*nc)
            if r is not None:
                found |= {c for c in wanted if c in r.cuisines}
        missing = [c for c in wanted if c not in found]
        return (not missing, f"no meal offers the cuisine(s) {missing}")

    def transportation(self) -> Result:
        rule = self.q.local_constraint["transportation"]
        banned = {"no flight": "flight", "no self-driving": "self-driving"}.get(rule)
        for i, value, mode, _ in self._transports():
            if mode == banned:
                return False, f"day {i}: {value!r} is {mode}; the query says {rule}"
        return True, ""

    # -- all ------------------------------------------------------------------------------------------
    def checks(self) -> list[Check]:
        out = [_check(name, getattr(self, name), "commonsense") for name in COMMONSENSE]
        by_name = {c.name: c for c in out}
        eligible = by_name["complete_information"].passed and by_name["within_sandbox"].passed
        for name in hard_names(self.q):
            if eligible:
                out.append(_check(name, getattr(self, name), "hard"))
            else:
                out.append(Check(name, False, "not evaluated: TravelPlanner checks hard constraints only on a "
                                              "complete plan within the sandbox", "hard"))
        return out


def hard_names(query: Query) -> list[str]:
    """The hard checks a query has: budget, then one per local constraint it sets."""
    return ["budget", *(n for n in HARD[1:] if query.local_constraint.get(_HARD_KEY[n]))]


def _check(name: str, fn: Callable[[], Result], category: str) -> Check:
    passed, detail = fn()
    return Check(name, bool(passed), "" if passed else detail, category)


def _valid_sequence(cities: list[str]) -> bool:
    """TravelPlanner's is_valid_city_sequence: every middle city in one run of at least two entries."""
    if len(cities) < 3:
        return False
    visited: set[str] = set()
    i, n = 0, len(cities)
    while i < n:
        city = cities[i]
        if city in visited and i not in (0, n - 1):
            return False
        count = 0
        while i < n and cities[i] == city:
            count += 1
            i += 1
        if count == 1 and 0 < i - 1 < n - 1:
            return False
        visited.add(city)
    return True


def evaluate_plan(query: Query, ref: ReferenceInfo, plan: list[dict[str, Any]] | None) -> list[Check]:
    """The 8 commonsense and the query's hard checks of `plan` (every one failed when there is no plan)."""
    if not plan:
        detail = "no plan could be parsed"
        return [Check(n, False, detail, "commonsense") for n in COMMONSENSE] + \
               [Check(n, False, detail, "hard") for n in hard_names(query)]
    return PlanChecker(query, ref, plan).checks()
