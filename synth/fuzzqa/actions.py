r"""The LLM's actions: BASE (a QA from one document), INJECT (one more hop), FUZZ (a vaguer detail), PHRASE
(grounded: one question from given hops), READ / ALTERNATIVE (the gates' reading prompts), and their parsers.

    text = BASE_PROMPT.format(title=doc.title, text=doc.text)
    parse_fields(reply, ("question", "answer"), optional=("fact",))   # {"question": ..., "answer": ..., "fact": ...}

Replies are `Field: value` lines (a small model writes those more reliably than JSON); a reply missing a
required field parses to None and the action counts as `unparsable`. Prompts are ours, after ASearcher's
actions (their facts, not their prose). Not covered: SELECT among several documents (INJECT takes the best
linked one), EXIT decided by the LLM (the gates decide).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentic_infer.backends.base import LLM
from agentic_infer.types import Message, SamplingParams

BASE_PROMPT = (
    "Write one factual question whose answer is a short phrase (a name, place, date or number) stated in the "
    "document below. The question must name the document's subject and must not contain the answer.\n\n"
    "Document: {title}\n{text}\n\n"
    "Reply in exactly this form:\nQuestion: <the question>\nAnswer: <the short answer>\n"
    "Fact: <the sentence of the document that states the answer>")

INJECT_PROMPT = (
    "Here is a question, its answer, and a document about {entity}, which the question mentions. Rewrite the "
    "question so that it no longer names {entity} but describes it by a fact from the document. The answer "
    "must stay the same; do not mention the answer.\n\n"
    "Question: {question}\nAnswer: {answer}\n\nDocument: {title}\n{text}\n\n"
    "Reply in exactly this form:\nQuestion: <the rewritten question>\n"
    "Fact: <the sentence of the document you used>\nRelation: <a few words: how that fact describes {entity}>")

FUZZ_PROMPT = (
    "Make this question harder: replace one specific detail in it (a name, a date or a number) with a vaguer "
    "description, e.g. 1867 -> the 1860s, Paris -> a European capital, 42 -> a few dozen. Keep the answer the "
    "same and do not mention it.\n\n"
    "Question: {question}\nAnswer: {answer}\n\n"
    "Reply in exactly this form:\nDetail: <the detail you replaced>\nDescription: <its vaguer description>\n"
    "Question: <the new question>")

PHRASE_PROMPT = (
    "Write one question that needs all of the facts below, used in this order, and whose answer is "
    "\"{answer}\". Do not name the answer or the entities that link one fact to the next.\n\n"
    "Facts:\n{facts}\n\nReply in exactly this form:\nQuestion: <the question>")

READ_PROMPT = (
    "Answer the question using only these documents.\n\n{documents}\n\nQuestion: {question}\n"
    "Give only the final answer, within \\boxed{{}}.")

ALTERNATIVE_PROMPT = (
    "The question below has the answer \"{answer}\". Using the documents, is there a different answer that "
    "fits the question equally well? If there is, write it within \\boxed{{}}; if there is none, write "
    "\\boxed{{none}}.\n\n{documents}\n\nQuestion: {question}")

_FIELD = re.compile(r"^\s*[*#>\-\s]*(question|answer|fact|relation|detail|description)\s*\**\s*[:\-]\s*(.+?)\s*$",
                    re.I | re.M)
NONE_WORDS = frozenset({"none", "no", "n/a", "na", "nothing", "no other answer", "there is none"})


def parse_fields(text: str, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, str] | None:
    """The first value of each `Field: value` line; None when a required field is missing or empty."""
    found: dict[str, str] = {}
    for m in _FIELD.finditer(text or ""):
        key, value = m.group(1).lower(), m.group(2).strip().strip('"').strip()
        if key in (*required, *optional) and key not in found and value and not value.startswith("<"):
            found[key] = value
    return found if all(found.get(k) for k in required) else None


def documents_block(docs: Sequence[tuple[str, str]], *, chars: int) -> str:
    return "\n\n".join(f"Document {i} ({title}): {text[:chars]}" for i, (title, text) in enumerate(docs, 1))


async def complete(llm: LLM, prompt: str, params: SamplingParams) -> str:
    """One chat turn: the prompt as a user message through the model's chat template, the reply's text."""
    text = llm.render([Message("user", prompt)])
    [comp] = await llm.generate(text, params.replace(n=1))
    return comp.text
