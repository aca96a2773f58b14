"""DeepConf: confidence functions against hand-computed cases, voting rules, and the engine's offline
and online modes over FakeLLM (streaming, real cancellation, consensus and budget stops)."""

import asyncio
import math

import numpy as np
import pytest

from agentic_infer.engines.deepconf import (
    DeepConf,
    GroupTracker,
    ReplayTrace,
    answer_weights,
    group_confidences,
    leading_share,
    online_threshold,
    replay_offline,
    replay_online,
    stop_position,
    token_confidence,
    trace_confidence,
    vote,
)
from agentic_infer.errors import BackendError, ConfigError
from agentic_infer.testing import FakeLLM
from agentic_infer.types import Rollout, SamplingParams, TopLogprob

# --------------------------------------------------------------------------------------------------
# token / group / trace confidence


def test_token_confidence_exact_top_k_more_and_fewer():
    assert token_confidence([-1.0, -2.0, -3.0], k=3) == pytest.approx(2.0)
    # more than k given (e.g. the sampled token appended): the k largest
    assert token_confidence([-0.1, -5.0, -1.0, -2.0], k=2) == pytest.approx(0.55)
    # fewer than k: all of them
    assert token_confidence([-1.0], k=20) == pytest.approx(1.0)
    assert token_confidence([TopLogprob("a", -0.5), TopLogprob("b", -1.5)], k=20) == pytest.approx(1.0)
    # -inf (masked) candidates are ignored
    assert token_confidence([-1.0, -math.inf, -3.0], k=3) == pytest.approx(2.0)


def test_token_confidence_errors():
    with pytest.raises(ConfigError, match="logprobs=20"):
        token_confidence([], k=20)
    with pytest.raises(ConfigError, match="k=0"):
        token_confidence([-1.0], k=0)


def test_group_confidences_windows():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    np.testing.assert_allclose(group_confidences(x, window=2), [1.5, 2.5, 3.5, 4.5])
    np.testing.assert_allclose(group_confidences(x, window=5), [3.0])  # exactly one full window
    np.testing.assert_allclose(group_confidences(x, window=6), [3.0])  # shorter than the window: the mean
    np.testing.assert_allclose(group_confidences(x, window=1), x)
    assert group_confidences([], window=4).shape == (0,)
    with pytest.raises(ConfigError, match="window=0"):
        group_confidences(x, window=0)


def test_trace_confidence_metrics_long_trace():
    x = np.arange(1.0, 31.0)  # 30 tokens, window 2 -> 29 groups 1.5 .. 29.5
    assert trace_confidence(x, "mean", window=2) == pytest.approx(15.5)
    assert trace_confidence(x, "lowest", window=2) == pytest.approx(1.5)
    # bottom10: the lowest max(1, floor(29/10)) = 2 groups
    assert trace_confidence(x, "bottom10", window=2) == pytest.approx(2.0)
    assert trace_confidence(x, "tail", window=2, tail=3) == pytest.approx(29.0)
    assert trace_confidence(x, "tail", window=2, tail=100) == pytest.approx(15.5)


def test_trace_confidence_bottom10_group_counts_and_short_traces():
    # 10 groups -> floor(1.0) = 1 group = the lowest; 19 groups -> 1; 20 groups -> 2
    g10 = np.array([5.0, 1.0, 2.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0])  # window 1: groups = tokens
    assert trace_confidence(g10, "bottom10", window=1) == 1.0
    g20 = np.concatenate([g10, g10])
    assert trace_confidence(g20, "bottom10", window=1) == 1.0  # two lowest: 1 and 1
    g20[11] = 3.0
    assert trace_confidence(g20, "bottom10", window=1) == 1.5  # two lowest now 1 and 2
    assert trace_confidence(g20[:19], "bottom10", window=1) == 1.0  # 19 groups: floor(1.9) = 1
    short = [2.0, 4.0]
    for m in ("mean", "bottom10", "lowest", "tail"):
        assert trace_confidence(short, m, window=2048) == 3.0
    assert trace_confidence([], "lowest") == 0.0
    with pytest.raises(ConfigError, match="metric='median'"):
        trace_confidence(short, "median")


# --------------------------------------------------------------------------------------------------
# voting


def test_majority_ties_and_none_answers():
    assert vote(["a", "b", "a"]) == "a"
    assert vote(["b", "a"]) == "b"  # tie: first seen
    assert vote(["b", "a", "a", "b"]) == "b"
    assert vote([None, None, "x"]) == "x"
    assert vote([None, None]) is None
    assert vote([]) is None
    assert list(answer_weights(["b", None, "a", "b"])) == ["b", "a"]


