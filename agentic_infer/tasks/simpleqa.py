"""SimpleQA: short factual questions; the official grade is the CORRECT/INCORRECT/NOT_ATTEMPTED judge (--judge).

Format: CSV `metadata,problem,answer` (the published simple_qa_test_set.csv).
"""

from agentic_infer.tasks._odqa import ANSWER, _qa  # noqa: F401

TASKS = [_qa("simpleqa", "SimpleQA (short factual questions; grade with --judge)", "CSV metadata,problem,answer", (),
             question=("problem", "question"), answer=("answer", "golden_answers"))]
