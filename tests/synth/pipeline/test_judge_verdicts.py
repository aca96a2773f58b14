"""The judge step uses the one metric registry (the published variants too) and the one judging rule
(`verify.judge_answers`): every gold alias in one call, an empty answer without a call."""

from agentic_infer.types import Trajectory
from agentic_infer.verify import Verdict
from synth.pipeline import FilterStep, JudgeStep
from synth.pipeline.records import doc_trajectory, trajectory_doc

EXAMPLE = {"id": "q1", "question": "Who wrote Hamlet?", "gold": ["William Shakespeare", "The Bard"]}


def _traj(answer, text):
    t = Trajectory(example=dict(EXAMPLE), answer=answer, group_id="q1")
    t.add("prompt", "Who wrote Hamlet? Put the answer in \\boxed{}.")
    t.add("model", text)
    return t


def test_a_judge_step_and_a_filter_on_search_o1_em():
    boxed = _traj("the bard", "It was \\boxed{\\text{The Bard}}")  # Search-o1 reads its own box
    unboxed = _traj("The Bard", "It was The Bard.")  # right answer, but Search-o1's extraction finds none
    docs = [trajectory_doc(boxed), trajectory_doc(unboxed, sample=1)]
    judged = [doc_trajectory(d) for d in JudgeStep(metrics=("em", "search_o1_em"))(iter(docs))]
    assert [(t.rewards["em"], t.rewards["search_o1_em"]) for t in judged] == [(1.0, 1.0), (1.0, 0.0)]
    docs = [trajectory_doc(t, sample=i) for i, t in enumerate(judged)]
    kept = list(FilterStep("correct", options={"metric": "search_o1_em"})(iter(docs)))
    assert [doc_trajectory(d).answer for d in kept] == ["the bard"]


class Recorder:
    def __init__(self):
        self.seen = []

    async def score(self, question, prediction, reference=None):
        self.seen.append((question, prediction, reference))
        return Verdict("CORRECT", 1.0)


def test_llm_judges_see_every_gold_alias_and_no_empty_answer():
    judge = Recorder()
    docs = [trajectory_doc(_traj("The Bard", "\\boxed{The Bard}")), trajectory_doc(_traj(None, "..."), sample=1)]
    judged = [doc_trajectory(d) for d in JudgeStep(metrics=(), judges={"judge_acc": judge})(iter(docs))]
    assert judge.seen == [("Who wrote Hamlet?", "The Bard", ["William Shakespeare", "The Bard"])]  # one call, all
    assert [t.rewards["judge_acc"] for t in judged] == [1.0, 0.0]


def test_judges_from_specs_are_built_by_the_one_make_judge_and_cached(tmp_path):
    specs = [{"name": "judge_acc", "backend": "fake://?reply=equivalent: true", "verdict": "json"},
             {"name": "yn", "backend": "fake://?reply=No", "verdict": "yes-no"}]  # one token: No
    docs = [trajectory_doc(_traj("The Bard", "\\boxed{The Bard}")), trajectory_doc(_traj("", "..."), sample=1)]
    step = JudgeStep(metrics=("em",), judge_specs=specs, task="nq-open", cache_dir=str(tmp_path))
    judged = [doc_trajectory(d) for d in step(iter(docs))]
    assert [(t.rewards["judge_acc"], t.rewards["yn"]) for t in judged] == [(1.0, 0.0), (0.0, 0.0)]
    assert step.stats["judge_calls"].total == 4 and step.stats["judge_backend_calls"].total == 2  # empty: no call
    again = JudgeStep(metrics=("em",), judge_specs=specs, task="nq-open", cache_dir=str(tmp_path))
    list(again(iter(docs)))
    assert again.stats["judge_backend_calls"].total == 0  # replayed from OUT/cache/judge-<name>.sqlite3


class Unsure:
    """A judge whose label says CORRECT with a confidence below 1 (a yes-no judge's P(Yes) of 0.8)."""

    async def score(self, question, prediction, reference=None):
        return Verdict("CORRECT", 0.8)


def test_synth_and_eval_give_the_same_verdict_for_the_same_item():
    """One value per verdict: synth's judge step writes what eval's judging phase and train's judge reward give."""
    import asyncio

    from agentic_infer.types import Rollout
    from eval.judging import judge_rollouts
    from train.rewards.base import RewardInput
    from train.rewards.outcome import ajudge_scores

    traj = _traj("The Bard", "\\boxed{The Bard}")
    [synth_doc] = list(JudgeStep(metrics=(), judges={"judge_acc": Unsure()})(iter([trajectory_doc(traj)])))
    rows = [{"id": "q1", "question": EXAMPLE["question"], "gold": EXAMPLE["gold"], "prediction": "The Bard",
             "metrics": {}}]
    rollout = Rollout(example_id="q1", example=dict(EXAMPLE), trajectories=[_traj("The Bard", "\\boxed{The Bard}")],
                      answer="The Bard")
    asyncio.run(judge_rollouts(rows, {"q1": rollout}, Unsure()))
    [train_score] = asyncio.run(ajudge_scores(Unsure(), [RewardInput(question=EXAMPLE["question"], completion="",
                                                                gold=EXAMPLE["gold"], trajectory=traj)]))
    assert doc_trajectory(synth_doc).rewards["judge_acc"] == rows[0]["metrics"]["judge_acc"] == train_score == 1.0
