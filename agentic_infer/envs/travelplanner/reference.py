"""TravelPlanner's reference information (one query's sandbox) as tables: flights, restaurants, accommodations,
attractions and ground transport (self-driving, taxi).

    ref = ReferenceInfo.from_task_row(row)        # parse the user message of std_travelplanner.jsonl
    ref = ReferenceInfo.from_json(ref_row)        # or the aligned line of train_ref_info.jsonl
    ref.restaurant("Coco Bambu", "Rockford")      # a Restaurant, or None when the sandbox has no such place
    ref.flights_between("St. Petersburg", "Rockford", "2022-03-16")   # list (empty: searched, none); None: unknown

Both sources hold the same entries, keyed by their description ("Restaurants in Rockford", "Flight from A to B on
2022-03-16", "Self-driving from A to B", ...). The user message renders each table with pandas' `to_string`
(right-aligned fixed-width columns, restaurants with a row index); `parse_table` cuts the rows at the known
column labels' right edges, so names with spaces, commas or non-ASCII letters survive. Names are matched
exactly after `name_key` (case and runs of whitespace ignored): TravelPlanner's own matcher accepts any
substring of a real name, which lets "Cafe" stand for "Cafe Southall"; this one does not.
Not covered: the full TravelPlanner database (the sandbox is what the query's reference information holds).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.errors import ConfigError, ParseError


def name_key(text: str) -> str:
    """The form names are compared in: case-folded, whitespace runs collapsed."""
    return " ".join(str(text).split()).casefold()


def city_of(text: str) -> str:
    """A city without its "(State)" annotation: "San Antonio(Texas)" -> "San Antonio"."""
    return re.sub(r"\(.*$", "", str(text)).strip()


@dataclass(frozen=True)
class Flight:
    number: str
    price: float
    dep_time: str
    arr_time: str
    elapsed: str
    date: str
    origin: str
    destination: str
    distance: float


@dataclass(frozen=True)
class Restaurant:
    name: str
    average_cost: float
    cuisines: str
    rating: float
    city: str


@dataclass(frozen=True)
class Accommodation:
    name: str
    price: float
    room_type: str
    house_rules: str
    minimum_nights: float
    maximum_occupancy: int
    review_rate: float
    city: str


@dataclass(frozen=True)
class Attraction:
    name: str
    latitude: float
    longitude: float
    address: str
    phone: str
    website: str
    city: str


@dataclass(frozen=True)
class Ground:
    """One self-driving or taxi route; `cost` None when the sandbox says "No valid information"."""

    mode: str  # "self-driving" | "taxi"
    origin: str
    destination: str
    duration: str | None = None
    distance: str | None = None
    cost: float | None = None


# (record type, the source's column labels in field order)
_TABLES: dict[str, tuple[type, tuple[str, ...]]] = {
    "Attractions": (Attraction, ("Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City")),
    "Restaurants": (Restaurant, ("Name", "Average Cost", "Cuisines", "Aggregate Rating", "City")),
    "Accommodations": (Accommodation, ("NAME", "price", "room type", "house_rules", "minimum nights",
                                       "maximum occupancy", "review rate number", "city")),
    "Flight": (Flight, ("Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate",
                        "OriginCityName", "DestCityName", "Distance")),
}
_GROUND = re.compile(r"^\s*(self-driving|taxi), from (.+?) to (.+?), duration: (.+?), distance: (.+?), "
                     r"cost: (\d+(?:\.\d+)?)\s*$", re.IGNORECASE)
_DESCRIPTION = re.compile(r"^(Attractions|Restaurants|Accommodations) in (.+)$|^Flight from (.+?) to (.+?) on "
                          r"(\d{4}-\d{2}-\d{2})$|^(Self-driving|Taxi) from (.+?) to (.+)$")


def _record(kind: str, values: Sequence[Any]) -> Any:
    cls, _ = _TABLES[kind]
    out = []
    for f, v in zip(cls.__dataclass_fields__.values(), values):
        if f.type in ("float", "int"):
            v = float(str(v).replace(",", "")) if v not in (None, "") else 0.0
            v = int(v) if f.type == "int" else v
        else:
            v = "" if v is None else str(v)
        out.append(v)
    return cls(*out)


def parse_table(text: str, labels: Sequence[str]) -> list[list[str]]:
    """Rows of one pandas `to_string` table, cut at the right edge of each known column label."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if not lines:
        return []
    header, rows = lines[0], lines[1:]
    edges, cursor = [], 0
    for label in labels:
        pos = header.find(label, cursor)
        if pos < 0:
            raise ParseError(f"table header {header.strip()[:80]!r} lacks the column {label!r}; expected "
                             f"{list(labels)}")
        cursor = pos + len(label)
        edges.append(cursor)
    indexed = bool(rows) and all(re.match(r"^\d+ ", r) for r in rows)
    out = []
    for row in rows:
        cells, start = [], 0
        for end in edges:
            cells.append(row[start:end].strip())
            start = end
        if indexed:
            cells[0] = re.sub(r"^\d+\s+", "", row[:edges[0]], count=1).strip()
        out.append(cells)
    return out


