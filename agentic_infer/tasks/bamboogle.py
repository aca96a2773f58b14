"""Bamboogle: 125 two-hop questions that search engines answer wrongly.

Format: FlashRAG JSON Lines `{id, question, golden_answers}`, or the original CSV `Question,Answer`.
"""

from agentic_infer.tasks._odqa import ANSWER, _qa  # noqa: F401

TASKS = [_qa("bamboogle", "Bamboogle (2-hop questions Google gets wrong)",
             "{id, question, golden_answers} JSON Lines, or CSV Question,Answer", (),
             question=("question", "Question"), answer=ANSWER + ("Answer",))]
