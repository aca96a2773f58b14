"""PopQA: long-tail entity questions (Wikidata relations).

Format: FlashRAG JSON Lines `{id, question, golden_answers}`, or the original-style JSON list
`{question, possible_answers (JSON-literal string), paragraphs: [{title, text, is_supporting}]}`;
with paragraphs there is a per-question corpus and a pooled one (all paragraphs of the file).
"""

from agentic_infer.tasks._odqa import _qa, popqa_corpus, popqa_pooled

TASKS = [_qa("popqa", "PopQA long-tail entity questions",
             "{id, question, golden_answers} JSON Lines, or {question, possible_answers, paragraphs} JSON",
             ("odqa/popqa_1000.jsonl", "odqa/popqa_1000_with_paragraphs.json"),
             question_corpus=popqa_corpus, pooled_corpus=popqa_pooled)]