@dataclass
class ReferenceInfo:
    """One query's sandbox. Dict keys are exact city names (and dates); see the module docstring."""

    attractions: dict[str, list[Attraction]] = field(default_factory=dict)
    restaurants: dict[str, list[Restaurant]] = field(default_factory=dict)
    accommodations: dict[str, list[Accommodation]] = field(default_factory=dict)
    flights: dict[tuple[str, str, str], list[Flight]] = field(default_factory=dict)
    ground: dict[tuple[str, str, str], Ground] = field(default_factory=dict)

    # -- building ---------------------------------------------------------------------------------
    @classmethod
    def from_json(cls, ref: Mapping[str, Any]) -> ReferenceInfo:
        """From one line of train_ref_info.jsonl: {description: list of records | text}."""
        info = cls()
        for description, content in ref.items():
            if isinstance(content, list):
                kind = description.split(" ", 1)[0]
                if kind not in _TABLES:
                    raise ParseError(f"reference entry {description!r}: unknown table kind {kind!r}")
                labels = _TABLES[kind][1]
                info._add(description, [_record(kind, [rec.get(lb) for lb in labels]) for rec in content])
            else:
                info._add_text(description, str(content))
        return info

    @classmethod
    def from_text(cls, given: str) -> ReferenceInfo:
        """From the "Given Information:[...]" part of a TravelPlanner user message (tables as text)."""
        body = given.split("Given Information:", 1)[-1]
        body = re.split(r"\n\s*Query:", body, maxsplit=1)[0].strip()
        try:
            items = ast.literal_eval(body)
        except (SyntaxError, ValueError) as e:
            raise ParseError(f"the reference information is not a Python literal list ({e}); expected "
                             f"\"Given Information:[{{'Description': ..., 'Content': ...}}, ...]\"") from e
        info = cls()
        for item in items:
            description, content = item["Description"], str(item["Content"])
            kind = description.split(" ", 1)[0]
            if kind in _TABLES and content.lstrip().startswith(_TABLES[kind][1][0]):
                rows = [[c.replace("\\n", "\n") for c in cells] for cells in parse_table(content, _TABLES[kind][1])]
                info._add(description, [_record(kind, cells) for cells in rows])  # pandas shows a newline as \\n
            else:
                info._add_text(description, content)
        return info

    @classmethod
    def from_task_row(cls, row: Mapping[str, Any]) -> ReferenceInfo:
        """From a std_travelplanner.jsonl row ({"messages": [system, user, assistant]})."""
        return cls.from_text(user_message(row))

    def _add(self, description: str, records: list[Any]) -> None:
        m = _DESCRIPTION.match(description.strip())
        if m is None:
            raise ParseError(f"reference entry {description!r} is not 'Attractions|Restaurants|Accommodations in "
                             "CITY' or 'Flight from A to B on DATE'")
        if m.group(1):
            getattr(self, m.group(1).lower())[m.group(2)] = records
        elif m.group(3):
            self.flights[(m.group(3), m.group(4), m.group(5))] = records
        else:
            raise ParseError(f"reference entry {description!r}: a ground route must be text, got a table")

    def _add_text(self, description: str, content: str) -> None:
        m = _DESCRIPTION.match(description.strip())
        if m is None or m.group(1):
            raise ParseError(f"reference entry {description!r} holds text {content[:60]!r}; expected a table")
        if m.group(3):  # "There is no flight from A to B on D."
            self.flights[(m.group(3), m.group(4), m.group(5))] = []
            return
        mode, origin, destination = m.group(6).lower(), m.group(7), m.group(8)
        g = _GROUND.match(content)
        if g and "day" not in g.group(4):  # TravelPlanner: a duration in days is no valid route
            self.ground[(mode, origin, destination)] = Ground(mode, origin, destination, g.group(4), g.group(5),
                                                              float(g.group(6)))
        else:
            self.ground[(mode, origin, destination)] = Ground(mode, origin, destination)

    # -- looking things up ------------------------------------------------------------------------
    def cities(self) -> list[str]:
        """The destination cities the sandbox describes (those with attractions, restaurants or hotels)."""
        seen = dict.fromkeys([*self.attractions, *self.restaurants, *self.accommodations])
        return list(seen)

    def known_cities(self) -> set[str]:
        """Every city the sandbox names: destinations and the ends of every route."""
        out = set(self.cities())
        for o, d, *_ in [*self.flights, *((k[1], k[2]) for k in self.ground)]:
            out |= {o, d}
        return out

    def city(self, name: str) -> str | None:
        """The sandbox's spelling of a city (case and "(State)" ignored), or None."""
        key = name_key(city_of(name))
        return next((c for c in sorted(self.known_cities()) if name_key(c) == key), None)

    def _find(self, table: Mapping[str, list[Any]], name: str, city: str) -> Any:
        c = self.city(city)
        key = name_key(name)
        return next((r for r in table.get(c or "", []) if name_key(r.name) == key), None)

    def restaurant(self, name: str, city: str) -> Restaurant | None:
        return self._find(self.restaurants, name, city)

    def accommodation(self, name: str, city: str) -> Accommodation | None:
        return self._find(self.accommodations, name, city)

    def attraction(self, name: str, city: str) -> Attraction | None:
        return self._find(self.attractions, name, city)

    def flights_between(self, origin: str, destination: str, date: str | None = None) -> list[Flight] | None:
        """Flights of a searched route (on `date`, or any date); None when the sandbox never searched it."""
        o, d = self.city(origin), self.city(destination)
        keys = [k for k in self.flights if k[0] == o and k[1] == d and (date is None or k[2] == date)]
        if not keys:
            return None
        return [f for k in keys for f in self.flights[k]]

    def flight(self, number: str, origin: str, destination: str) -> Flight | None:
        """The flight `number` from `origin` to `destination`, as TravelPlanner's sandbox check looks it up."""
        found = self.flights_between(origin, destination) or []
        return next((f for f in found if f.number.strip().upper() == number.strip().upper()), None)

    def route(self, mode: str, origin: str, destination: str) -> Ground | None:
        """The self-driving or taxi entry for a route (its `cost` None: no valid information), or None: unknown."""
        o, d = self.city(origin), self.city(destination)
        return self.ground.get((mode.lower(), o or "", d or ""))


def user_message(row: Mapping[str, Any]) -> str:
    """The user message of a std_travelplanner.jsonl row (query and reference information)."""
    messages = row.get("messages") if isinstance(row, Mapping) else None
    for m in messages or []:
        if isinstance(m, Mapping) and m.get("role") == "user":
            return str(m.get("content", ""))
    raise ConfigError(f"task row {str(row)[:120]!r} has no user message; expected a std_travelplanner.jsonl row "
                      "{\"messages\": [{\"role\": \"system\", ...}, {\"role\": \"user\", ...}, ...]}")
