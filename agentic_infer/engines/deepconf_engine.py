r"""The DeepConf engine: sample reasoning traces with top-k logprobs and vote by confidence.

    llm = load_llm("llamacpp://default")
    result = await DeepConf(llm, mode="online", variant="low", budget=32).run("What is 6*7?")
    result.answer, result.tokens_generated, result.traces_stopped_early, result.trajectories

- offline: sample `budget` (K) traces to completion, extract each answer (`\boxed{}` by default),
  and report every voting method: `majority`; `weighted_<metric>` for mean / bottom10 / lowest /
  tail; `top10_<metric>` and `top90_<metric>` (keep the top 10% / 90% by that metric, then a
  confidence-weighted vote). The answer is `top10_<offline_metric>` for variant "low" and
  `top90_<offline_metric>` for "high".
- online (the paper's Algorithm 2): `warmup` (N_init) traces run to completion; the threshold s is
  the percentile of their lowest-group confidences (90th for "low", 10th for "high"). Further
  traces are *streamed*; once `window` tokens exist, each new token updates the current group
  confidence and the trace is cancelled at the backend (the stream is closed, generation stops) the
  moment it falls below s. A trace votes when it has an answer and its lowest-group confidence is
  >= s (warm-up traces included), weighted by that confidence. Sampling stops when the leading
  answer's weighted share reaches `tau` (checked after the warm-up and after every finished
  trace) or when `budget` (B, warm-up included) traces have been started. `tau=None` turns the
  consensus stop off (as in the official code), which isolates the saving of trace stopping.

Differences from the official code, on purpose (we follow the paper): variants are named (the
library's default percentile means "high" in one entry point and "low" in another), the final vote
is confidence-weighted (the library's is an unweighted majority), and there is a tau consensus stop
(the library has none).

`concurrency` > 1 keeps several traces in flight (for batching backends such as vLLM); traces
still running when consensus is reached are cancelled and their tokens counted. The estimate of
tokens saved (`tokens_saved_est`) assumes a stopped or unstarted trace would have run to the
mean length of the traces that finished; `bench/deepconf.py` measures the real figure.
Every trace becomes a `Trajectory` (prompt + model segment with token ids, sampled-token logprobs
and per-token confidences) whose `metadata["deepconf"]` holds its confidences and fate and
`metadata["deepconf_run"]` the run's answer, threshold and stop reason.

Not covered: prompt formats beyond one chat turn, non-math answer extraction (pass `extract_answer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from agentic_infer.backends.base import LLM, count_prompt_tokens
from agentic_infer.engines.deepconf import (
    METRICS,
    GroupTracker,
    answer_weights,
    leading_share,
    online_threshold,
    token_confidence,
    trace_confidences,
    variant_keep,
)
from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import MAX_TOP_LOGPROBS, Message, SamplingParams, TokenLogprob, Trajectory, Usage
from eval.metrics import extract_boxed, normalize_math_answer

log = logging.getLogger(__name__)

DEFAULT_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


@dataclass
class DeepConfConfig:
    """Settings of a DeepConf run (defaults from the paper; `budget` is K offline and B online)."""

    mode: str = "online"
    variant: str = "low"
    budget: int = 512
    warmup: int = 16
    tau: float | None = 0.95
    window: int = 2048
    tail: int = 2048
    top_logprobs: int = 20
    offline_metric: str = "bottom10"
    max_tokens: int = 4096
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int = 0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    concurrency: int = 1
    instruction: str = DEFAULT_INSTRUCTION
    system_prompt: str | None = None
    keep_top_logprobs: bool = False

    def __post_init__(self) -> None:
        own = "DeepConfConfig"
        if self.mode not in ("offline", "online"):
            raise ConfigError(f"{own}.mode={self.mode!r}: choose 'offline' or 'online'")
        variant_keep(self.variant)
        for name in ("budget", "warmup", "window", "tail", "max_tokens", "concurrency"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"{own}.{name}={v!r}: must be an integer >= 1")
        if self.mode == "online" and self.warmup > self.budget:
            raise ConfigError(f"{own}.warmup={self.warmup} exceeds budget={self.budget}: the warm-up traces are "
                              "part of the budget; lower warmup or raise budget")
        if self.tau is not None and not 0 < self.tau <= 1:
            raise ConfigError(f"{own}.tau={self.tau!r}: must be in (0, 1], or None to turn the consensus stop off")
        if not 1 <= self.top_logprobs <= MAX_TOP_LOGPROBS:
            raise ConfigError(f"{own}.top_logprobs={self.top_logprobs!r}: must be in 1..{MAX_TOP_LOGPROBS}")
        if self.offline_metric not in METRICS:
            raise ConfigError(f"{own}.offline_metric={self.offline_metric!r}: choose one of {METRICS}")
        self.stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
        self.sampling_params(0)  # validates temperature, top_p, top_k, stop

    def sampling_params(self, index: int) -> SamplingParams:
        return SamplingParams(max_tokens=self.max_tokens, temperature=self.temperature, top_p=self.top_p,
                              top_k=self.top_k, stop=self.stop, logprobs=self.top_logprobs,
                              seed=None if self.seed is None else self.seed + index)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@dataclass
class TraceRecord:
    """One sampled trace and its fate."""

    index: int
    phase: str  # "offline" | "warmup" | "final"
    trajectory: Trajectory
    tokens: int = 0
    answer: str | None = None  # as extracted
    key: str | None = None  # the normalised form that votes
    confidences: dict[str, float] = field(default_factory=dict)
    finish_reason: str = "stop"  # stop | length | abort
    stopped_early: bool = False  # cancelled because its group confidence fell below the threshold
    cancelled: bool = False  # cancelled because consensus was reached while it ran
    votes: bool = False

    @property
    def completed(self) -> bool:
        return not (self.stopped_early or self.cancelled)

    def summary(self) -> dict[str, Any]:
        return {"index": self.index, "phase": self.phase, "tokens": self.tokens, "answer": self.answer,
                "key": self.key, "confidences": self.confidences, "finish_reason": self.finish_reason,
                "stopped_early": self.stopped_early, "cancelled": self.cancelled, "votes": self.votes}


@dataclass
class DeepConfResult:
    """What a run decided and what it cost; `traces[i].trajectory` holds each trace in full."""

    question: str
    mode: str
    variant: str
    answer: str | None
    votes: dict[str, str | None]
    weights: dict[str, dict[str, float]]
    threshold: float | None
    consensus: float | None
    stop_reason: str  # "complete" (offline) | "consensus" | "budget"
    tokens_generated: int
    tokens_full_est: int
    traces: list[TraceRecord]
    wall_s: float
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def tokens_saved_est(self) -> int:
        return max(0, self.tokens_full_est - self.tokens_generated)

    @property
    def traces_total(self) -> int:
        return len(self.traces)

    @property
    def traces_stopped_early(self) -> int:
        return sum(t.stopped_early for t in self.traces)

    @property
    def traces_cancelled(self) -> int:
        return sum(t.cancelled for t in self.traces)

    @property
    def traces_voting(self) -> int:
        return sum(t.votes for t in self.traces)

    @property
    def trajectories(self) -> list[Trajectory]:
        return [t.trajectory for t in self.traces]

    def to_dict(self, *, with_trajectories: bool = False) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("run_id", "question", "mode", "variant", "answer", "votes", "weights",
                                           "threshold", "consensus", "stop_reason", "tokens_generated",
                                           "tokens_full_est", "tokens_saved_est", "traces_total",
                                           "traces_stopped_early", "traces_cancelled", "traces_voting", "wall_s")}
        d["traces"] = [t.summary() for t in self.traces]
        if with_trajectories:
            d["trajectories"] = [t.to_dict() for t in self.trajectories]
        return d


def _question(example: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    if isinstance(example, str):
        return example, {"question": example}
    for k in ("question", "problem", "prompt"):
        if isinstance(example.get(k), str):
            return example[k], dict(example)
    raise ConfigError(f"DeepConf.run: example has no 'question'/'problem' text (keys: {sorted(example)}); "
                      "pass a string or a dict with 'question'")


class DeepConf:
    """DeepConf offline / online over any backend that streams top-k logprobs (see the module docstring)."""

    name = "deepconf"

    def __init__(self, llm: LLM, config: DeepConfConfig | None = None, *,
                 extract_answer: Callable[[str], str | None] = extract_boxed,
                 answer_key: Callable[[str | None], Any] = normalize_math_answer, **options: Any):
        known = {f.name for f in fields(DeepConfConfig)}
        bad = sorted(set(options) - known)
        if bad:
            raise ConfigError(f"DeepConf: unknown option(s) {bad}; known: {sorted(known)}")
        base = asdict(config) if config is not None else {}
        self.config = DeepConfConfig(**{**base, **options})
        self.llm = llm
        self.extract_answer = extract_answer
        self.answer_key = answer_key

    # -- prompt ----------------------------------------------------------------------------------
    def prompt_for(self, question: str) -> tuple[Any, str]:
        """(what is sent to the backend, its text): the chat-rendered prompt, or messages without a template."""
        cfg = self.config
        msgs = [Message("system", cfg.system_prompt)] if cfg.system_prompt else []
        msgs.append(Message("user", f"{question}\n{cfg.instruction}".strip()))
        try:
            text = self.llm.render(msgs)
        except AgenticError:  # no chat template known here: the backend sends messages itself
            return msgs, "\n".join(m.content for m in msgs)
        return text, text

    # -- one trace -------------------------------------------------------------------------------
    async def _trace(self, rec: TraceRecord, prompt: Any, threshold: float | None) -> TraceRecord:
        cfg = self.config
        tracker = GroupTracker(cfg.window) if threshold is not None else None
        text: list[str] = []
        toks: list[TokenLogprob] = []
        confs: list[float] = []
        t0 = time.monotonic()
        stop_reason = None
        try:
            async with contextlib.aclosing(self.llm.stream(prompt, cfg.sampling_params(rec.index))) as stream:
                async for d in stream:
                    text.append(d.text)
                    if d.token is not None:
                        if not d.token.top:
                            raise ConfigError(f"backend {self.llm.name!r} streamed a token without top-k logprobs; "
                                              "DeepConf needs a backend that returns logprobs=k alternatives")
                        c = token_confidence(d.token.top, cfg.top_logprobs)
                        toks.append(d.token)
                        confs.append(c)
                        rec.tokens = len(confs)
                        if tracker is not None:
                            g = tracker.push(c)
                            if g is not None and g < threshold:
                                rec.stopped_early, rec.finish_reason = True, "abort"
                                break  # leaving the `async with` closes the stream: generation stops
                    if d.finish_reason is not None:
                        rec.finish_reason, stop_reason = d.finish_reason, d.stop_reason
        except asyncio.CancelledError:
            rec.cancelled, rec.finish_reason = True, "abort"
            raise
        finally:
            self._finish(rec, "".join(text), toks, confs, stop_reason, time.monotonic() - t0)
        return rec

    def _finish(self, rec: TraceRecord, text: str, toks: list[TokenLogprob], confs: list[float],
                stop_reason: str | None, wall_s: float) -> None:
        cfg = self.config
        rec.tokens = len(confs)
        rec.confidences = trace_confidences(confs, cfg.window, cfg.tail)
        if rec.completed:
            rec.answer = self.extract_answer(text)
            if rec.answer is not None and not rec.answer.strip():
                rec.answer = None  # an empty \boxed{} is no answer
            rec.key = self.answer_key(rec.answer) if rec.answer is not None else None
        ids = [t.token_id for t in toks]
        ids_ok = bool(ids) and all(i is not None for i in ids)
        lps = toks if cfg.keep_top_logprobs else [TokenLogprob(t.token_id, t.token, t.logprob) for t in toks]
        traj = rec.trajectory
        traj.add("model", text, token_ids=ids if ids_ok else None, logprobs=lps or None,
                 token_confidences=[round(c, 6) for c in confs])
        traj.answer = rec.answer
        traj.finish_reason = rec.finish_reason
        traj.usage = Usage(completion_tokens=rec.tokens, llm_calls=1, wall_s=wall_s)
        traj.metadata["deepconf"] = {**rec.summary(), "stop_reason": stop_reason}

    def _new_record(self, index: int, phase: str, prompt_text: str, example: dict[str, Any]) -> TraceRecord:
        traj = Trajectory(engine=self.name, config=self.config.to_dict(), example=example)
        traj.add("prompt", prompt_text)
        return TraceRecord(index=index, phase=phase, trajectory=traj)

    async def _batch(self, records: Sequence[TraceRecord], prompt: Any) -> None:
        sem = asyncio.Semaphore(self.config.concurrency)

        async def one(rec: TraceRecord) -> None:
            async with sem:
                await self._trace(rec, prompt, None)

        tasks = [asyncio.ensure_future(one(r)) for r in records]
        try:
            await asyncio.gather(*tasks)
        finally:  # on a failure, stop the traces still running instead of orphaning them
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- modes -----------------------------------------------------------------------------------
    async def run(self, example: str | Mapping[str, Any]) -> DeepConfResult:
        """Run DeepConf on one question (a string, or a dict with 'question' / 'problem')."""
        question, ex = _question(example)
        prompt, prompt_text = self.prompt_for(question)
        t0 = time.monotonic()
        if self.config.mode == "offline":
            res = await self._offline(question, prompt, prompt_text, ex)
        else:
            res = await self._online(question, prompt, prompt_text, ex)
        res.wall_s = time.monotonic() - t0
        n_prompt = count_prompt_tokens(self.llm, prompt)  # every trace sends the same prompt
        for t in res.traces:
            t.trajectory.usage.prompt_tokens = n_prompt
            t.trajectory.metadata["deepconf_run"] = {
                "run_id": res.run_id, "mode": res.mode, "variant": res.variant, "answer": res.answer,
                "threshold": res.threshold, "consensus": res.consensus, "stop_reason": res.stop_reason}
        return res

    async def run_many(self, examples: Iterable[str | Mapping[str, Any]], *, concurrency: int = 1) -> list[DeepConfResult]:
        """`run` over many questions, `concurrency` at a time, results in input order."""
        sem = asyncio.Semaphore(concurrency)

        async def one(ex: str | Mapping[str, Any]) -> DeepConfResult:
            async with sem:
                return await self.run(ex)

        return list(await asyncio.gather(*(one(e) for e in examples)))

    def _raw_answer(self, traces: Sequence[TraceRecord], key: Any) -> str | None:
        return next((t.answer for t in traces if key is not None and t.key == key), None)

    async def _offline(self, question: str, prompt: Any, prompt_text: str, ex: dict[str, Any]) -> DeepConfResult:
        cfg = self.config
        traces = [self._new_record(i, "offline", prompt_text, ex) for i in range(cfg.budget)]
        await self._batch(traces, prompt)
        keys = [t.key for t in traces]
        weights: dict[str, dict[Any, float]] = {"majority": answer_weights(keys)}
        for m in METRICS:
            confs = [t.confidences[m] for t in traces]
            weights[f"weighted_{m}"] = answer_weights(keys, confs)
            weights[f"top10_{m}"] = answer_weights(keys, confs, keep_top=0.10)
            weights[f"top90_{m}"] = answer_weights(keys, confs, keep_top=0.90)
        votes = {name: self._raw_answer(traces, leading_share(w)[0]) for name, w in weights.items()}
        main = f"top{round(variant_keep(cfg.variant) * 100)}_{cfg.offline_metric}"
        chosen = weights[main]
        answered = [t.confidences[cfg.offline_metric] for t in traces if t.key is not None]
        if answered:
            cut = float(np.percentile(answered, 100.0 * (1.0 - variant_keep(cfg.variant))))
            for t in traces:
                t.votes = t.key is not None and t.confidences[cfg.offline_metric] >= cut
        tokens = sum(t.tokens for t in traces)
        return DeepConfResult(question, "offline", cfg.variant, votes[main], votes,
                              {k: {str(a): w for a, w in v.items()} for k, v in weights.items()},
                              None, leading_share(chosen)[1] if chosen else None, "complete", tokens, tokens,
                              traces, 0.0)

    async def _online(self, question: str, prompt: Any, prompt_text: str, ex: dict[str, Any]) -> DeepConfResult:
        cfg = self.config
        traces = [self._new_record(i, "warmup", prompt_text, ex) for i in range(cfg.warmup)]
        await self._batch(traces, prompt)
        threshold = online_threshold([t.confidences["lowest"] for t in traces], cfg.variant)

        def tally() -> dict[Any, float]:
            for t in traces:
                t.votes = t.completed and t.key is not None and t.confidences["lowest"] >= threshold
            voting = [t for t in traces if t.votes]
            return answer_weights([t.key for t in voting], [t.confidences["lowest"] for t in voting])

        tau = math.inf if cfg.tau is None else cfg.tau
        weights = tally()
        lead, share = leading_share(weights)
        running: set[asyncio.Task] = set()
        next_index = cfg.warmup
        try:
            while True:
                while share < tau and next_index < cfg.budget and len(running) < cfg.concurrency:
                    rec = self._new_record(next_index, "final", prompt_text, ex)
                    traces.append(rec)
                    running.add(asyncio.create_task(self._trace(rec, prompt, threshold)))
                    next_index += 1
                if not running:
                    break
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()  # re-raise a backend failure
                weights = tally()
                lead, share = leading_share(weights)
                if share >= tau and running:
                    for task in running:
                        task.cancel()
                    await asyncio.gather(*running, return_exceptions=True)
                    running = set()
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        tokens = sum(t.tokens for t in traces)
        finished = [t.tokens for t in traces if t.completed]
        mean_len = sum(finished) / len(finished) if finished else float(cfg.max_tokens)
        full = sum(t.tokens if t.completed else max(t.tokens, mean_len) for t in traces)
        full += (cfg.budget - len(traces)) * mean_len
        answer = self._raw_answer(traces, lead)
        early = share >= tau and (len(traces) < cfg.budget or any(t.cancelled for t in traces))
        return DeepConfResult(question, "online", cfg.variant, answer, {"online": answer},
                              {"online": {str(a): w for a, w in weights.items()}}, threshold, share,
                              "consensus" if early else "budget", tokens, int(round(full)), traces, 0.0)


__all__ = ["DEFAULT_INSTRUCTION", "DeepConf", "DeepConfConfig", "DeepConfResult", "TraceRecord"]
