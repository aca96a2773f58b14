"""TravelPlanner's search tools over one query's sandbox, as OpenAI function schemas and their text answers.

    TOOL_SCHEMAS                                  # FlightSearch, RestaurantSearch, AccommodationSearch, ...
    run_tool(ref, query, "RestaurantSearch", {"city": "Rockford"})    # one line per restaurant

In the spirit of TravelPlanner's tool agents: FlightSearch[origin, destination, date], RestaurantSearch[city],
AccommodationSearch[city], AttractionSearch[city], GoogleDistanceMatrix[origin, destination, mode] and
CitySearch[state]. A route the sandbox searched and found empty answers as TravelPlanner does ("There is no
flight from A to B on D.", "Self-driving, from A to B, no valid information."); a city, route, date or state
the sandbox does not cover raises `Refusal`, which the env shows as "Error: ..." with what it does cover.
Not covered: TravelPlanner's NotebookWrite and Planner tools (the agent keeps notes in its own context).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from agentic_infer.envs.base import Refusal, function_schema
from agentic_infer.envs.travelplanner.query import Query
from agentic_infer.envs.travelplanner.reference import ReferenceInfo, name_key

_CITY = {"type": "string", "description": "a city name, e.g. 'Rockford'"}
TOOL_SCHEMAS: list[dict[str, Any]] = [
    function_schema("FlightSearch", "Flights from one city to another on a date (YYYY-MM-DD): number, price per "
                    "person, times.", {"origin": _CITY, "destination": _CITY,
                                       "date": {"type": "string", "description": "YYYY-MM-DD, e.g. 2022-03-16"}},
                    ["origin", "destination", "date"]),
    function_schema("RestaurantSearch", "Restaurants in a city: name, average cost per person, cuisines, rating.",
                    {"city": _CITY}, ["city"]),
    function_schema("AccommodationSearch", "Accommodations in a city: name, price per night, room type, house "
                    "rules, minimum nights, maximum occupancy.", {"city": _CITY}, ["city"]),
    function_schema("AttractionSearch", "Attractions in a city: name, address, phone, website.", {"city": _CITY},
                    ["city"]),
    function_schema("GoogleDistanceMatrix", "Self-driving or taxi between two cities: duration, distance, cost "
                    "(per car of 5 people / per taxi of 4).",
                    {"origin": _CITY, "destination": _CITY,
                     "mode": {"type": "string", "enum": ["self-driving", "taxi"]}}, ["origin", "destination", "mode"]),
    function_schema("CitySearch", "The cities of a state that this trip can visit.",
                    {"state": {"type": "string", "description": "a US state, e.g. 'Texas'"}}, ["state"]),
]
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOL_SCHEMAS)


def _text(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise Refusal(f"argument {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _row(fields: Mapping[str, Any]) -> str:
    return "; ".join(f"{k}: {v:g}" if isinstance(v, float) else f"{k}: {v}" for k, v in fields.items())


def _city(ref: ReferenceInfo, name: str, table: Mapping[str, Any], what: str) -> str:
    city = ref.city(name)
    if city is None or city not in table:
        raise Refusal(f"no {what} data for {name!r} in this trip's sandbox; it covers {', '.join(table) or 'none'}")
    return city


def _flights(ref: ReferenceInfo, query: Query, args: Mapping[str, Any]) -> str:
    origin, destination, date = _text(args, "origin"), _text(args, "destination"), _text(args, "date")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise Refusal(f"date {date!r} is not YYYY-MM-DD; the trip's dates are {', '.join(query.dates)}")
    found = ref.flights_between(origin, destination, date)
    if found is None:
        routes = sorted({f"{o} -> {d} on {t}" for o, d, t in ref.flights})
        raise Refusal(f"no flight data for {origin} -> {destination} on {date} in this trip's sandbox; it covers "
                      f"{'; '.join(routes)}")
    if not found:
        return f"There is no flight from {origin} to {destination} on {date}."
    return "\n".join(_row({"Flight Number": f.number, "Price": f.price, "DepTime": f.dep_time, "ArrTime": f.arr_time,
                           "ActualElapsedTime": f.elapsed, "FlightDate": f.date, "OriginCityName": f.origin,
                           "DestCityName": f.destination, "Distance": f.distance}) for f in found)


def _restaurants(ref: ReferenceInfo, query: Query, args: Mapping[str, Any]) -> str:
    city = _city(ref, _text(args, "city"), ref.restaurants, "restaurant")
    return "\n".join(_row({"Name": r.name, "Average Cost": r.average_cost, "Cuisines": r.cuisines,
                           "Aggregate Rating": r.rating, "City": r.city}) for r in ref.restaurants[city])


def _accommodations(ref: ReferenceInfo, query: Query, args: Mapping[str, Any]) -> str:
    city = _city(ref, _text(args, "city"), ref.accommodations, "accommodation")
    return "\n".join(_row({"NAME": a.name, "price": a.price, "room type": a.room_type, "house_rules": a.house_rules,
                           "minimum nights": a.minimum_nights, "maximum occupancy": a.maximum_occupancy,
                           "review rate number": a.review_rate, "city": a.city}) for a in ref.accommodations[city])


def _attractions(ref: ReferenceInfo, query: Query, args: Mapping[str, Any]) -> str:
    city = _city(ref, _text(args, "city"), ref.attractions, "attraction")
    return "\n".join(_row({"Name": a.name, "Address": a.address, "Phone": a.phone, "Website": a.website,
                           "City": a.city}) for a in ref.attractions[city])


def _distance(ref: ReferenceInfo, query: Query, args: Mapping[str, Any]) -> str:
    origin, destination, mode = _text(args, "origin"), _text(args, "destination"), _text(args, "mode").lower()
    if mode not in ("self-driving", "taxi"):
        raise Refusal(f"mode {mode!r} is not 'self-driving' or 'taxi'")
    route = ref.route(mode, origin, destination)
    if route is None:
        routes = sorted({f"{o} -> {d}" for m, o, d in ref.ground if m == mode})
        raise Refusal(f"no {mode} data for {origin} -> {destination} in this trip's sandbox; it covers "
                      f"{'; '.join(routes)}")
    label = "Self-driving" if mode == "self-driving" else "Taxi"
    if route.cost is None:
        return f"{label}, from {route.origin} to {route.destination}, no valid information."
    return (f"{label}, from {route.origin} to {route.destination}, duration: {route.duration}, distance: "
            f"{route.distance}, cost: {route.cost:g}")


def _cities(ref: ReferenceInfo, query: Query, args: Mapping[str, Any]) -> str:
    state = _text(args, "state")
    if query.visiting_city_number < 2:
        raise Refusal(f"this is a one-city trip to {query.dest}; there is no state to choose cities from")
    if name_key(state) != name_key(query.dest):
        raise Refusal(f"this trip's sandbox lists cities of {query.dest} only, not {state!r}")
    return "\n".join(ref.cities())


_RUN: dict[str, Callable[[ReferenceInfo, Query, Mapping[str, Any]], str]] = {
    "FlightSearch": _flights, "RestaurantSearch": _restaurants, "AccommodationSearch": _accommodations,
    "AttractionSearch": _attractions, "GoogleDistanceMatrix": _distance, "CitySearch": _cities}


def run_tool(ref: ReferenceInfo, query: Query, name: str, arguments: Mapping[str, Any]) -> str:
    """The text answer of one tool call; `Refusal` for a call the sandbox cannot answer."""
    if name not in _RUN:
        raise Refusal(f"unknown tool {name!r}; available: {', '.join(TOOL_NAMES)}")
    return _RUN[name](ref, query, arguments)
