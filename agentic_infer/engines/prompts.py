"""Instructions for the search and code agents, one per dialect (our wording; the tags are the references').

Placeholders: `{max_actions}`, and `{question}` in the question templates. An example's `guidance` (notes
from earlier attempts) is appended to the user message by `with_guidance`. `WORKED_EXAMPLES`
holds a short demonstration per dialect that small models need before they use a tool at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEARCH_INSTRUCTIONS = {
    "search_o1": (
        "You are a reasoning assistant that can search a knowledge base to answer questions accurately.\n\n"
        "To search, write <|begin_search_query|> your query <|end_search_query|>. The system then reads the "
        "matching documents and gives you the useful facts as <|begin_search_result|> ... "
        "<|end_search_result|>.\n\n"
        "You may search several times, at most {max_actions} times. Search for one fact at a time. When you "
        "know enough, continue reasoning and give the final answer as \\boxed{{ANSWER}}."
    ),
    "search_r1": (
        "Answer the question. Think step by step inside <think> and </think>. Whenever you lack a fact, search "
        "for it with <search> query </search>; the results appear between <information> and </information>. "
        "Search as often as you need. When you know the answer, write it inside <answer> and </answer>, "
        "without explanation."
    ),
    "r1_searcher": (
        "Answer the question. Think inside <think> and </think>. To look something up, write "
        "<|begin_of_query|> keywords <|end_of_query|>; the documents appear between <|begin_of_documents|> "
        "and <|end_of_documents|>. Give the final answer inside <answer> and </answer>."
    ),
    "asearcher": (
        "Answer the question. Search with <search> query </search>; results appear between <information> "
        "and </information>, each with a document id. Read a whole document with <access> id </access>. "
        "Give the final answer inside <answer> and </answer>."
    ),
    "afm": (
        "Answer the question. Work in blocks, one after another: <think> your reasoning </think>, then one of "
        "<plan> the sub-questions to answer </plan>, <wiki_search> a query </wiki_search> (the results appear "
        "between <observation> and </observation>), <reflection> what went wrong and what to do instead "
        "</reflection>, or <answer> the final answer </answer>. Every plan, search, reflection and answer comes "
        "after a <think>; after a reflection, think and then plan or search again. Search at most {max_actions} "
        "times. Give several answers as a|b."
    ),
    "atom_searcher": (
        "You are a deep research assistant. Think inside <think> and </think> before every action, and break your "
        "thinking into atomic thoughts, each inside an upper-case tag that names what it does, e.g. "
        "<PLAN>...</PLAN>, <OBSERVATION>...</OBSERVATION>, <HYPOTHESIS_TESTING>...</HYPOTHESIS_TESTING>, "
        "<REFLECTION>...</REFLECTION>, <VERIFICATION>...</VERIFICATION>, <RISK_ANALYSIS>...</RISK_ANALYSIS>.\n\n"
        "After thinking, either search with <tool_call>{{\"name\": \"web_search\", \"arguments\": {{\"query\": "
        "\"...\"}}}}</tool_call> (the results appear between <tool_response> and </tool_response>; at most "
        "{max_actions} searches), or give the final answer (a few words, no explanation) inside <answer> and "
        "</answer>."
    ),
    "tool_calls": (
        "Answer the question. You can call tools by writing <tool_call>{{\"name\": TOOL, \"arguments\": "
        "{{...}}}}</tool_call>; results appear between <tool_response> and </tool_response>. Give the final "
        "answer inside <answer> and </answer>."
    ),
}

QUESTION_TEMPLATE = "Question: {question}"
GUIDANCE_TEMPLATE = "Notes from earlier attempts at this question (use them):\n{guidance}"


def with_guidance(text: str, example: Mapping[str, Any]) -> str:
    """`text` (a user message) followed by the example's `guidance`, when it has one (SE-Agent's operators write it:
    `synth.evolve`); unchanged otherwise."""
    guidance = str(example.get("guidance") or "").strip()
    return f"{text}\n\n{GUIDANCE_TEMPLATE.format(guidance=guidance)}" if guidance else text

WORKED_EXAMPLES = {
    "search_o1": (
        "Example:\n"
        "Question: In which country is the city where the Eiffel Tower stands?\n"
        "Answer: I need to find the city of the Eiffel Tower.\n"
        "<|begin_search_query|>Eiffel Tower city<|end_search_query|>\n\n"
        "<|begin_search_result|>The Eiffel Tower is in Paris.<|end_search_result|>\n\n"
        "Now I need the country of Paris.\n"
        "<|begin_search_query|>Paris country<|end_search_query|>\n\n"
        "<|begin_search_result|>Paris is the capital of France.<|end_search_result|>\n\n"
        "The Eiffel Tower is in Paris, which is in France. \\boxed{France}"
    ),
    "atom_searcher": (
        "Example:\nQuestion: Who wrote the novel that the film Blade Runner is based on?\n"
        "<think><PLAN>Find the novel behind Blade Runner, then its author.</PLAN></think>\n"
        "<tool_call>{\"name\": \"web_search\", \"arguments\": {\"query\": \"Blade Runner based on novel\"}}"
        "</tool_call>\n<tool_response>\nBlade Runner is based on the novel Do Androids Dream of Electric Sheep? by "
        "Philip K. Dick.\n</tool_response>\n<think><VERIFICATION>The result names the novel and its author, Philip K. "
        "Dick.</VERIFICATION></think>\n<answer>Philip K. Dick</answer>"
    ),
    "search_r1": (
        "Example:\nQuestion: Who wrote the novel that the film Blade Runner is based on?\n"
        "<think>I need the novel behind Blade Runner.</think>\n<search>Blade Runner film based on novel</search>\n\n"
        "<information>Doc 1(Title: Blade Runner) Blade Runner is based on the novel Do Androids Dream of "
        "Electric Sheep? by Philip K. Dick.</information>\n\n<answer>Philip K. Dick</answer>"
    ),
}

TIR_INSTRUCTIONS = {
    "tir": (
        "Solve the problem step by step. You may write Python code in a ```python ... ``` block; it is run "
        "and its output is shown in a ```output ... ``` block. Use print() to see values. You can run code "
        "at most {max_actions} times. Put the final answer in \\boxed{{}}."
    ),
    "artist": (
        "Solve the problem. Think inside <think> and </think>. Run Python by writing <python> code "
        "</python>; the result appears in <output> ... </output>. Use print() to see values. Give the final "
        "answer inside <answer> and </answer>."
    ),
}

SEARCH_LIMIT_MESSAGE = "The maximum search limit is exceeded. You are not allowed to search."
SEARCH_REPEAT_MESSAGE = "You have searched this query. Please refer to previous results."
TOOL_BUDGET_MESSAGE = "The tool-call budget is exhausted; no more code will be run. Give your final answer now."
