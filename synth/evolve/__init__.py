"""SE-Agent trajectory evolution: attempts summarised by a rule-based analyser (and optionally an LLM's analysis),
three operators writing guidance for new, really executed attempts, at a fixed budget against best-of-B; see
`run.py`."""

from synth.evolve.analyst import LLMAnalyst
from synth.evolve.operators import OPERATORS, recombination, refinement, revision
from synth.evolve.run import EvolveResult, best_of, evolve
from synth.evolve.summary import FAILURES, AttemptSummary, summarize

__all__ = ["FAILURES", "OPERATORS", "AttemptSummary", "EvolveResult", "LLMAnalyst", "best_of", "evolve",
           "recombination", "refinement", "revision", "summarize"]
