"""HotpotQA (distractor setting): 10 paragraphs per question, 2 supporting.

Format: JSON list (the original) or JSON Lines of `{_id, question, answer, type, level,
supporting_facts, context: [[title, [sentences]]]}`; `context` / `supporting_facts` may be
Python-literal strings. Metrics: EM / F1 / cover-EM plus the published systems' variants.
"""

from agentic_infer.tasks._multihop import multihop_loader, per_question, pooled
from agentic_infer.tasks.base import Task

FORMAT = "HotpotQA records {_id, question, answer, context: [[title, [sentences]]], supporting_facts} (.json or .jsonl)"
QA_METRICS = ("em", "f1", "cover_em", "search_o1_em", "search_o1_f1", "search_o1_acc", "search_r1_em",
              "r1_searcher_cover_em", "judge_acc")

TASKS = [Task(
    name="hotpotqa", family="multihop", description="HotpotQA dev, distractor setting (multi-hop QA)",
    data_format=FORMAT, loader=multihop_loader("hotpotqa", FORMAT, paragraphs=("context",)),
    metrics=QA_METRICS, primary="em", default_files=("multihop/hotpotqa_dev_distractor_150.jsonl",),
    question_corpus=per_question, pooled_corpus=pooled,
)]
