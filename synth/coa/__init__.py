"""Chain-of-Agents distillation data (teacher-free): a LangGraph graph of role agents drives the agent loop in AFM's
dialect, each run becomes one single-model trajectory, a progressive filter keeps the good ones; see `build.py`.

    agentic synth coa --task musique --data ../shared/data/multihop/musique_train_100.json --out coa/
"""

from synth.coa.build import CoAOptions, CoAResult, build_coa, build_one, write_coa
from synth.coa.filters import REASONS, coa_filter
from synth.coa.graph import CoAPolicy, Roles, coa_graph

__all__ = ["REASONS", "CoAOptions", "CoAPolicy", "CoAResult", "Roles", "build_coa", "build_one", "coa_filter",
           "coa_graph", "write_coa"]
