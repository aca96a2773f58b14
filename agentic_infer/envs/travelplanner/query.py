"""Parse a TravelPlanner query (the user's request in words) into the fields its evaluation reads.

    q = parse_query("Please help me plan a trip from St. Petersburg to Rockford spanning 3 days from March 16th "
                    "to March 18th, 2022. The travel should be planned for a single person with a budget of $1,700.")
    q.org, q.dest, q.days, q.dates, q.people_number, q.budget   # 'St. Petersburg', 'Rockford', 3, [...], 1, 1700
    q.local_constraint        # {'house rule': None, 'cuisine': None, 'room type': None, 'transportation': None}

The fields and their values follow TravelPlanner's structured queries: `dest` is a city for a one-city trip and
a state for a multi-city one; house rules are "smoking", "parties", "children under 10", "visitors", "pets";
room types "entire room", "private room", "shared room", "not shared room"; transportation "no flight" or
"no self-driving"; cuisines from TravelPlanner's seven. A sentence that states no preference ("I have no
specific preferences about house rules, ...") sets nothing. Unstated people count: 1.
Not covered: dates without a year (the year is required) or trips whose dates are not consecutive.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.errors import ParseError

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
US_STATES = (
    "Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware", "Florida",
    "Georgia", "Hawaii", "Idaho", "Illinois", "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine",
    "Maryland", "Massachusetts", "Michigan", "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska",
    "Nevada", "New Hampshire", "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Ohio",
    "Oklahoma", "Oregon", "Pennsylvania", "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Texas",
    "Utah", "Vermont", "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming")
CUISINES = ("Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French")
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
            "ten": 10, "a single": 1, "single": 1, "solo": 1, "alone": 1, "pair": 2, "couple": 2}
_WORD = r"(?:(?:St|Ste|Ft|Mt)\.|[A-Z][\w'’-]*)"  # a capitalised word; a dot only after an abbreviation
_CITY = rf"({_WORD}(?:\s+{_WORD})*)"
_ORIGIN = re.compile(r"\b(?:departing|departs|depart|leaving|setting off|taking off|originating|starting|"
                     r"beginning|starts|start|traveling|travelling|trip|plan|itinerary|from)\s+(?:from\s+|in\s+)?"
                     + _CITY)
_DEST_CITY = re.compile(r"\b(?:to|visiting|visit|ending in|head|heading to)\s+(?:to\s+)?" + _CITY)
_NEGATION = re.compile(r"\b(?:not|no|non|avoid|without|never)\b|n't", re.IGNORECASE)
_NO_PREFERENCE = re.compile(r"\bno (?:specific|particular) (?:\w+ )?(?:preference|restriction|requirement)s?\b", re.I)


@dataclass
class Query:
    """One TravelPlanner query: the fields its evaluation reads (see the module docstring)."""

    text: str
    org: str
    dest: str
    days: int
    visiting_city_number: int
    dates: list[str]
    people_number: int
    budget: int
    local_constraint: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(
        ("house rule", "cuisine", "room type", "transportation")))

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.text, "org": self.org, "dest": self.dest, "days": self.days,
                "visiting_city_number": self.visiting_city_number, "date": list(self.dates),
                "people_number": self.people_number, "budget": self.budget,
                "local_constraint": dict(self.local_constraint)}


def query_text(user_message: str) -> str:
    """The query of a std_travelplanner user message (the text after "Query:"), or the message itself."""
    return user_message.rsplit("Query:", 1)[-1].strip()


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.?!])\s+(?=[A-Z])", text)
    return [p for p in parts if not _NO_PREFERENCE.search(p)]


def _number(word: str) -> int | None:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word)


def _clean_city(name: str) -> str:
    return re.sub(r"[.,]+$", "", name.strip())


def _dates(text: str) -> list[str]:
    year = re.search(r"\b(20\d\d)\b", text)
    if not year:
        raise ParseError(f"query {text[:80]!r}...: no year in the dates; expected e.g. 'March 16th to March 18th, 2022'")
    month_names = "|".join(MONTHS)
    token = re.compile(rf"\b({month_names})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b|\b(\d{{1,2}})(?:st|nd|rd|th)\s+of\s+"
                       rf"({month_names})\b|\b(\d{{1,2}})(?:st|nd|rd|th)\b|\b({month_names})\b")
    found: list[tuple[int | None, int]] = []  # (month or None, day)
    last_month: int | None = None
    for m in token.finditer(text):
        if m.group(1):
            found.append((MONTHS.index(m.group(1)) + 1, int(m.group(2))))
        elif m.group(3):
            found.append((MONTHS.index(m.group(4)) + 1, int(m.group(3))))
        elif m.group(5):
            found.append((None, int(m.group(5))))
        else:
            last_month = MONTHS.index(m.group(6)) + 1
        if found and found[-1][0] is not None:
            last_month = found[-1][0]
    if len(found) < 2:
        raise ParseError(f"query {text[:80]!r}...: expected a start and an end date, found {found}")
    months = [m for m, _ in found if m is not None] or ([last_month] if last_month else [])
    if not months:
        raise ParseError(f"query {text[:80]!r}...: the dates name no month")
    (m0, d0), (m1, d1) = found[0], found[-1]
    start = dt.date(int(year.group(1)), m0 or months[0], d0)
    end = dt.date(int(year.group(1)), m1 or months[-1], d1)
    if end < start:
        raise ParseError(f"query {text[:80]!r}...: the end date {end} is before the start date {start}")
    return [(start + dt.timedelta(days=i)).isoformat() for i in range((end - start).days + 1)]


def _origin(text: str) -> tuple[str, int]:
    for m in _ORIGIN.finditer(text):
        city = _clean_city(m.group(1))
        if city.split()[0] not in MONTHS:
            return city, m.end()
    raise ParseError(f"query {text[:80]!r}...: found no departure city ('from X', 'departing from X', ...)")


def _destination(text: str, org: str, after: int, multi: bool) -> str:
    if multi:
        states = "|".join(sorted(US_STATES, key=len, reverse=True))
        for pattern in (rf"\bcities\s+(?:in|across)\s+({states})\b", rf"\b(?:to|towards|into|in)\s+({states})\b"):
            for m in re.finditer(pattern, text):
                if m.group(1) != org:
                    return m.group(1)
        raise ParseError(f"query {text[:80]!r}...: a multi-city trip must name its state ('2 cities in Texas')")
    for m in _DEST_CITY.finditer(text, after):
        city = _clean_city(m.group(1))
        if city.split()[0] not in MONTHS and city != org:
            return city
    raise ParseError(f"query {text[:80]!r}...: found no destination ('to X', 'heading to X', 'visiting X')")


def _people(text: str) -> int:
    m = re.search(r"\b(?:for|of)\s+(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
                  r"(?:people|persons?|travell?ers|individuals)\b|\bgroup of (\d+|\w+)\b|\bparty of (\d+|\w+)\b|"
                  r"\bfor (two|three|four|five|six|seven|eight|nine|ten|\d+)\b(?! days)|"
                  r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten) (?:people|persons?|individuals)\b",
                  text, re.IGNORECASE)
    if m:
        n = _number(next(g for g in m.groups() if g))
        if n:
            return n
    if re.search(r"\b(?:a pair|a couple)\b", text, re.IGNORECASE):
        return 2
    return 1


def _visiting_cities(text: str) -> int:
    m = re.search(r"\b(\d+|two|three|four|five)\s+(?:different\s+|distinct\s+|unique\s+|separate\s+)?cities\b",
                  text, re.IGNORECASE)
    return _number(m.group(1)) or 1 if m else 1


def _constraints(text: str) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(("house rule", "cuisine", "room type", "transportation"))
    cuisines: list[tuple[int, str]] = []
    for sentence in _sentences(text):
        low = sentence.lower()
        for rule, pattern in (("parties", r"\bpart(?:y|ies)\b"), ("smoking", r"\bsmok(?:ing|e)\b"),
                              ("children under 10", r"\bchildren under\b"), ("visitors", r"\bvisitors\b"),
                              ("pets", r"\bpets?\b|pet-friendly")):
            if re.search(pattern, low) and not (rule == "parties" and "party of" in low):
                out["house rule"] = out["house rule"] or rule
        if "not shared" in low or "non-shared" in low:
            out["room type"] = "not shared room"
        elif re.search(r"\bentire (?:room|home|apartment)", low):
            out["room type"] = "entire room"
        elif "private room" in low:
            out["room type"] = "private room"
        elif "shared room" in low:
            out["room type"] = "shared room"
        if _NEGATION.search(low):
            if re.search(r"\bself-driv|\bself-drive|\bdrive ourselves|\bdriving ourselves", low):
                out["transportation"] = "no self-driving"
            elif re.search(r"\bfl(?:y|ying|ights?)\b", low):
                out["transportation"] = "no flight"
        for c in CUISINES:
            m = re.search(rf"\b{c}\b", sentence)
            if m:
                cuisines.append((text.find(sentence) + m.start(), c))
    if cuisines:
        out["cuisine"] = [c for _, c in sorted(cuisines)]
    return out


def parse_query(text: str) -> Query:
    """The fields of one TravelPlanner query; `ParseError` names what could not be found."""
    text = " ".join(query_text(text).split())
    org, end = _origin(text)
    dates = _dates(text)
    n_cities = _visiting_cities(text)
    dest = _destination(text, org, end, multi=n_cities > 1)
    budget = re.search(r"\$\s*([\d,]+)", text)
    if not budget:
        raise ParseError(f"query {text[:80]!r}...: no budget ('a budget of $1,700')")
    return Query(text=text, org=org, dest=dest, days=len(dates), visiting_city_number=n_cities, dates=dates,
                 people_number=_people(text), budget=int(budget.group(1).replace(",", "")),
                 local_constraint=_constraints(text))
