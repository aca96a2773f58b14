"""Action dialects as data: which tags open and close an action, how observations are wrapped, how
documents are formatted and where the answer is.

A dialect holds no code paths of its own; `engines/loop.py` reads these fields. Adding a dialect
is adding a `Dialect(...)` value to `DIALECTS`. A dialect with a `grammar` (what block may follow what) is
checked by `check_grammar(dialect, text)`.

| dialect | actions | observation wrapper | answer |
|---|---|---|---|
| search_o1 | `<|begin_search_query|>q<|end_search_query|>` | `<|begin_search_result|>…<|end_search_result|>` | `\\boxed{}` |
| search_r1 | `<search>q</search>` | `<information>…</information>` | `<answer>…</answer>` |
| r1_searcher | `<|begin_of_query|>q<|end_of_query|>` | `<|begin_of_documents|>…<|end_of_documents|>` | `<answer>` |
| asearcher | `<search>q</search>`, `<access>url</access>` | `<information>…</information>` | `<answer>` |
| tool_calls | `<tool_call>{"name":…,"arguments":…}</tool_call>` | `<tool_response>…</tool_response>` | `<answer>` |
| afm (Chain-of-Agents) | `<wiki_search>q</wiki_search>`, with `<think>`, `<plan>`, `<reflection>` blocks in AFM's order | `<observation>…</observation>` | `<answer>a|b</answer>` |
| atom_searcher | `<tool_call>{"name":"web_search","arguments":{"query":…}}</tool_call>`; `<think>` pre-filled | `<tool_response>…</tool_response>` | `<answer>` |
| tir (ToRL) | ```` ```python … ``` ```` | ```` ```output … ``` ```` | `\\boxed{}` |
| artist | `<python>…</python>` | `<output>…</output>` | `<answer>` |
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentic_infer.errors import ConfigError
from agentic_infer.verify.extract import extract_answer as extract_in_format
from agentic_infer.verify.extract import tag_sequence


@dataclass(frozen=True)
class ActionTag:
    """One action: the text between `begin` and `end` is its argument; `tool` names the handler."""

    begin: str
    end: str
    tool: str


@dataclass(frozen=True)
class Dialect:
    name: str
    actions: tuple[ActionTag, ...]
    result_begin: str
    result_end: str
    answer: str  # a format of `verify.ANSWER_FORMATS`: "boxed" or "answer_tag"
    doc_format: str = "plain"  # "plain" (numbered documents with titles) | "search_r1" (`Doc i(Title: t) text`)
    # How an observation is spliced into the running text (Search-o1: blank lines around the tags).
    result_template: str = "\n\n{begin}{content}{end}\n\n"
    # Forced messages (limits, repeats) use the reference's own spacing.
    message_template: str = "\n{begin}\n{content}\n{end}\n"
    json_calls: bool = False  # the action body is a JSON tool call {"name", "arguments"}
    # JSON tool names the model writes -> our handler names (Atom-Searcher's "web_search" is our "search")
    aliases: tuple[tuple[str, str], ...] = ()
    opening: str = ""  # forced text that opens the assistant's turn (Atom-Searcher pre-fills "<think>")
    # What block may follow what: (after, allowed next tags) pairs; `after` is a tag, "^" (the start) or "a>b" (b
    # right after a, which overrides b's own rule); "$" in the allowed tags means the text may end there.
    grammar: tuple[tuple[str, tuple[str, ...]], ...] = ()
    extra_stops: tuple[str, ...] = field(default=())

    @property
    def stops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([a.end for a in self.actions] + list(self.extra_stops)))

    def observation(self, content: str) -> str:
        return self.result_template.format(begin=self.result_begin, content=content, end=self.result_end)

    def message(self, content: str) -> str:
        return self.message_template.format(begin=self.result_begin, content=content, end=self.result_end)

    def format_docs(self, docs: Sequence) -> str:
        """Documents (anything with .title and .text) as the dialect shows them to the model."""
        if self.doc_format == "search_r1":
            return "\n".join(f"Doc {i}(Title: {d.title}) {d.text}" for i, d in enumerate(docs, 1))
        return "\n\n".join(f"**Document {i}** ({d.title})\n{d.text}" for i, d in enumerate(docs, 1))


SEARCH_O1 = Dialect(
    name="search_o1",
    actions=(ActionTag("<|begin_search_query|>", "<|end_search_query|>", "search"),),
    result_begin="<|begin_search_result|>",
    result_end="<|end_search_result|>",
    answer="boxed",
)

SEARCH_R1 = Dialect(
    name="search_r1",
    actions=(ActionTag("<search>", "</search>", "search"),),
    result_begin="<information>",
    result_end="</information>",
    answer="answer_tag",
    doc_format="search_r1",
    result_template="\n\n{begin}{content}{end}\n\n",
    message_template="\n\n{begin}{content}{end}\n\n",
)

R1_SEARCHER = Dialect(
    name="r1_searcher",
    actions=(ActionTag("<|begin_of_query|>", "<|end_of_query|>", "search"),),
    result_begin="<|begin_of_documents|>",
    result_end="<|end_of_documents|>",
    answer="answer_tag",
    result_template="\n{begin}\n{content}\n{end}\n",
)

ASEARCHER = Dialect(
    name="asearcher",
    actions=(ActionTag("<search>", "</search>", "search"), ActionTag("<access>", "</access>", "access")),
    result_begin="<information>",
    result_end="</information>",
    answer="answer_tag",
    result_template="\n\n{begin}\n{content}\n{end}\n\n",
)

TOOL_CALLS = Dialect(
    name="tool_calls",
    actions=(ActionTag("<tool_call>", "</tool_call>", "*"),),
    result_begin="<tool_response>",
    result_end="</tool_response>",
    answer="answer_tag",
    result_template="\n{begin}\n{content}\n{end}\n",
    json_calls=True,
)

# Chain-of-Agents (AFM): one stream of blocks; plan, wiki_search, reflection and answer each follow a think, after a
# reflection comes a think and then a plan or a search; several answers as "a|b" (ANCHORS.md).
AFM = Dialect(
    name="afm",
    actions=(ActionTag("<wiki_search>", "</wiki_search>", "search"),),
    result_begin="<observation>",
    result_end="</observation>",
    answer="answer_tag",
    result_template="\n{begin}{content}{end}\n",
    message_template="\n{begin}{content}{end}\n",
    grammar=(("^", ("think",)), ("think", ("plan", "wiki_search", "reflection", "answer")), ("plan", ("think",)),
             ("wiki_search", ("observation",)), ("observation", ("think",)), ("reflection", ("think",)),
             ("reflection>think", ("plan", "wiki_search")), ("answer", ("$",))),
)

# Atom-Searcher: each turn opens with a pre-filled <think> (the reference appends it to the generation prompt), so
# the text after an observation re-opens it; atomic thoughts are the model's own tags inside (train.rewards.atomic).
ATOM_SEARCHER = Dialect(
    name="atom_searcher",
    actions=(ActionTag("<tool_call>", "</tool_call>", "search"),),
    result_begin="<tool_response>",
    result_end="</tool_response>",
    answer="answer_tag",
    result_template="\n{begin}\n{content}\n{end}\n<think>",
    message_template="\n{begin}\n{content}\n{end}\n<think>",
    json_calls=True,
    aliases=(("web_search", "search"),),
    opening="<think>",
)

TIR = Dialect(
    name="tir",
    # closing fence plus newline, so the opening "```python" does not trigger the stop
    actions=(ActionTag("```python", "```\n", "python"),),
    result_begin="```output\n",
    result_end="\n```",
    answer="boxed",
    result_template="{begin}{content}{end}\n",
    message_template="{begin}{content}{end}\n",
)

ARTIST = Dialect(
    name="artist",
    actions=(ActionTag("<python>", "</python>", "python"),),
    result_begin="<output>",
    result_end="</output>",
    answer="answer_tag",
    result_template="\n{begin}\n{content}\n{end}\n",
    message_template="\n{begin}\n{content}\n{end}\n",
)

DIALECTS: dict[str, Dialect] = {d.name: d for d in (SEARCH_O1, SEARCH_R1, R1_SEARCHER, ASEARCHER, TOOL_CALLS,
                                                     AFM, ATOM_SEARCHER, TIR, ARTIST)}


def get_dialect(name: str | Dialect) -> Dialect:
    if isinstance(name, Dialect):
        return name
    if name not in DIALECTS:
        raise ConfigError(f"dialect={name!r}: unknown; choose one of {sorted(DIALECTS)}")
    return DIALECTS[name]


@dataclass(frozen=True)
class ParsedAction:
    tool: str
    argument: str
    tag: ActionTag


def parse_action(dialect: Dialect, text: str, stop_reason: str | None) -> ParsedAction | None:
    """The action this turn's text asks for, or None when the model did not act.

    As in Search-o1's reference: an action counts only when generation stopped on the action's
    closing tag (so an unclosed tag is no action), and the argument is the *last* complete
    begin…end span in this turn's text, stripped. An empty argument is no action. One deviation:
    when a span holds a second, abandoned begin tag (`<q>draft <q>query</q>`), the reference's
    lazy regex returns `draft <q>query`; we take the text after the last begin tag.
    """
    for tag in dialect.actions:
        end = tag.end.strip() or tag.end
        if stop_reason != tag.end and not text.rstrip().endswith(end):
            continue
        pattern = re.escape(tag.begin) + r"(.*?)" + re.escape(end)
        found = re.findall(pattern, text, flags=re.DOTALL)
        argument = found[-1].split(tag.begin)[-1].strip() if found else ""
        if argument:
            return ParsedAction(tag.tool, argument, tag)
    return None


def check_grammar(dialect: str | Dialect, text: str) -> str | None:
    """None when `text` (the model's whole output, observations included) follows the dialect's grammar: only
    whitespace outside its blocks, no block unclosed or nested, each block allowed after the one before, and it
    ends where the grammar allows; else the first violation, in words."""
    d = get_dialect(dialect)
    rules = dict(d.grammar)
    if not rules:
        raise ConfigError(f"dialect {d.name!r} has no grammar; dialects with one: "
                          f"{sorted(n for n, x in DIALECTS.items() if x.grammar)}")
    names = sorted({t for _, allowed in d.grammar for t in allowed if t != "$"})
    seq = tag_sequence(text, {n: (f"<{n}>", f"</{n}>") for n in names})
    if seq is None:
        return "a block is unclosed, unopened or nested"
    outside = re.sub("|".join(f"<{n}>.*?</{n}>" for n in names), "", text, flags=re.DOTALL).strip()
    if outside:
        return f"text outside the blocks: {outside[:60]!r}"
    before, prev = "", "^"
    for tag in [*seq, "$"]:
        allowed = rules.get(f"{before}>{prev}") or rules.get(prev, ())
        if tag not in allowed:
            what = "the end" if tag == "$" else f"<{tag}>"
            return f"{what} after {'the start' if prev == '^' else f'<{prev}>'} (allowed: {', '.join(allowed)})"
        before, prev = prev, tag
    return None


def extract_answer(dialect: Dialect, text: str) -> str | None:
    """The answer the dialect's format marks in `text` (the last one), or None (`verify.extract`)."""
    return extract_in_format(dialect.answer, text)
