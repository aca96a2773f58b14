"""Chain-of-Agents as a LangGraph graph of role agents, acting as ONE policy of the agent loop, so that its run is
linearised into a single AFM trajectory exactly as a sampled one would be.

    policy = CoAPolicy(vocab, plan, retriever)          # the multi-agent system behind an LLM's interface
    engine = SearchO1(policy, retriever, dialect="afm", k=3, ...)
    traj = (await engine.run(example)).trajectory       # <think> <plan> <wiki_search> <observation> ... <answer>

Roles (nodes of the compiled `StateGraph`; the teacher-free mode fills them from the question's gold
decomposition and the real search results, as `agentic synth demos` does):

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

from collections.abc import Sequence
from typing import Any, TypedDict

from agentic_infer.backends.base import encode_continuation
from agentic_infer.engines.dialects import AFM
from agentic_infer.errors import BackendError
from agentic_infer.types import Completion, SamplingParams
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


def _think(text: str) -> str:
    return f"<think>{text}</think>\n"


class Roles:
    """The teacher-free role agents over one gold plan and the recording retriever (see module docstring)."""

    def __init__(self, plan: GoldPlan, retriever: RecordingRetriever, *, end_of_turn: str = ""):
        self.plan, self.retriever, self.end_of_turn = plan, retriever, end_of_turn

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
        return {"blocks": [block], "log": [*state["log"][:-1], [*state["log"][-1], "planner"]]}

    def searcher(self, state: CoAState) -> CoAState:
        hop = self.plan.hops[state["hop"]]
        query = hop.query(WORDINGS[state["attempt"]])
        lead = "Search by the page title instead." if state["attempt"] else f"I need to find out: {hop.description}."
        block = _think(lead) + f"{AFM.actions[0].begin}{query}{AFM.actions[0].end}"
        return {"blocks": [*state["blocks"], block], "last_query": query,
                "log": [*state["log"][:-1], [*state["log"][-1], "searcher"]]}

    def reflector(self, state: CoAState) -> CoAState:
        hop = self._hop(state)
        block = (_think(f"The results do not say {hop.description or hop.title}.")
                 + f"<reflection>The query '{state['last_query']}' missed; a search for the page '{hop.title}' "
                   "should find it.</reflection>\n")
        return {"blocks": [block], "attempt": state["attempt"] + 1,
                "log": [*state["log"][:-1], [*state["log"][-1], "reflector"]]}

    def answerer(self, state: CoAState) -> CoAState:
        facts = [h.answer for h in self.plan.hops if h.answer]
        lead = f"The facts found: {', '.join(facts)}." if facts else "I have what I need."
        block = _think(f"{lead} Putting them together gives the answer.") + (
            f"<answer>{self.plan.gold[0]}</answer>{self.end_of_turn}")
        return {"blocks": [*state["blocks"], block], "done": True,
                "log": [*state["log"][:-1], [*state["log"][-1], "answerer"]]}

    # -- routing ------------------------------------------------------------------------------------
    def after_verifier(self, state: CoAState) -> str:
        if state["found"] is None:
            return "planner"
        if state["found"]:
            return "answerer" if state["hop"] + 1 >= len(self.plan.hops) else "next_hop"
        return "reflector" if state["attempt"] + 1 < len(WORDINGS) else "give_up"


def coa_graph(roles: Roles) -> Any:
    """The compiled LangGraph `StateGraph` of the roles (module docstring)."""
    from langgraph.graph import END, START, StateGraph

    def next_hop(state: CoAState) -> CoAState:
        return {"hop": state["hop"] + 1, "attempt": 0}

    def give_up(state: CoAState) -> CoAState:  # the hop stays unresolved; the filter drops the trajectory
        unresolved = [*state.get("unresolved", []), state["hop"]]
        last = state["hop"] + 1 >= len(roles.plan.hops)
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

    def __init__(self, vocab: Vocab, plan: GoldPlan, retriever: RecordingRetriever, *, end_of_turn: str = ""):
        super().__init__(vocab, [])
        self.roles = Roles(plan, retriever, end_of_turn=end_of_turn)
        self.graph = coa_graph(self.roles)
        self.state: CoAState = {"turn": 0, "hop": 0, "attempt": 0, "last_query": None, "blocks": [], "log": [],
                                "unresolved": [], "done": False}

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