def test_weighted_vote_and_filtering():
    assert vote(["a", "b", "b"], [5.0, 2.0, 2.0]) == "a"
    assert vote(["a", "b", "b"], [3.0, 2.0, 2.0]) == "b"
    assert vote(["a", "b"], [2.0, 2.0]) == "a"  # weighted tie: first seen
    answers, confs = ["a", "b", "c", "d", "e"], [1.0, 2.0, 3.0, 4.0, 5.0]
    # eta = 0.4: the 60th percentile of 1..5 is 3.4 -> keeps d (4) and e (5)
    assert answer_weights(answers, confs, keep_top=0.4) == {"d": 4.0, "e": 5.0}
    # eta = 1: the 0th percentile = the minimum -> everything is kept
    assert answer_weights(answers, confs, keep_top=1.0) == dict(zip(answers, confs, strict=True))
    # eta tiny: the 99th percentile 4.96 -> only the maximum
    assert vote(answers, confs, keep_top=0.01) == "e"
    # ties at the cut are kept (>=)
    assert answer_weights(["x", "y", "z", "z"], [1.0, 3.0, 3.0, 3.0], keep_top=0.5) == {"y": 3.0, "z": 6.0}


def test_filter_percentile_over_answered_traces_only():
    answers, confs = [None, None, "a", "b"], [100.0, 100.0, 1.0, 2.0]
    # over the answered traces [1, 2] the median is 1.5 -> "b" is kept; unanswered confidences do not count
    assert answer_weights(answers, confs, keep_top=0.5) == {"b": 2.0}
    assert answer_weights(answers, confs, min_confidence=1.0) == {"a": 1.0, "b": 2.0}


def test_vote_argument_errors():
    with pytest.raises(ConfigError, match="keep_top=0"):
        vote(["a"], [1.0], keep_top=0)
    with pytest.raises(ConfigError, match="keep_top=1.5"):
        vote(["a"], [1.0], keep_top=1.5)
    with pytest.raises(ConfigError, match="pass confidences"):
        vote(["a"], keep_top=0.1)
    with pytest.raises(ConfigError, match="one confidence per answer"):
        vote(["a", "b"], [1.0])
    with pytest.raises(ConfigError, match="finite"):
        vote(["a"], [float("nan")])


def test_online_threshold_stop_position_and_tracker_agree():
    assert online_threshold([1, 2, 3, 4, 5], "low") == pytest.approx(4.6)  # 90th percentile: keep top 10%
    assert online_threshold([1, 2, 3, 4, 5], "high") == pytest.approx(1.4)  # 10th percentile: keep top 90%
    with pytest.raises(ConfigError, match="variant='90'"):
        online_threshold([1.0], "90")
    confs = [5.0, 5.0, 5.0, 1.0, 1.0, 5.0]  # window 2 groups: 5, 5, 3, 1, 3
    assert stop_position(confs, 3.5, window=2) == 4
    assert stop_position(confs, 3.0, window=2) == 5  # 3.0 is not below 3.0
    assert stop_position(confs, 0.5, window=2) is None
    assert stop_position(confs[:1], 10.0, window=2) is None  # never a full window: never stopped
    tracker = GroupTracker(window=2)
    seen = [tracker.push(c) for c in confs]
    assert seen == [None, 5.0, 5.0, 3.0, 1.0, 3.0] and tracker.lowest == 1.0
    assert leading_share({"a": 3.0, "b": 1.0}) == ("a", 0.75)
    assert leading_share({}) == (None, 0.0)


# --------------------------------------------------------------------------------------------------
# engine over FakeLLM. FakeLLM gives top-k logprobs lp, lp-1, lp-2, ..., so with k=4 a token's
# confidence is 1.5 - lp: '#' (lp=-5) -> 6.5, '~' (lp=0) -> 1.5, anything else (lp=-2) -> 3.5.

K = 4


def lp(_i: int, tid: int) -> float:
    return {ord("~"): 0.0, ord("#"): -5.0}.get(tid, -2.0)


def good(ans: str, n: int = 24) -> str:
    return "#" * n + f"\\boxed{{{ans}}}"


def bad(ans: str, n: int = 400) -> str:
    return "~" * n + f"\\boxed{{{ans}}}"


def engine(llm, sampling=None, **kw):
    sampling = {"logprobs": K, "temperature": 1.0, "top_p": 1.0, "max_tokens": 10_000, **(sampling or {})}
    return DeepConf(llm, **{"mode": "online", "window": 8, **kw}, sampling=sampling)


Q = {"question": "q"}


def report(rollout: Rollout) -> dict:
    return rollout.metadata["deepconf"]


