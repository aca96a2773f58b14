"""train.rewards: RL rewards built on `agentic_infer.verify` (one definition of correctness with eval and
synth), each a plain `fn(RewardInput, **options) -> float`, with adapters to TRL and verl.

- `outcome`: EM, F1, cover-EM, math equivalence, LLM judge (Chain-of-Agents 0/1).
- `afm`: Chain-of-Agents' rewards: every "|"-answer in the gold set (multi-hop), 0.1·format + 0.9·judge − 0.5 for a
  repeated query (web), AFM's grammar as a format reward.
- `env`: the environment's verdict (`env_reward`, written by the env agent).
- `format`: per-dialect format rewards (R1-Searcher, ToolRL, ARTIST order).
- `toolrl`: ToolRL's R_format + R_correct (name / parameter-name / parameter-value matching).
- `tool_use`: ToRL code reward, OTC productivity and OTC-PPO, ARTIST tool success ratio.
- `atomic`: Atom-Searcher's atomic thoughts, its reasoning reward model (offline against gold decompositions, or
  an LLM judge) and the Atomic Thought Reward.
- `schedules`: R1-Searcher two stages, Atom-Searcher process-plus-outcome, Planner-R1 staged reward.
- `adapters`: `trl_reward(fn, **options)`, `verl_compute_score(fn, **options)`.
"""

from train.rewards.adapters import completion_text, trl_reward, verl_compute_score
from train.rewards.afm import afm_answer_reward, afm_format, afm_queries, afm_web_reward, repeated_query
from train.rewards.atomic import (
    LLMRRM,
    Atom,
    OfflineRRM,
    atomic_thought_reward,
    atomic_thought_score,
    atomic_thoughts,
    atr_outcome_reward,
    gold_plans,
    score_trajectory,
)
from train.rewards.base import Reward, RewardInput, as_trajectory
from train.rewards.env import env_reward
from train.rewards.format import (
    artist_format,
    dialect_format,
    r1_searcher_format,
    tag_sequence,
    toolrl_format,
)
from train.rewards.outcome import (
    cover_em_reward,
    em_reward,
    f1_reward,
    judge_reward,
    math_reward,
    metric_reward,
)
from train.rewards.schedules import (
    atom_searcher_reward,
    planner_r1_reward,
    process_weight,
    r1_searcher_reward,
    r1_searcher_stage,
)
from train.rewards.tool_use import (
    artist_tool_reward,
    artist_tool_success,
    otc_ppo_reward,
    otc_productivity,
    otc_reward,
    tool_call_bonus,
    torl_reward,
)
from train.rewards.toolrl import parse_tool_calls, toolrl_correctness, toolrl_reward

__all__ = ["afm_answer_reward", "afm_format", "afm_queries", "afm_web_reward", "artist_format",
           "artist_tool_reward", "artist_tool_success", "as_trajectory", "Atom", "atom_searcher_reward",
           "atomic_thought_reward", "atomic_thought_score", "atomic_thoughts", "atr_outcome_reward",
           "completion_text", "cover_em_reward", "dialect_format", "em_reward", "env_reward", "f1_reward",
           "gold_plans", "judge_reward", "LLMRRM", "math_reward", "metric_reward", "OfflineRRM", "otc_ppo_reward",
           "otc_productivity", "otc_reward", "parse_tool_calls", "planner_r1_reward", "process_weight",
           "r1_searcher_format", "r1_searcher_reward", "r1_searcher_stage", "repeated_query", "Reward",
           "RewardInput", "score_trajectory", "tag_sequence", "toolrl_correctness", "tool_call_bonus",
           "toolrl_format", "toolrl_reward", "torl_reward", "trl_reward", "verl_compute_score"]
