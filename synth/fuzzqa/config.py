"""`FuzzQAConfig`: the settings of one fuzzed multi-hop QA run (validated; YAML overlay and `--set` on the CLI).

    cfg = build_config(FuzzQAConfig, file="fuzzqa.yaml", overrides=["k_closed_book=4", "tools.max_searches=2"])

Every field is about *how* the synthesis runs; *what* it runs on (corpus, grounded file, LLM, output
directory) are the CLI's flags and `run_fuzzqa`'s arguments. Not covered: per-gate LLMs (one policy LLM
writes and answers, one judge LLM or metric judges).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentic_infer.config import renamed
from agentic_infer.engines.judge import RENAMED_VERDICTS, VERDICTS, check_verdict
from agentic_infer.engines.search_o1 import SearchO1Config
from agentic_infer.errors import ConfigError
from agentic_infer.types import SamplingParams

GATES = ("not_covered", "answerable", "too_hard_closed_book", "solvable_with_tools", "no_alternative")
METRIC_JUDGES = ("em", "cover_em", "f1")  # judges without an LLM
JUDGE_KINDS = (*VERDICTS, *METRIC_JUDGES)  # VERDICTS: the LLM judges' formats (json, yes-no)

# The with-tools agent: few searches, the question as its first query (small models rarely open a query tag),
# no Reason-in-Documents (one LLM call per search saved); override with `--set tools.KEY=VALUE`.
DEFAULT_TOOLS = SearchO1Config(max_searches=3, k=3, max_turns=4, max_total_tokens=4096, rid=False,
                               first_query="question",
                               sampling=SamplingParams(max_tokens=256, temperature=0.7, top_p=0.8, top_k=20,
                                                       logprobs=0))


@renamed(alternative_top_k=("alternative_k", "documents per search"))
@dataclass(frozen=True)
class FuzzQAConfig:
    """How QAs are written, edited and gated (see the module docstring of `synth.fuzzqa.run`)."""

    max_actions: int = 4            # edits tried per seed after the base QA (INJECT and FUZZ)
    max_hops: int = 3               # at most this many documents per QA (INJECT stops there)
    actions: tuple[str, ...] = ("inject", "fuzz")  # the action cycle; grounded mode only fuzzes
    k_closed_book: int = 8          # closed-book samples; the QA is too hard when all are judged wrong
    closed_book_temperature: float = 1.0
    k_tools: int = 1                # with-tools runs; solvable when at least `min_tools_correct` are right
    min_tools_correct: int = 1
    judge: str = "json"             # json (EquivalenceJudge) | yes-no (P(Yes)) | em | cover_em | f1 (no LLM)
    max_tokens: int = 192           # for writing, fuzzing, reading and closed-book answers
    temperature: float = 0.7        # for writing and fuzzing
    covered_overlap: float = 0.8    # a new fact whose content words are this much inside the evidence is covered
    alternative_k: int = 3          # documents shown to the alternative-answer check (documents per search)
    min_seed_words: int = 40        # seed documents shorter than this are skipped
    doc_chars: int = 1500           # document text shown in prompts
    grounded_phrase: bool = True    # grounded mode: the LLM phrases the base question (else the dataset's own)
    concurrency: int = 2            # seeds in flight
    seed: int = 0
    cache: bool = True              # LLM requests and judge verdicts cached under OUT/cache/
    tools: SearchO1Config = field(default_factory=lambda: DEFAULT_TOOLS)

    def __post_init__(self) -> None:
        if isinstance(self.actions, (list, str)):
            object.__setattr__(self, "actions", (self.actions,) if isinstance(self.actions, str)
                               else tuple(self.actions))
        bad = [a for a in self.actions if a not in ("inject", "fuzz")]
        if not self.actions or bad:
            raise ConfigError(f"FuzzQAConfig.actions={self.actions!r}: use a list of inject / fuzz")
        for name in ("max_hops", "k_closed_book", "k_tools", "min_tools_correct", "max_tokens", "alternative_k",
                     "concurrency", "doc_chars"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"FuzzQAConfig.{name}={v!r}: must be an integer >= 1")
        for name in ("max_actions", "min_seed_words"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                raise ConfigError(f"FuzzQAConfig.{name}={v!r}: must be an integer >= 0")
        if self.min_tools_correct > self.k_tools:
            raise ConfigError(f"FuzzQAConfig.min_tools_correct={self.min_tools_correct} > k_tools={self.k_tools}; "
                              "lower it or raise k_tools")
        if self.judge in RENAMED_VERDICTS:
            check_verdict(self.judge)  # the old spelling: a ConfigError that names the new one
        if self.judge not in JUDGE_KINDS:
            raise ConfigError(f"FuzzQAConfig.judge={self.judge!r}: use one of {', '.join(JUDGE_KINDS)}")
        if not 0.0 < self.covered_overlap <= 1.0:
            raise ConfigError(f"FuzzQAConfig.covered_overlap={self.covered_overlap!r}: must be in (0, 1]")
