"""TravelPlanner as an env: one query per task row, search tools over its sandbox, TravelPlanner's 8 commonsense
and 5 hard constraints as checks, Planner-R1's reward (env.py; the parts: query.py, reference.py, tools.py,
plan.py, constraints.py, reward.py). Importing this module registers the "travelplanner" env.

    env = make_env("travelplanner", row)         # a line of tools/travelplanner/std_travelplanner.jsonl
"""

from agentic_infer.envs.registry import EnvSpec, register_env
from agentic_infer.envs.travelplanner.constraints import COMMONSENSE, HARD, evaluate_plan
from agentic_infer.envs.travelplanner.env import TravelPlannerEnv
from agentic_infer.envs.travelplanner.plan import ParsedPlan, parse_plan
from agentic_infer.envs.travelplanner.query import Query, parse_query
from agentic_infer.envs.travelplanner.reference import ReferenceInfo
from agentic_infer.envs.travelplanner.reward import RewardTerms, planner_r1_reward, reward_terms
from agentic_infer.envs.travelplanner.tools import TOOL_NAMES

register_env(EnvSpec(
    name="travelplanner",
    description="TravelPlanner (sole-planning sandbox): plan a multi-day trip with search tools under "
                "commonsense and hard constraints",
    make=TravelPlannerEnv,
    tools=TOOL_NAMES,
    task_format='a std_travelplanner.jsonl row {"messages": [system, user (reference information + query), '
                'assistant (gold plan)]}; option ref_info= a train_ref_info.jsonl row, stage=1|2|3',
    reward="Planner-R1: sum of λ·(schema, commonsense/hard micro and macro, final pass); stage 3 (default) = "
           "final pass; success = every check passed",
    default_files=("tools/travelplanner/std_travelplanner.jsonl",),
))

__all__ = ["COMMONSENSE", "HARD", "ParsedPlan", "Query", "ReferenceInfo", "RewardTerms", "TOOL_NAMES",
           "TravelPlannerEnv", "evaluate_plan", "parse_plan", "parse_query", "planner_r1_reward", "reward_terms"]
