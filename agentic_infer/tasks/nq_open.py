"""NQ-open: Natural Questions, open-domain (official dev; answers are short spans).

Format: JSON Lines `{question, answer: [...]}`.
"""

from agentic_infer.tasks._odqa import ANSWER, _qa  # noqa: F401

ALIASES = {"nq-open": ("nq", "nq_open", "naturalquestions")}
TASKS = [_qa("nq-open", "Natural Questions, open-domain (official dev)", "NQ-open {question, answer: [...]} JSON Lines",
             ("odqa/nq_open_dev.jsonl",))]
