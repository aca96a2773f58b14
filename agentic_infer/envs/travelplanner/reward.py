"""Planner-R1's reward for TravelPlanner: a λ-weighted sum of schema, micro, macro and final-pass terms.

    terms = reward_terms(checks)          # from a verdict's checks (categories "schema", "commonsense", "hard")
    planner_r1_reward(terms, stage=1)     # 6.0 for a perfect plan: every λ = 1
    planner_r1_reward(terms, stage=3)     # 1.0 iff every check passed

r = Σ_k λ_k r_k over r_schema (1 iff the plan parsed into TravelPlanner's schema), r_cs^micro (passed / total
commonsense checks), r_hard^micro (the same for hard), r_cs^macro (1 iff every commonsense check passed),
r_hard^macro (1 iff every hard check passed) and r_pass (1 iff everything passed: TravelPlanner's final pass).
A sum, not a chain: a failed term never hides the others. Stages (`STAGE_WEIGHTS`): 1 dense, every λ = 1; 2
the macro terms (per-category all-pass) and r_pass; 3 r_pass only. All stages share the optimum (a plan that
passes everything scores the maximum), and the paper found the curriculum gave no significant gain.
Not covered: choosing the stage during training (pass `stage`, or your own `weights`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from agentic_infer.envs.base import Check
from agentic_infer.errors import ConfigError

TERMS = ("schema", "cs_micro", "hard_micro", "cs_macro", "hard_macro", "pass")
STAGE_WEIGHTS: dict[int, dict[str, float]] = {
    1: dict.fromkeys(TERMS, 1.0),
    2: {"schema": 0.0, "cs_micro": 0.0, "hard_micro": 0.0, "cs_macro": 1.0, "hard_macro": 1.0, "pass": 1.0},
    3: {"schema": 0.0, "cs_micro": 0.0, "hard_micro": 0.0, "cs_macro": 0.0, "hard_macro": 0.0, "pass": 1.0},
}


@dataclass(frozen=True)
class RewardTerms:
    """Planner-R1's six terms, each in [0, 1]."""

    schema: float
    cs_micro: float
    hard_micro: float
    cs_macro: float
    hard_macro: float
    pass_: float

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"RewardTerms.{name}={value!r}: every term must be in [0, 1]")

    def to_dict(self) -> dict[str, float]:
        return {"schema": self.schema, "cs_micro": self.cs_micro, "hard_micro": self.hard_micro,
                "cs_macro": self.cs_macro, "hard_macro": self.hard_macro, "pass": self.pass_}


def reward_terms(checks: Iterable[Check]) -> RewardTerms:
    """The six terms from a verdict's checks (a category without checks counts as passed)."""
    checks = list(checks)

    def rate(category: str) -> float:
        cat = [c for c in checks if c.category == category]
        return sum(c.passed for c in cat) / len(cat) if cat else 1.0

    schema, cs, hard = rate("schema"), rate("commonsense"), rate("hard")
    everything = bool(checks) and all(c.passed for c in checks)
    return RewardTerms(schema=float(schema == 1.0), cs_micro=cs, hard_micro=hard, cs_macro=float(cs == 1.0),
                       hard_macro=float(hard == 1.0), pass_=float(everything))


def stage_weights(stage: int) -> dict[str, float]:
    if stage not in STAGE_WEIGHTS:
        raise ConfigError(f"stage={stage!r}: Planner-R1 has stages 1 (every term), 2 (macro terms + pass) and "
                          "3 (final pass only)")
    return dict(STAGE_WEIGHTS[stage])


def planner_r1_reward(terms: RewardTerms, *, stage: int, weights: Mapping[str, float] | None = None) -> float:
    """Σ λ_k r_k with the stage's λ (or `weights`, keyed by TERMS; missing keys weigh 0)."""
    lam = stage_weights(stage) if weights is None else dict(weights)
    unknown = set(lam) - set(TERMS)
    if unknown:
        raise ConfigError(f"weights has unknown terms {sorted(unknown)}; use {list(TERMS)}")
    values = terms.to_dict()
    return sum(lam.get(k, 0.0) * values[k] for k in TERMS)