def fates(rollout: Rollout) -> list[dict]:
    return [t.metadata["deepconf"] for t in rollout.trajectories]


async def test_offline_reports_every_method_and_records_trajectories():
    script = [good("42"), good("42"), bad("7"), bad("7"), bad("7"), "no answer here"]
    llm = FakeLLM(script, logprob_fn=lp)
    res = await engine(llm, mode="offline", budget=6).run({"question": "6*7?", "answer": "42"})
    rep = report(res)
    assert rep["votes"]["majority"] == "7"  # three low-confidence 7s outvote two confident 42s
    assert rep["votes"]["top10_bottom10"] == "42" and res.answer == rep["answer"] == "42"
    assert rep["votes"]["weighted_mean"] == "42"  # 2 * (6.5*24 + 3.5*10)/34 > 3 * ~1.58
    assert set(rep["votes"]) == {"majority"} | {f"{p}_{m}" for p in ("weighted", "top10", "top90")
                                                for m in ("mean", "bottom10", "lowest", "tail")}
    assert rep["tokens_generated"] == sum(len(s) for s in script) == llm.tokens_generated
    assert rep["stop_reason"] == "complete" and rep["threshold"] is None
    t0 = res.trajectories[0]
    assert t0.engine == "deepconf" and t0.answer == "42" and t0.example["answer"] == "42"
    assert [s.kind for s in t0.segments] == ["prompt", "model"]
    assert len(t0.segments[1].metadata["token_confidences"]) == len(script[0])
    assert t0.metadata["deepconf"]["confidences"]["lowest"] == pytest.approx(3.5)
    assert fates(res)[-1]["answer"] is None and not fates(res)[-1]["votes"]
    assert Rollout.from_json(res.to_json()).to_dict() == res.to_dict()


async def test_rollout_trajectories_are_the_traces_with_ids_logprobs_and_finish_reasons():
    # offline: a completed trace, one cut at max_tokens; online: a trace stopped below the threshold
    llm = FakeLLM([good("42", 8), "#" * 60], logprob_fn=lp)
    res = await engine(llm, mode="offline", budget=2, sampling={"max_tokens": 40}).run({"id": "ex1", "question": "6*7?"})
    assert res.example_id == "ex1" and res.engine == "deepconf" and res.chosen is None and res.answer == "42"
    assert len(res.trajectories) == 2 == report(res)["traces_total"]
    assert [t.finish_reason for t in res.trajectories] == ["answer", "length"]
    for t, text in zip(res.trajectories, [good("42", 8), "#" * 40]):
        p, m = t.segments
        assert p.kind == "prompt" and p.token_ids == llm.tokenizer.encode(p.text) and "6*7?" in p.text
        assert llm.prompts[0] == llm.tokenizer.decode(p.token_ids)  # the ids are what the model was sent
        assert m.kind == "model" and m.text == text and m.token_ids == list(text.encode())
        assert [x.logprob for x in m.logprobs] == [lp(i, c) for i, c in enumerate(m.token_ids)]
        assert t.token_exact and t.group_id == "ex1" and t.trl_rollout()["completion_ids"] == m.token_ids
        assert set(t.metadata["deepconf"]["confidences"]) == {"mean", "bottom10", "lowest", "tail"}
        assert t.metadata["deepconf"]["phase"] == "offline" and "votes" in t.metadata["deepconf"]
        assert t.usage.completion_tokens == len(text) and t.usage.prompt_tokens == len(p.token_ids)
    assert [f["votes"] for f in fates(res)] == [True, False]
    assert res.usage.completion_tokens == len(good("42", 8)) + 40 and res.usage.llm_calls == 2
    assert set(report(res)) >= {"mode", "variant", "votes", "weights", "threshold", "consensus", "stop_reason",
                                "tokens_generated", "tokens_saved_est", "traces_voting", "wall_s"}
    assert "traces" not in report(res)
    online = await engine(FakeLLM([good("42"), good("42"), bad("9", 50)], logprob_fn=lp), budget=3, warmup=2,
                          tau=None).run(Q)
    assert [t.finish_reason for t in online.trajectories] == ["answer", "answer", "abort"]
    assert fates(online)[2]["stopped_early"] and fates(online)[2]["phase"] == "final"
    assert online.trajectories[2].segments[1].token_ids == list(b"~" * 8)  # the tokens it really sampled


