"""TriviaQA (FlashRAG layout; gold = all aliases).

Format: JSON Lines `{id, question, golden_answers: [...]}` (FlashRAG), or `{question, answer}`.
"""

from agentic_infer.tasks._odqa import ANSWER, _qa  # noqa: F401

TASKS = [_qa("triviaqa", "TriviaQA (FlashRAG test subsample)", "{id, question, golden_answers: [...]} JSON Lines",
             ("odqa/triviaqa_1000.jsonl",))]
