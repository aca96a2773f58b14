"""Chain-of-Agents (AFM) rewards, under the names of its two settings.

    afm_answer_reward(RewardInput(text, gold=["Paris", "Lyon"]))   # multi-hop QA: every "|"-answer in the gold set
    reward = afm_web_reward(EquivalenceJudge(llm))                 # web agent: 0.1·format + 0.9·judge − 0.5·repeat
    afm_format(RewardInput(text))                                  # 1.0 when the text follows AFM's grammar

The answer is the trajectory's own (`trajectory.answer`, the engine's extraction), else the last `<answer>` of
the completion. `afm_answer_reward` splits it on "|" and pays 1.0 only when every part matches a gold alias
(SQuAD normalisation): an answer with one wrong part earns nothing. `afm_web_reward`'s format term is
`engines.dialects.check_grammar("afm", completion)` (only whitespace outside the blocks, AFM's transition rules),
its judge term `judge_reward`'s 0/1 verdict, and a query searched twice (normalised) costs 0.5.
"""

from __future__ import annotations

from agentic_infer.engines.dialects import AFM, check_grammar
from agentic_infer.verify import Judge, gold_list, normalize_answer
from agentic_infer.verify.extract import answer_tag
from train.rewards.base import RewardInput, require_gold
from train.rewards.outcome import judge_reward, predicted_answer


def afm_format(inp: RewardInput) -> float:
    """1.0 when the completion follows AFM's block grammar, else 0.0."""
    return float(check_grammar(AFM, inp.completion) is None)


def afm_queries(inp: RewardInput) -> list[str]:
    """The searches of the completion: the trajectory's search steps, else every `<wiki_search>` span."""
    if inp.trajectory is not None and inp.trajectory.steps:
        return [str(s.arguments.get("query", "")) for s in inp.trajectory.steps if s.action == "search"]
    tag = AFM.actions[0]
    return [q.split(tag.begin)[-1] for q in inp.completion.split(tag.end)[:-1] if tag.begin in q]


def repeated_query(inp: RewardInput) -> bool:
    queries = [normalize_answer(q) for q in afm_queries(inp)]
    return len(queries) != len(set(queries))


def afm_answer_reward(inp: RewardInput) -> float:
    """1.0 iff the answer has at least one "|"-part and every part is in the gold set (normalised)."""
    gold = {normalize_answer(g) for g in gold_list(require_gold(inp, "afm_answer_reward"))} - {""}
    pred = predicted_answer(inp, None) if inp.trajectory is not None else answer_tag(inp.completion)
    parts = [normalize_answer(p) for p in (pred or "").split("|")]
    return float(bool(parts) and all(p and p in gold for p in parts))


def afm_web_reward(judge: Judge):
    """A reward `fn(inp)`: 0.1·afm_format + 0.9·judge verdict (0/1) − 0.5 when a query was repeated."""
    verdict = judge_reward(judge, answer_format="answer_tag")

    def reward(inp: RewardInput) -> float:
        return 0.1 * afm_format(inp) + 0.9 * verdict(inp) - 0.5 * repeated_query(inp)

    reward.__name__ = "afm_web_reward"
    return reward


__all__ = ["afm_answer_reward", "afm_format", "afm_queries", "afm_web_reward", "repeated_query"]
