r"""The DeepConf engine: sample reasoning traces with top-k logprobs and vote by confidence.

    llm = load_llm("llamacpp://default")
    rollout = await DeepConf(llm, mode="online", variant="low", budget=32).run({"question": "What is 6*7?"})
    rollout.answer, rollout.metadata["deepconf"]["tokens_generated"], rollout.trajectories

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
`run(example)` returns a `Rollout`: `trajectories` are the traces, in order, each a prompt segment
(the token ids the model conditioned on, from `encode_prompt` of the chat-rendered prompt) and a
model segment (sampled token ids, logprobs, per-token confidences in `metadata["token_confidences"]`);
a trace's `finish_reason` is "answer" (completed), "length" (hit `sampling.max_tokens`) or "abort" (stopped
below the threshold, or cancelled at consensus); its `metadata["deepconf"]` holds its index, phase,
answer and vote key, confidences (mean, bottom10, lowest, tail), fate and whether it voted.
`Rollout.answer` is the vote (`chosen=None`) and `Rollout.metadata["deepconf"]` the voting report:
mode, variant, votes and weights per method, threshold, consensus, stop reason, tokens generated
and saved (estimate), trace counts, wall time.

Not covered: prompt formats beyond one chat turn, non-math answer extraction (pass `extract_answer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentic_infer.backends.base import LLM, count_prompt_tokens, encode_prompt
from agentic_infer.concurrency import gather_bounded
from agentic_infer.config import build_config, config_to_dict, renamed
from agentic_infer.engines.base import example_id
from agentic_infer.engines.deepconf.confidence import (
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
from agentic_infer.types import (
    MAX_TOP_LOGPROBS,
    Message,
    Rollout,
    SamplingParams,
    Segment,
    TokenLogprob,
    Trajectory,
    Usage,
    trajectory_finish,
)
from agentic_infer.verify import extract_boxed, normalize_math_answer

DEFAULT_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
# the paper's sampling; `logprobs` is the number of top alternatives each token's confidence is computed from
DEFAULT_SAMPLING = SamplingParams(max_tokens=4096, temperature=0.6, top_p=0.95, top_k=0, logprobs=20)
_SAMPLING_KEYS = ("max_tokens", "temperature", "top_p", "top_k", "stop", "seed")


@renamed(top_logprobs="sampling.logprobs", **{k: f"sampling.{k}" for k in _SAMPLING_KEYS})
@dataclass(frozen=True)
class DeepConfConfig:
    """Settings of a DeepConf run (defaults from the paper; `budget` is K offline and B online). `sampling` is
    every trace's: trace i samples with `sampling.seed + i` when a seed is given; `n` is 1 (one trace a call)."""

    mode: str = "online"
    variant: str = "low"
    budget: int = 512
    warmup: int = 16
    tau: float | None = 0.95
    window: int = 2048
    tail: int = 2048
    offline_metric: str = "bottom10"
    sampling: SamplingParams = DEFAULT_SAMPLING
    concurrency: int = 1
    instruction: str = DEFAULT_INSTRUCTION
    system_prompt: str | None = None
    keep_top_logprobs: bool = False

    def __post_init__(self) -> None:
        own = "DeepConfConfig"
        if self.mode not in ("offline", "online"):
            raise ConfigError(f"{own}.mode={self.mode!r}: choose 'offline' or 'online'")
        variant_keep(self.variant)
        for name in ("budget", "warmup", "window", "tail", "concurrency"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ConfigError(f"{own}.{name}={v!r}: must be an integer >= 1")
        if self.mode == "online" and self.warmup > self.budget:
            raise ConfigError(f"{own}.warmup={self.warmup} exceeds budget={self.budget}: the warm-up traces are "
                              "part of the budget; lower warmup or raise budget")
        if self.tau is not None and not 0 < self.tau <= 1:
            raise ConfigError(f"{own}.tau={self.tau!r}: must be in (0, 1], or None to turn the consensus stop off")
        if self.offline_metric not in METRICS:
            raise ConfigError(f"{own}.offline_metric={self.offline_metric!r}: choose one of {METRICS}")
        if not isinstance(self.sampling, SamplingParams):
            raise ConfigError(f"{own}.sampling={self.sampling!r}: pass a SamplingParams (or a mapping of its fields "
                              "through build_config, e.g. --set sampling.temperature=0.6)")
        if not 1 <= (self.sampling.logprobs or 0) <= MAX_TOP_LOGPROBS:
            raise ConfigError(f"{own}.sampling.logprobs={self.sampling.logprobs!r}: must be in 1..{MAX_TOP_LOGPROBS} "
                              "(the top alternatives each token's confidence is computed from; the paper uses 20)")
        if self.sampling.n != 1:
            raise ConfigError(f"{own}.sampling.n={self.sampling.n}: each trace is one sample; set the number of "
                              "traces with budget")

    def sampling_params(self, index: int) -> SamplingParams:
        """Trace `index`'s sampling: `sampling` with the seed offset by `index` (None stays None)."""
        seed = self.sampling.seed
        return self.sampling if seed is None else self.sampling.replace(seed=seed + index)

    def to_dict(self) -> dict[str, Any]:
        return config_to_dict(self)


@dataclass
class _Trace:
    """One sampled trace while a run decides its fate (internal; the result is its Trajectory)."""

    index: int
    phase: str  # "offline" | "warmup" | "final"
    trajectory: Trajectory
    tokens: int = 0
    answer: str | None = None  # as extracted
    key: Any = None  # the normalised form that votes
    confidences: dict[str, float] = field(default_factory=dict)
    finish_reason: str = "stop"  # the backend's: stop | length | abort
    stop_reason: str | None = None  # the stop string that matched
    stopped_early: bool = False  # cancelled because its group confidence fell below the threshold
    cancelled: bool = False  # cancelled because consensus was reached while it ran
    votes: bool = False

    @property
    def completed(self) -> bool:
        return not (self.stopped_early or self.cancelled)

    def close(self) -> Trajectory:
        """The trace as the final record: finish reason in the one vocabulary, its fate in metadata."""
        traj = self.trajectory
        traj.finish(trajectory_finish(self.finish_reason))  # stopped early or cancelled: abort
        traj.metadata["deepconf"] = {
            "index": self.index, "phase": self.phase, "tokens": self.tokens, "answer": self.answer, "key": self.key,
            "confidences": self.confidences, "stopped_early": self.stopped_early, "cancelled": self.cancelled,
            "votes": self.votes, "stop_reason": self.stop_reason}
        return traj


def _report(cfg: DeepConfConfig, traces: Sequence[_Trace], answer: str | None, votes: dict[str, str | None],
            weights: dict[str, dict[Any, float]], threshold: float | None, consensus: float | None,
            stop_reason: str, tokens_full_est: int) -> dict[str, Any]:
    """The voting report (`Rollout.metadata["deepconf"]`; `wall_s` is added by `run`)."""
    tokens = sum(t.tokens for t in traces)
    return {"mode": cfg.mode, "variant": cfg.variant, "answer": answer, "votes": votes,
            "weights": {k: {str(a): w for a, w in v.items()} for k, v in weights.items()},
            "threshold": threshold, "consensus": consensus, "stop_reason": stop_reason, "tokens_generated": tokens,
            "tokens_full_est": tokens_full_est, "tokens_saved_est": max(0, tokens_full_est - tokens),
            "traces_total": len(traces), "traces_stopped_early": sum(t.stopped_early for t in traces),
            "traces_cancelled": sum(t.cancelled for t in traces), "traces_voting": sum(t.votes for t in traces)}


def _question(example: Mapping[str, Any]) -> str:
    for k in ("question", "problem", "prompt"):
        if isinstance(example.get(k), str):
            return example[k]
    raise ConfigError(f"DeepConf.run: example has no 'question'/'problem' text (keys: {sorted(example)}); "
                      "pass a dict with 'question'")


class DeepConf:
    """DeepConf offline / online over any backend that streams top-k logprobs (see the module docstring)."""

    name = "deepconf"

    def __init__(self, llm: LLM, config: DeepConfConfig | None = None, *,
                 extract_answer: Callable[[str], str | None] = extract_boxed,
                 answer_key: Callable[[str | None], Any] = normalize_math_answer, **options: Any):
        self.config = build_config(DeepConfConfig, base=config, overrides=options, source="keyword arguments")
        self.llm = llm
        self.extract_answer = extract_answer
        self.answer_key = answer_key

    # -- prompt ----------------------------------------------------------------------------------
    def prompt_for(self, question: str) -> tuple[Any, Segment]:
        """(what is sent to the backend, the prompt segment): the chat-rendered prompt's token ids
        (`encode_prompt`), its text when the backend has no tokenizer, or the messages when no chat
        template is known (the backend sends them itself; the segment then has no ids)."""
        cfg = self.config
        msgs = [Message("system", cfg.system_prompt)] if cfg.system_prompt else []
        msgs.append(Message("user", f"{question}\n{cfg.instruction}".strip()))
        meta = {"messages": [m.to_dict() for m in msgs]}
        try:
            text = self.llm.render(msgs)
        except AgenticError:  # no chat template known here: the backend sends messages itself
            return msgs, Segment("prompt", "\n".join(m.content for m in msgs), metadata=meta)
        ids = encode_prompt(self.llm, text)
        return (text if ids is None else ids), Segment("prompt", text, token_ids=ids, metadata=meta)

    # -- one trace -------------------------------------------------------------------------------
    async def _trace(self, rec: _Trace, prompt: Any, threshold: float | None) -> _Trace:
        cfg = self.config
        tracker = GroupTracker(cfg.window) if threshold is not None else None
        text: list[str] = []
        toks: list[TokenLogprob] = []
        confs: list[float] = []
        t0 = time.monotonic()
        try:
            async with contextlib.aclosing(self.llm.stream(prompt, cfg.sampling_params(rec.index))) as stream:
                async for d in stream:
                    text.append(d.text)
                    if d.token is not None:
                        if not d.token.top:
                            raise ConfigError(f"backend {self.llm.name!r} streamed a token without top-k logprobs; "
                                              "DeepConf needs a backend that returns logprobs=k alternatives")
                        c = token_confidence(d.token.top, cfg.sampling.logprobs)
                        toks.append(d.token)
                        confs.append(c)
                        rec.tokens = len(confs)
                        if tracker is not None:
                            g = tracker.push(c)
                            if g is not None and g < threshold:
                                rec.stopped_early, rec.finish_reason = True, "abort"
                                break  # leaving the `async with` closes the stream: generation stops
                    if d.finish_reason is not None:
                        rec.finish_reason, rec.stop_reason = d.finish_reason, d.stop_reason
        except asyncio.CancelledError:
            rec.cancelled, rec.finish_reason = True, "abort"
            raise
        finally:
            self._finish(rec, "".join(text), toks, confs, time.monotonic() - t0)
        return rec

    def _finish(self, rec: _Trace, text: str, toks: list[TokenLogprob], confs: list[float], wall_s: float) -> None:
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
        traj.token_exact = traj.segments[0].token_ids is not None and (ids_ok or not toks)
        traj.answer = rec.answer
        traj.usage = Usage(completion_tokens=rec.tokens, llm_calls=1, wall_s=wall_s)

    def _new_trace(self, index: int, phase: str, prompt: Segment, example: dict[str, Any]) -> _Trace:
        traj = Trajectory(engine=self.name, config=self.config.to_dict(), example=example)
        traj.segments.append(Segment.from_dict(prompt.to_dict()))  # each trace owns its copy
        return _Trace(index=index, phase=phase, trajectory=traj)

    async def _batch(self, records: Sequence[_Trace], prompt: Any) -> None:
        # on a failure, the traces still running are stopped instead of orphaned
        await gather_bounded(lambda rec: self._trace(rec, prompt, None), records, self.config.concurrency)

    # -- modes -----------------------------------------------------------------------------------
    async def run(self, example: Mapping[str, Any]) -> Rollout:
        """DeepConf on one example (a mapping with a 'question', or 'problem' / 'prompt'): a Rollout whose
        trajectories are the traces and whose `metadata["deepconf"]` is the voting report."""
        question, ex = _question(example), dict(example)
        prompt, segment = self.prompt_for(question)
        t0 = time.monotonic()
        run = self._offline if self.config.mode == "offline" else self._online
        traces, report = await run(prompt, segment, ex)
        report["wall_s"] = time.monotonic() - t0
        n_prompt = count_prompt_tokens(self.llm, prompt)  # every trace sends the same prompt
        trajectories = [t.close() for t in traces]
        for traj in trajectories:
            traj.usage.prompt_tokens = n_prompt
        usage = Usage(prompt_tokens=n_prompt * len(traces), completion_tokens=report["tokens_generated"],
                      llm_calls=len(traces), wall_s=report["wall_s"])
        return Rollout(example_id=example_id(example), trajectories=trajectories, answer=report["answer"], usage=usage,
                       engine=self.name, example=ex, chosen=None, metadata={"deepconf": report})

    def _raw_answer(self, traces: Sequence[_Trace], key: Any) -> str | None:
        return next((t.answer for t in traces if key is not None and t.key == key), None)

    async def _offline(self, prompt: Any, segment: Segment, ex: dict[str, Any]) -> tuple[list[_Trace], dict[str, Any]]:
        cfg = self.config
        traces = [self._new_trace(i, "offline", segment, ex) for i in range(cfg.budget)]
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
        return traces, _report(cfg, traces, votes[main], votes, weights, None,
                               leading_share(chosen)[1] if chosen else None, "complete", tokens)

    async def _online(self, prompt: Any, segment: Segment, ex: dict[str, Any]) -> tuple[list[_Trace], dict[str, Any]]:
        cfg = self.config
        traces = [self._new_trace(i, "warmup", segment, ex) for i in range(cfg.warmup)]
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
                    rec = self._new_trace(next_index, "final", segment, ex)
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
        finished = [t.tokens for t in traces if t.completed]
        mean_len = sum(finished) / len(finished) if finished else float(cfg.sampling.max_tokens)
        full = sum(t.tokens if t.completed else max(t.tokens, mean_len) for t in traces)
        full += (cfg.budget - len(traces)) * mean_len
        answer = self._raw_answer(traces, lead)
        early = share >= tau and (len(traces) < cfg.budget or any(t.cancelled for t in traces))
        return traces, _report(cfg, traces, answer, {"online": answer}, {"online": weights}, threshold, share,
                               "consensus" if early else "budget", int(round(full)))


__all__ = ["DEFAULT_INSTRUCTION", "DEFAULT_SAMPLING", "DeepConf", "DeepConfConfig"]