async def test_online_stops_low_confidence_traces():
    # warm-up: two confident traces (42, 43: no consensus) and two unconfident ones -> s = 3.5
    script = [good("42"), good("43"), bad("7"), bad("7")] + [bad("9", 5000)] * 4
    llm = FakeLLM(script, logprob_fn=lp)
    res = await engine(llm, budget=8, warmup=4).run(Q)
    rep = report(res)
    assert rep["threshold"] == pytest.approx(3.5)
    assert rep["stop_reason"] == "budget" and rep["traces_total"] == 8
    assert rep["traces_stopped_early"] == 4
    finals = [t for t in res.trajectories if t.metadata["deepconf"]["phase"] == "final"]
    # each stopped as soon as the first full window (8 tokens of confidence 1.5) fell below 3.5
    assert [t.metadata["deepconf"]["tokens"] for t in finals] == [8] * 4
    assert all(t.finish_reason == "abort" and t.answer is None and not t.metadata["deepconf"]["votes"]
               for t in finals)
    # engine side: the engine pulled no token past the stop, and its report counts exactly what it pulled
    # (FakeLLM counts only pulled tokens, so this cannot show the backend stopped: that is measured where the
    # tokens are made in test_deepconf_backend_stop.py)
    assert llm.tokens_generated == rep["tokens_generated"] == sum(len(s) for s in script[:4]) + 4 * 8
    assert rep["tokens_saved_est"] > 0
    assert res.answer == "42" and rep["consensus"] == pytest.approx(0.5)
    assert finals[0].metadata["deepconf"]["stopped_early"] is True


async def test_online_consensus_stop_leaves_budget_unused():
    script = [good("42"), good("43"), bad("7"), bad("7"), good("42"), good("42")] + [good("1")] * 4
    llm = FakeLLM(script, logprob_fn=lp)
    res = await engine(llm, budget=10, warmup=4, tau=0.75).run(Q)
    rep = report(res)
    # after the 2nd final trace: 42 has 3 equal votes of 3 + 1 for 43 -> share 0.75 >= tau
    assert rep["stop_reason"] == "consensus" and rep["traces_total"] == 6 == len(res.trajectories)
    assert res.answer == "42" and rep["consensus"] == pytest.approx(0.75)
    assert llm.remaining == 4  # never requested
    assert rep["traces_voting"] == 4 == sum(f["votes"] for f in fates(res))


async def test_online_consensus_right_after_warmup():
    llm = FakeLLM([good("5")] * 4 + [good("6")] * 4, logprob_fn=lp)
    res = await engine(llm, budget=8, warmup=4).run(Q)
    assert (report(res)["stop_reason"], report(res)["traces_total"], res.answer) == ("consensus", 4, "5")
    # tau=None: no consensus stop (as in the official code): all B traces run; 4 votes each, a tie
    llm = FakeLLM([good("5")] * 4 + [good("6")] * 4, logprob_fn=lp)
    res = await engine(llm, budget=8, warmup=4, tau=None).run(Q)
    assert (report(res)["stop_reason"], report(res)["traces_total"], res.answer) == ("budget", 8, "5")  # first seen


async def test_online_concurrent_traces_are_cancelled_at_consensus():
    long_ok = "#" * 3000 + "\\boxed{42}"
    script = [good("42"), good("42"), good("43"), bad("7")] + [long_ok, good("42"), long_ok]
    llm = FakeLLM(script, logprob_fn=lp, token_delay_s=0.0005)
    res = await engine(llm, budget=7, warmup=4, tau=0.75, concurrency=3).run(Q)
    assert report(res)["stop_reason"] == "consensus"
    assert report(res)["traces_cancelled"] == 2
    cancelled = [t for t in res.trajectories if t.metadata["deepconf"]["cancelled"]]
    assert all(0 < t.metadata["deepconf"]["tokens"] < len(long_ok) and t.finish_reason == "abort"
               for t in cancelled)
    # engine side: the report counts every token the engine pulled (backend-side stop at consensus:
    # test_deepconf_backend_stop.py)
    assert llm.tokens_generated == report(res)["tokens_generated"]


async def test_engine_config_errors():
    llm = FakeLLM(["x"])
    with pytest.raises(ConfigError, match="variant='medium'"):
        DeepConf(llm, variant="medium")
    with pytest.raises(ConfigError, match="warmup=16 exceeds budget=8"):
        DeepConf(llm, budget=8)
    with pytest.raises(ConfigError, match="unknown setting 'windw'"):
        DeepConf(llm, windw=3)
    with pytest.raises(ConfigError, match="no 'question'"):
        await DeepConf(llm, mode="offline", budget=1).run({"text": "?"})


class NoTopLLM(FakeLLM):
    async def _stream_tokens(self, prompt, params, seed, cancelled):
        async for piece, tok in super()._stream_tokens(prompt, params, seed, cancelled):
            yield piece, type(tok)(tok.token_id, tok.token, tok.logprob, ())


