"""TravelPlannerEnv: one TravelPlanner query as an `Env`: search tools over its sandbox, a plan verified by
TravelPlanner's constraints, Planner-R1's reward.

    row = json.loads(open(".../tools/travelplanner/std_travelplanner.jsonl").readline())
    env = TravelPlannerEnv(row)                       # or make_env("travelplanner", row, stage=1)
    env.first_observation()                           # the query only: the agent looks the rest up
    env.call("RestaurantSearch", {"city": "Rockford"})
    v = env.verify("<answer>[{\"days\": 1, ...}]</answer>")
    v.reward, v.success, v.failed, v.info["terms"]    # stage reward; final pass; failed checks; Planner-R1 terms

The sandbox (reference information) is parsed from the row's user message, so a row is self-contained;
`ref_info=` (a train_ref_info.jsonl line, or a ReferenceInfo) overrides it. The env is read-only: its state
is the list of queries made so far. The verdict holds a "schema" check, the 8 commonsense and the query's hard
checks (constraints.py); `reward` is Planner-R1's reward at `stage` (default 3: the final pass, what the
eval scores), and `info` carries every term, the reward at each stage, the plan's cost and how it was parsed.
Not covered: TravelPlanner's two-stage mode with the full database (tools answer from this query's sandbox).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentic_infer.envs.base import CallResult, Check, Env, EnvVerdict
from agentic_infer.envs.travelplanner.constraints import PlanChecker, evaluate_plan
from agentic_infer.envs.travelplanner.plan import PLAN_KEYS, parse_plan, schema_problems
from agentic_infer.envs.travelplanner.query import parse_query
from agentic_infer.envs.travelplanner.reference import ReferenceInfo, user_message
from agentic_infer.envs.travelplanner.reward import (
    STAGE_WEIGHTS,
    planner_r1_reward,
    reward_terms,
    stage_weights,
)
from agentic_infer.envs.travelplanner.tools import TOOL_SCHEMAS, run_tool

_EXAMPLE = [
    {"days": 1, "current_city": "from A to B", "transportation": "Flight Number: F0123456, from A to B, Departure "
     "Time: 08:00, Arrival Time: 10:00", "breakfast": "-", "attraction": "<attraction>, B;",
     "lunch": "<restaurant 1>, B", "dinner": "<restaurant 2>, B", "accommodation": "<accommodation>, B"},
    {"days": 2, "current_city": "B", "transportation": "-", "breakfast": "<restaurant 3>, B",
     "attraction": "<attraction 2>, B;<attraction 3>, B;", "lunch": "<restaurant 4>, B", "dinner": "<restaurant 5>, B",
     "accommodation": "<accommodation>, B"},
    {"days": 3, "current_city": "from B to A", "transportation": "Flight Number: F0654321, from B to A, Departure "
     "Time: 19:00, Arrival Time: 21:00", "breakfast": "<restaurant 6>, B", "attraction": "<attraction 4>, B;",
     "lunch": "<restaurant 7>, B", "dinner": "-", "accommodation": "-"},
]

INSTRUCTIONS = f"""You are a travel planner. Plan the trip the user asks for, using only what the tools return:
FlightSearch, RestaurantSearch, AccommodationSearch, AttractionSearch, GoogleDistanceMatrix (self-driving or taxi)
and CitySearch (the cities of the destination state of a multi-city trip). Everything in the plan (flight
numbers, restaurants, attractions, accommodations) must come from the tool results.

Commonsense rules: start from the origin and return to it on the last day; visit each destination city for at
least one full day, in one stay; everything of a day happens in that day's city (on a travel day, either city;
the accommodation in the city where you sleep); no restaurant and no attraction twice; do not mix self-driving
with flights or taxis; stay at least an accommodation's minimum nights; fill every day (a travel day needs its
transportation, every other day an attraction and all three meals, every night but the last an accommodation).
Respect the user's budget (flights and meals per person, a car per 5 people, a taxi per 4, rooms by their
maximum occupancy) and their house rule, room type, cuisine and transportation wishes.

Answer with the plan as a JSON list of day records inside <answer>...</answer>, one record per day with the
keys {", ".join(PLAN_KEYS)}. Write "from A to B" in current_city on a travel day, "Name, City" for every
restaurant, attraction (separated by ";") and accommodation, "Flight Number: F..., from A to B, ..." or
"Self-driving, from A to B, ..." or "Taxi, from A to B, ..." for transportation, and "-" for what is not needed.
The shape of a 3-day trip from A to B (replace every <...> with a real name from the tools):
<answer>{json.dumps(_EXAMPLE, ensure_ascii=False)}</answer>"""


class TravelPlannerEnv(Env):
    """One TravelPlanner query (see the module docstring)."""

    name = "travelplanner"

    def __init__(self, task_row: Mapping[str, Any], *, ref_info: Mapping[str, Any] | ReferenceInfo | None = None,
                 stage: int = 3) -> None:
        super().__init__()
        stage_weights(stage)  # validates
        self.task_row = dict(task_row)
        self.query = parse_query(user_message(task_row))
        if isinstance(ref_info, ReferenceInfo):
            self.ref = ref_info
        elif ref_info is not None:
            self.ref = ReferenceInfo.from_json(ref_info)
        else:
            self.ref = ReferenceInfo.from_task_row(task_row)
        self.stage = stage
        self._queries: list[dict[str, Any]] = []

    def tools(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(t)) for t in TOOL_SCHEMAS]

    def instructions(self) -> str:
        return INSTRUCTIONS

    def first_observation(self) -> str:
        return self.query.text

    def gold_response(self) -> str | None:
        """The row's reference plan (the assistant message), when it has one."""
        for m in self.task_row.get("messages") or []:
            if isinstance(m, Mapping) and m.get("role") == "assistant":
                return str(m.get("content", ""))
        return None

    def execute(self, tool: str, arguments: dict[str, Any]) -> CallResult:
        entry = {"tool": tool, "arguments": dict(arguments)}
        try:
            output = run_tool(self.ref, self.query, tool, arguments)
        except Exception:
            self._queries.append({**entry, "found": False})
            raise
        self._queries.append({**entry, "found": True})
        return CallResult(output)

    def state(self) -> dict[str, Any]:
        return {"queries": [dict(q) for q in self._queries]}

    def _set_mutable(self, value: Any) -> None:
        self._queries = [dict(q) for q in value["queries"]]

    def verify(self, response: str) -> EnvVerdict:
        parsed = parse_plan(response)
        problems = schema_problems(parsed.plan)
        checks = [Check("schema", not problems, "; ".join(problems)[:300] or "", "schema")]
        checks += evaluate_plan(self.query, self.ref, parsed.plan)
        terms = reward_terms(checks)
        cost = PlanChecker(self.query, self.ref, parsed.plan).total_cost() if parsed.plan else None
        info = {"terms": terms.to_dict(), "stage": self.stage,
                "rewards": {f"stage{s}": planner_r1_reward(terms, stage=s) for s in STAGE_WEIGHTS},
                "final_pass": bool(terms.pass_), "cost": cost, "budget": self.query.budget,
                "plan_source": parsed.source, "parse_error": parsed.error, "query": self.query.to_dict()}
        return EnvVerdict(reward=planner_r1_reward(terms, stage=self.stage), checks=checks, info=info)
