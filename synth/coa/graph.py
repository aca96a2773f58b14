"""Chain-of-Agents as a LangGraph graph of role agents, acting as ONE policy of the agent loop, so that its run is
linearised into a single AFM trajectory exactly as a sampled one would be.

    policy = CoAPolicy(vocab, Roles(plan, retriever))   # the multi-agent system behind an LLM's interface
    engine = SearchO1(policy, retriever, dialect="afm", k=3, ...)
    traj = (await engine.run(example)).trajectory       # <think> <plan> <wiki_search> <observation> ... <answer>

Roles (nodes of the compiled `StateGraph`; the teacher-free mode, `Roles`, fills them from the question's gold
decomposition and the real search results, as `agentic synth demos` does; the LLM mode, `LLMRoles`, asks a model
per role, any backend for each):

    START -> verifier --first turn--> planner -> searcher -> END
                      --hop found---> searcher -> END  (or answerer -> END after the last hop)
                      --hop missed--> reflector -> searcher -> END  (or answerer after the last wording)

- `planner` writes the plan: the sub-questions in order;
- `searcher` writes the next hop's query (the sub-question first; after a miss, the hop's page title);
- `verifier` reads what the last search really returned (the retriever's hits: the observation the loop spliced)
  and decides whether the hop's supporting sentences or its answer are in it;
- `reflector` writes why the search missed and what to do instead (AFM: after a reflection, think, then search);
- `answerer` writes the answer (the gold answer; several as `a|b`).
Each role emits `<think>…</think>` and its block, in AFM's order. One `generate` call of the policy is one graph
run: everything the roles write until the next search (or the answer) is one assistant turn; the loop runs the
search and splices `<observation>…</observation>`. Token ids are `encode_continuation` of that text, as for any
scripted turn (`synth.demos.scripted`). `log` records which role ran at each turn (the trajectory's lineage).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from agentic_infer.backends.base import encode_continuation
from agentic_infer.engines.dialects import AFM
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.types import Completion, Message, SamplingParams
from agentic_infer.verify import normalize_answer
from synth.demos.plans import GoldPlan, Hop
from synth.demos.scripted import RecordingRetriever, ScriptedPolicy, Vocab, evidence_found

WORDINGS = ("subq", "title")  # the searcher's query for a hop: its sub-question, then (after a miss) its page title


class CoAState(TypedDict, total=False):
    turn: int
    hop: int  # the hop being searched
    attempt: int  # index into WORDINGS of the hop's current query
    last_query: str | None
    found: bool | None  # the verifier's verdict on the last search
    blocks: list[str]  # what the roles wrote this turn
    log: list[list[str]]  # roles that ran, per turn
    unresolved: list[int]  # hops given up on
    done: bool
    subquestions: list[str]  # LLM mode: the planner's sub-questions (the hops)
    facts: list[str]  # LLM mode: what the verifier read off each found hop
    reflection: str  # LLM mode: the reflector's last advice


def _think(text: str) -> str:
    return f"<think>{text}</think>\n"


class RoleAgents:
    """What both modes share: the retriever the verifier reads, the turn log, and the routing after the verifier."""

    def __init__(self, retriever: RecordingRetriever, *, end_of_turn: str = ""):
        self.retriever, self.end_of_turn = retriever, end_of_turn

    def hops(self, state: CoAState) -> int:
        raise NotImplementedError

    @staticmethod
    def _logged(state: CoAState, role: str) -> list[list[str]]:
        return [*state["log"][:-1], [*state["log"][-1], role]]

    def after_verifier(self, state: CoAState) -> str:
        if state["found"] is None:
            return "planner"
        if state["found"]:
            return "answerer" if state["hop"] + 1 >= self.hops(state) else "next_hop"
        return "reflector" if state["attempt"] + 1 < len(WORDINGS) else "give_up"


class Roles(RoleAgents):
    """The teacher-free role agents over one gold plan and the recording retriever (see module docstring)."""

    def __init__(self, plan: GoldPlan, retriever: RecordingRetriever, *, end_of_turn: str = ""):
        super().__init__(retriever, end_of_turn=end_of_turn)
        self.plan = plan

    def hops(self, state: CoAState) -> int:
        return len(self.plan.hops)

    def _hop(self, state: CoAState) -> Hop:
        return self.plan.hops[state["hop"]]

    def verifier(self, state: CoAState) -> CoAState:
        if state.get("last_query") is None:
            return {"found": None, "blocks": [], "log": [*state.get("log", []), ["verifier"]]}
        hop = self._hop(state)
        hits = self.retriever.hits.get(state["last_query"], [])
        text = normalize_answer(" ".join(h.text for h in hits))
        found = (bool(hits) and len(evidence_found(hits, hop.evidence)) == len(hop.evidence)) or bool(
            hop.answer and normalize_answer(hop.answer) in text)
        return {"found": found, "blocks": [], "log": [*state["log"], ["verifier"]]}

    def planner(self, state: CoAState) -> CoAState:
        steps = " ".join(f"{i}. {h.description or h.query('subq')}." for i, h in enumerate(self.plan.hops, 1))
        block = _think("This question needs several facts; I will plan the steps.") + f"<plan>{steps}</plan>\n"
        return {"blocks": [block], "log": self._logged(state, "planner")}

    def searcher(self, state: CoAState) -> CoAState:
        hop = self.plan.hops[state["hop"]]
        query = hop.query(WORDINGS[state["attempt"]])
        lead = "Search by the page title instead." if state["attempt"] else f"I need to find out: {hop.description}."
        block = _think(lead) + f"{AFM.actions[0].begin}{query}{AFM.actions[0].end}"
        return {"blocks": [*state["blocks"], block], "last_query": query, "log": self._logged(state, "searcher")}

    def reflector(self, state: CoAState) -> CoAState:
        hop = self._hop(state)
        block = (_think(f"The results do not say {hop.description or hop.title}.")
                 + f"<reflection>The query '{state['last_query']}' missed; a search for the page '{hop.title}' "
                   "should find it.</reflection>\n")
        return {"blocks": [block], "attempt": state["attempt"] + 1, "log": self._logged(state, "reflector")}

    def answerer(self, state: CoAState) -> CoAState:
        facts = [h.answer for h in self.plan.hops if h.answer]
        lead = f"The facts found: {', '.join(facts)}." if facts else "I have what I need."
        block = _think(f"{lead} Putting them together gives the answer.") + (
            f"<answer>{self.plan.gold[0]}</answer>{self.end_of_turn}")
        return {"blocks": [*state["blocks"], block], "done": True, "log": self._logged(state, "answerer")}


ROLES = ("planner", "searcher", "verifier", "reflector", "answerer")


class LLMRoles(RoleAgents):
    """The LLM mode: each role is a model (one backend for all, or a mapping role -> backend) prompted with the
    question, the plan and what was found; the routing is the same. The roles' words are cleaned of `<` and `>`
    so that no role can break AFM's block grammar; the verifier answers "Yes: <fact>" or "No" about the documents
    the search really returned."""

    def __init__(self, question: str, retriever: RecordingRetriever, llms: Any, *, end_of_turn: str = "",
                 max_tokens: int = 96, max_hops: int = 4):
        super().__init__(retriever, end_of_turn=end_of_turn)
        missing = [r for r in ROLES if isinstance(llms, Mapping) and r not in llms]
        if missing:
            raise ConfigError(f"LLMRoles: no backend for the roles {missing}; pass one LLM or a mapping of all of "
                              f"{list(ROLES)}")
        self.llms = {r: (llms[r] if isinstance(llms, Mapping) else llms) for r in ROLES}
        self.question, self.max_tokens, self.max_hops = question, max_tokens, max_hops

    def hops(self, state: CoAState) -> int:
        return len(state["subquestions"])

    async def _ask(self, role: str, prompt: str) -> str:
        llm = self.llms[role]
        text = llm.render([Message("user", prompt)])
        [c] = await llm.generate(text, SamplingParams(max_tokens=self.max_tokens, temperature=0.0))
        return " ".join(c.text.replace("<", " ").replace(">", " ").split())

    def _context(self, state: CoAState) -> str:
        plan = "\n".join(f"{i}. {q}" for i, q in enumerate(state.get("subquestions", []), 1))
        facts = "\n".join(state.get("facts", [])) or "nothing yet"
        return f"Question: {self.question}\nPlan:\n{plan}\nFound so far:\n{facts}"

    async def verifier(self, state: CoAState) -> CoAState:
        if state.get("last_query") is None:
            return {"found": None, "blocks": [], "log": [*state.get("log", []), ["verifier"]]}
        docs = "\n\n".join(f"{h.title}: {h.text}" for h in self.retriever.hits.get(state["last_query"], []))
        sub = state["subquestions"][state["hop"]]
        reply = await self._ask("verifier", f"Sub-question: {sub}\nDocuments:\n{docs or '(none)'}\n\nIf the "
                                            "documents answer the sub-question, reply 'Yes: <the answer>'; otherwise "
                                            "reply 'No'.")
        found = reply.lower().startswith("yes")
        facts = [*state.get("facts", []), f"{sub} {reply.split(':', 1)[-1].strip()}"] if found else state["facts"]
        return {"found": found, "facts": facts, "blocks": [], "log": [*state["log"], ["verifier"]]}

    async def planner(self, state: CoAState) -> CoAState:
        reply = await self._ask("planner", f"Question: {self.question}\nBreak the question into at most "
                                           f"{self.max_hops} sub-questions that can each be looked up, one per line.")
        subs = [s.strip(" .") for s in re.split(r"(?:^|\s)\d+[.)]\s+", reply) if s.strip(" .")]  # "1. a 2. b"
        subs = subs[: self.max_hops] or [self.question]
        steps = " ".join(f"{i}. {q}." for i, q in enumerate(subs, 1))
        block = _think("This question needs several facts; I will plan the steps.") + f"<plan>{steps}</plan>\n"
        return {"blocks": [block], "subquestions": subs, "facts": [], "log": self._logged(state, "planner")}

    async def searcher(self, state: CoAState) -> CoAState:
        sub = state["subquestions"][state["hop"]]
        advice = f"\nAdvice after a failed search: {state['reflection']}" if state["attempt"] else ""
        query = await self._ask("searcher", f"{self._context(state)}{advice}\n\nWrite one short search query for: "
                                            f"{sub}") or sub
        block = _think(f"I need to find out: {sub}") + f"{AFM.actions[0].begin}{query}{AFM.actions[0].end}"
        return {"blocks": [*state["blocks"], block], "last_query": query, "log": self._logged(state, "searcher")}

    async def reflector(self, state: CoAState) -> CoAState:
        sub = state["subquestions"][state["hop"]]
        advice = await self._ask("reflector", f"The search '{state['last_query']}' did not answer: {sub}\nIn one "
                                              "sentence, say what went wrong and what to search for instead.")
        block = _think(f"The results do not answer: {sub}") + f"<reflection>{advice}</reflection>\n"
        return {"blocks": [block], "attempt": state["attempt"] + 1, "reflection": advice,
                "log": self._logged(state, "reflector")}

    async def answerer(self, state: CoAState) -> CoAState:
        answer = await self._ask("answerer", f"{self._context(state)}\n\nGive the final answer to the question in a "
                                             "few words (several answers joined by |), nothing else.")
        block = _think("Putting the facts together gives the answer.") + f"<answer>{answer}</answer>{self.end_of_turn}"
        return {"blocks": [*state["blocks"], block], "done": True, "log": self._logged(state, "answerer")}


def coa_graph(roles: RoleAgents) -> Any:
    """The compiled LangGraph `StateGraph` of the roles (module docstring)."""
    from langgraph.graph import END, START, StateGraph

    def next_hop(state: CoAState) -> CoAState:
        return {"hop": state["hop"] + 1, "attempt": 0}

    def give_up(state: CoAState) -> CoAState:  # the hop stays unresolved; the filter drops the trajectory
        unresolved = [*state.get("unresolved", []), state["hop"]]
        last = state["hop"] + 1 >= roles.hops(state)
        return {"unresolved": unresolved, "hop": state["hop"] + (not last), "attempt": 0, "done": last}

    g = StateGraph(CoAState)
    for name, fn in (("verifier", roles.verifier), ("planner", roles.planner), ("searcher", roles.searcher),
                     ("reflector", roles.reflector), ("answerer", roles.answerer), ("next_hop", next_hop),
                     ("give_up", give_up)):
        g.add_node(name, fn)
    g.add_edge(START, "verifier")
    g.add_conditional_edges("verifier", roles.after_verifier,
                            ["planner", "answerer", "next_hop", "reflector", "give_up"])
    g.add_edge("planner", "searcher")
    g.add_edge("next_hop", "searcher")
    g.add_edge("reflector", "searcher")
    g.add_conditional_edges("give_up", lambda s: "answerer" if s["done"] else "searcher", ["answerer", "searcher"])
    g.add_edge("searcher", END)
    g.add_edge("answerer", END)
    return g.compile()


class CoAPolicy(ScriptedPolicy):
    """The role graph behind an LLM's `generate`: each call is one graph run, its roles' blocks one turn."""

    name = "chain-of-agents"

    def __init__(self, vocab: Vocab, roles: RoleAgents):
        super().__init__(vocab, [])
        self.roles = roles
        self.graph = coa_graph(roles)
        self.state: CoAState = {"turn": 0, "hop": 0, "attempt": 0, "last_query": None, "blocks": [], "log": [],
                                "unresolved": [], "done": False, "subquestions": [], "facts": [], "reflection": ""}

    async def generate(self, prompt: Any, params: SamplingParams) -> list[Completion]:
        if self.state["done"]:
            raise BackendError("CoAPolicy: the answer was given; the loop asked for another turn")
        self.calls += 1
        self.state = await self.graph.ainvoke({**self.state, "blocks": [], "turn": self.calls})
        text = "".join(self.state["blocks"])
        stop = next((s for s in params.stop if text.endswith(s)), None)
        return [Completion(text=text, token_ids=encode_continuation(self, text), logprobs=None,
                           finish_reason="stop", stop_reason=stop)]

    @property
    def log(self) -> Sequence[Sequence[str]]:
        return self.state["log"]
