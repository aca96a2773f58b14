"""2WikiMultihopQA: comparison / compositional / inference / bridge-comparison questions.

Format: JSON Lines (or a JSON list) of `{_id, question, answer, type, context: [[title,
[sentences]]], supporting_facts, evidences}`; some records carry only `evidences` (no context:
their per-question corpus is empty and `--corpus per-question` reports it).
"""

from agentic_infer.tasks._multihop import multihop_loader, per_question, pooled
from agentic_infer.tasks.base import Task
from agentic_infer.tasks.hotpotqa import QA_METRICS

FORMAT = "2WikiMultihopQA records {_id, question, answer, context: [[title, [sentences]]], supporting_facts}"
ALIASES = {"2wiki": ("2wikimultihopqa", "twowiki", "2wikimqa")}

TASKS = [Task(
    name="2wiki", family="multihop", description="2WikiMultihopQA dev (multi-hop QA)", data_format=FORMAT,
    loader=multihop_loader("2wiki", FORMAT), metrics=QA_METRICS, primary="em",
    default_files=("multihop/2wiki_dev_150.jsonl",), question_corpus=per_question, pooled_corpus=pooled,
)]
