"""MuSiQue-Ans: 2-4 hop questions, 20 paragraphs each with `is_supporting`.

Format: JSON Lines (or a JSON list) of `{id, question, answer, answer_aliases, paragraphs:
[{idx, title, paragraph_text, is_supporting}], question_decomposition}`; list fields may be
Python-literal strings. Gold = answer + answer_aliases.
"""

from agentic_infer.tasks._multihop import multihop_loader, per_question, pooled
from agentic_infer.tasks.base import Task
from agentic_infer.tasks.hotpotqa import QA_METRICS

FORMAT = "MuSiQue records {id, question, answer, answer_aliases, paragraphs: [{title, paragraph_text, is_supporting}]}"

TASKS = [Task(
    name="musique", family="multihop", description="MuSiQue-Ans dev (2-4 hop QA)", data_format=FORMAT,
    loader=multihop_loader("musique", FORMAT, aliases=("answer_aliases",), paragraphs=("paragraphs",)),
    metrics=QA_METRICS, primary="em", default_files=("multihop/musique_ans_dev_150.jsonl",),
    question_corpus=per_question, pooled_corpus=pooled,
)]