async def test_backend_without_top_logprobs_is_a_clear_error():
    with pytest.raises(ConfigError, match="without top-k logprobs"):
        await engine(NoTopLLM(["abc"]), mode="offline", budget=1).run(Q)


# --------------------------------------------------------------------------------------------------
# replay


async def test_replay_matches_the_live_engine_on_the_same_order():
    script = [good("42"), good("43"), bad("7"), bad("7"), bad("9", 300), good("42"), good("42"), good("1")]
    live = await engine(FakeLLM(script, logprob_fn=lp), budget=8, warmup=4, tau=0.75).run(Q)
    offline = await engine(FakeLLM(script, logprob_fn=lp), mode="offline", budget=8).run(Q)
    pool = [ReplayTrace.from_trajectory(t) for t in offline.trajectories]

    class Identity:  # replay in recorded order
        def permutation(self, n):
            return np.arange(n)

    lv = report(live)
    out = replay_online(pool, budget=8, warmup=4, tau=0.75, window=8, rng=Identity())
    assert (out.answer, out.tokens, out.traces, out.stopped, out.stop_reason) == (
        "42", lv["tokens_generated"], lv["traces_total"], lv["traces_stopped_early"], lv["stop_reason"])
    assert out.threshold == pytest.approx(lv["threshold"])
    no_tau = replay_online(pool, budget=8, warmup=4, tau=None, window=8, rng=Identity())
    assert (no_tau.traces, no_tau.stop_reason, no_tau.stopped) == (8, "budget", 1)
    votes, tokens = replay_offline(pool, budget=8, window=8, tail=2048, rng=Identity())
    assert tokens == report(offline)["tokens_generated"]
    assert votes == report(offline)["votes"]
    with pytest.raises(ConfigError, match="budget=9"):
        replay_online(pool, budget=9, warmup=4, rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match="stopped early"):
        ReplayTrace.from_trajectory(live.trajectories[4])


async def test_backend_failure_surfaces_and_stops_the_other_traces():
    llm = FakeLLM([good("1"), "#" * 2000], logprob_fn=lp, token_delay_s=0.0005)
    with pytest.raises(BackendError, match="ran out of scripted responses"):
        await engine(llm, mode="offline", budget=3, concurrency=3).run(Q)
    pulled = llm.tokens_generated  # FakeLLM counts the tokens the engine pulled, not what a backend made
    assert pulled < len(good("1")) + 2000  # engine side: the engine stopped reading the long trace
    await asyncio.sleep(0.05)
    assert llm.tokens_generated == pulled  # and nothing in the engine reads it after run() raised
    # (that a backend stops producing is measured at the producer in test_deepconf_backend_stop.py)


@pytest.mark.slow
async def test_online_on_the_embedded_model_stops_where_the_replay_says():
    """Real model: the online run's tokens equal a replay of the offline traces (same seeds) in order."""
    pytest.importorskip("llama_cpp")
    from agentic_infer.backends import load_llm

    llm = load_llm("llamacpp://default")
    opts = dict(budget=6, warmup=3, window=8, tail=8,
                sampling={"max_tokens": 48, "seed": 11, "temperature": 0.8, "top_p": 0.95})
    q = "What is 12 + 30? Answer briefly."
    off_engine, on_engine = DeepConf(llm, mode="offline", **opts), DeepConf(llm, mode="online", tau=None, **opts)

    async def prime(e):  # same KV-cache state before both runs (see bench/deepconf.py: prime)
        await llm.generate(e.prompt_for(q)[0], SamplingParams(max_tokens=2, temperature=0.0))

    try:
        await prime(off_engine)
        full = await off_engine.run({"question": q})
        await prime(on_engine)
        online = await on_engine.run({"question": q})
    finally:
        await llm.aclose()
    pool = [ReplayTrace.from_trajectory(t) for t in full.trajectories]

    class Recorded:
        def permutation(self, n):
            return np.arange(n)

    out = replay_online(pool, budget=6, warmup=3, tau=None, window=8, rng=Recorded())
    on = report(online)
    assert on["traces_total"] == 6
    assert (out.tokens, out.stopped) == (on["tokens_generated"], on["traces_stopped_early"])
    assert on["tokens_generated"] <= report(full)["tokens_generated"]
    for t in online.trajectories:
        assert t.token_exact and t.segments[0].token_ids  # the prompt ids the model conditioned on
        assert t.metadata["deepconf"]["tokens"] == len(t.segments[1].token_ids)
        if t.metadata["deepconf"]["stopped_early"]:
            assert t.metadata["deepconf"]["tokens"] >= 8 and t.finish_reason == "abort"
