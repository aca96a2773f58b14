"""FRAMES: multi-document factual reasoning questions (Google, 824 rows).

Format: CSV or TSV with `Prompt,Answer` columns (plus wikipedia links, reasoning_types).
"""

from agentic_infer.tasks._odqa import ANSWER, _qa  # noqa: F401

ALIASES = {"frames": ("frames-benchmark",)}
TASKS = [_qa("frames", "FRAMES (multi-document factual reasoning)", "CSV/TSV with Prompt,Answer columns", (),
             question=("Prompt", "prompt", "question"), answer=("Answer", "answer", "golden_answers"))]
