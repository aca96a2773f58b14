"""The simulated continuous-batching LLM server's engine: cost model, scheduler, accounting, script.

Used by `bench/sim_server.py` (which puts vLLM's HTTP API in front of it) and by
`bench/sim_server_check.py` (which asserts the accounting); see sim_server.py for how to run it.

The model (real time):
- A scheduler loop runs *steps*. Before a step, waiting requests are admitted FIFO while fewer than
  `max_batch` sequences run (the rest queue). A step lasts
  `decode_ms * (1 + alpha * (batch - 1)) + prefill_ms_per_token * (new prompt tokens admitted)` and
  gives every running sequence one token (an admitted request gets its first token in the step that
  prefills it, as in vLLM). Steps are slept against absolute deadlines: a loop that falls behind
  (CPU contention) catches up with shorter sleeps, so the simulated costs hold on average.
- Tokens are counted as `ceil(len(text) / chars_per_token)` (output) and `len // chars_per_token`
  (prompt). With `prefix_cache`, a prompt that extends an earlier request's prompt + output only
  pays prefill for the new part (exact-prefix match against the last `cache_entries` texts).
- Output is scripted deterministically from the prompt by `ScriptedPolicy`: for a question written
  by `sim_question(i, hops)`, a Search-o1 agent that writes a search query while the assistant part
  of the prompt holds fewer than `hops` `<|begin_search_result|>` tags, else `\\boxed{E<i>_<hops>}`;
  turn lengths are lognormal per (question, turn), so a few turns are long (stragglers).
  Reason-in-Documents prompts (they hold `**Current Search Query:**`) get a scripted
  `**Final Information**` answer; any other prompt gets a short fixed reply.

Accounting (`SimEngine.stats()`, since the last reset):
- `busy_s`: wall time during which at least one sequence ran (the steps as actually slept), and
  `planned_busy_s` (the same in simulated cost; `sim_lag_s` is the difference); `busy_slot_s`: sum
  over steps of batch size x step wall time; `mean_batch = busy_slot_s / busy_s`; `span_s`: first
  arrival to last completion; `utilisation = busy_slot_s / (max_batch * span_s)`.
- `ideal_makespan_s = max(work_bound_s, critical_path_s)`, a lower bound on any schedule's
  makespan for the work the run actually sent (client time such as retrieval counts as zero):
  `work_bound_s` = every decode token generated at full batch (the cheapest per-token cost,
  `step_ms(max_batch) / max_batch`) plus all prefill work (prefill lengthens a step for everyone,
  so it is serial); `critical_path_s` = the longest trajectory (requests grouped by question id,
  Reason-in-Documents calls included) run alone at batch 1.

Not covered: n > 1, token-id prompts, preemption / KV-cache limits, chunked prefill, sampling (the
output is a function of the prompt).
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import time
from collections import OrderedDict, defaultdict, deque
from dataclasses import asdict, dataclass, field
from typing import Any

QUERY_BEGIN, QUERY_END = "<|begin_search_query|>", "<|end_search_query|>"
RESULT_BEGIN = "<|begin_search_result|>"
RID_MARKER = "**Current Search Query:**"
_QUESTION = re.compile(r"Question: Q(\d+) \[sim hops=(\d+)\]")
_RID_QUERY = re.compile(re.escape(RID_MARKER) + r"\s*Q(\d+) hop (\d+)")
_WORDS = ("the chain continues through another entity so I should check which fact links the previous "
          "result to the next hop before answering").split()


def sim_question(i: int, hops: int) -> str:
    """The text of simulated multi-hop question `i` whose scripted trajectory needs `hops` searches."""
    return f"Q{i:03d} [sim hops={hops}] Which entity ends chain {i}?"


def sim_answer(i: int, hops: int) -> str:
    return f"E{i:03d}_{hops}"


def sim_query(i: int, hop: int) -> str:
    return f"Q{i:03d} hop {hop} bridge entity"


@dataclass(frozen=True)
class SimConfig:
    """Cost model and script of the simulated server (times in milliseconds)."""

    max_batch: int = 16
    decode_ms: float = 2.0  # one decode step at batch 1
    alpha: float = 0.03  # step time grows by alpha * decode_ms per extra running sequence
    prefill_ms_per_token: float = 0.01
    chars_per_token: int = 4
    prefix_cache: bool = True
    cache_entries: int = 4096
    max_model_len: int = 32768
    model: str = "sim"
    seed: int = 0
    turn_tokens_median: int = 64  # main-model turn length: lognormal around this median ...
    turn_tokens_sigma: float = 0.8
    turn_tokens_min: int = 16
    turn_tokens_max: int = 400  # ... clipped to [min, max]: a few long turns are the stragglers
    rid_tokens_min: int = 24  # Reason-in-Documents answers: uniform in [min, max]
    rid_tokens_max: int = 64
    max_lag_ms: float = 500.0  # behind its deadlines by less than this, the loop catches up (shorter sleeps)

    def __post_init__(self) -> None:
        for name in ("max_batch", "chars_per_token", "cache_entries", "max_model_len", "turn_tokens_median",
                     "turn_tokens_min", "turn_tokens_max", "rid_tokens_min", "rid_tokens_max"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"SimConfig.{name}={getattr(self, name)!r}: must be >= 1")
        for name in ("decode_ms", "alpha", "prefill_ms_per_token", "turn_tokens_sigma", "max_lag_ms"):
            if float(getattr(self, name)) < 0:
                raise ValueError(f"SimConfig.{name}={getattr(self, name)!r}: must be >= 0")
        if self.turn_tokens_min > self.turn_tokens_max or self.rid_tokens_min > self.rid_tokens_max:
            raise ValueError("SimConfig: *_tokens_min must not exceed *_tokens_max")

    def step_ms(self, batch: int) -> float:
        return self.decode_ms * (1.0 + self.alpha * (batch - 1))


class ScriptedPolicy:
    """Deterministic output for a prompt: (text, trajectory key, kind)."""

    def __init__(self, cfg: SimConfig):
        self.cfg = cfg

    def _fill(self, n_chars: int, rng: random.Random) -> str:
        words: list[str] = []
        size = 0
        while size < n_chars:
            w = rng.choice(_WORDS)
            words.append(w)
            size += len(w) + 1
        return " ".join(words)[:max(0, n_chars)]

    def turn_tokens(self, qid: int, turn: int) -> int:
        c = self.cfg
        rng = random.Random(f"{c.seed}:turn:{qid}:{turn}")
        x = rng.lognormvariate(math.log(c.turn_tokens_median), c.turn_tokens_sigma)
        return int(min(c.turn_tokens_max, max(c.turn_tokens_min, x)))

    def respond(self, prompt: str) -> tuple[str, str, str]:
        cpt = self.cfg.chars_per_token
        m = _RID_QUERY.search(prompt) if RID_MARKER in prompt else None
        if m is not None:
            qid, hop = int(m.group(1)), int(m.group(2))
            rng = random.Random(f"{self.cfg.seed}:rid:{qid}:{hop}")
            n = rng.randint(self.cfg.rid_tokens_min, self.cfg.rid_tokens_max)
            head = f"**Final Information**\n\nQ{qid:03d} hop {hop}: the bridge entity is E{qid:03d}_{hop}. "
            return head + self._fill(n * cpt - len(head), rng), f"q{qid}", "rid"
        found = list(_QUESTION.finditer(prompt))
        if not found:
            return "I cannot tell from this prompt. \\boxed{unknown}", "other", "other"
        last = found[-1]
        qid, hops = int(last.group(1)), int(last.group(2))
        turn = prompt[last.end():].count(RESULT_BEGIN)  # results (or limit messages) seen so far
        rng = random.Random(f"{self.cfg.seed}:text:{qid}:{turn}")
        if turn < hops:
            tail = f"\n{QUERY_BEGIN}{sim_query(qid, turn + 1)}{QUERY_END}"
        else:
            tail = f"\nSo the answer is \\boxed{{{sim_answer(qid, hops)}}}."
        head = f"I need fact {turn + 1} of chain {qid}: "
        body = self._fill(self.turn_tokens(qid, turn) * cpt - len(head) - len(tail), rng)
        return head + body + tail, f"q{qid}", "main"


@dataclass
class SimRequest:
    id: int
    prompt: str
    text: str  # what the response returns (stop string removed unless asked for)
    steps: int  # decode tokens (the generated text, stop string included)
    chunks: list[str]
    finish_reason: str
    stop_reason: str | None
    prompt_tokens: int
    new_tokens: int  # prompt tokens not in the prefix cache
    key: str
    kind: str
    stream: asyncio.Queue | None
    done: asyncio.Future
    arrival: float = field(default_factory=time.perf_counter)
    admitted: float | None = None
    produced: int = 0
    cancelled: bool = False


class SimEngine:
    """The scheduler and its accounting; `create_app` puts HTTP in front of it."""

    def __init__(self, cfg: SimConfig):
        self.cfg = cfg
        self.policy = ScriptedPolicy(cfg)
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.wake = asyncio.Event()
        self._ids = 0
        self.reset()

    def reset(self) -> None:
        if self.waiting or self.running:
            raise RuntimeError("reset with requests in flight")
        self.cache: OrderedDict[str, None] = OrderedDict()
        self.s: dict[str, Any] = dict(requests=0, by_kind=defaultdict(int), steps=0, decode_tokens=0,
                                      prompt_tokens=0, prefill_tokens=0, busy_s=0.0, planned_busy_s=0.0,
                                      busy_slot_s=0.0, max_batch_seen=0, queue_s=[], cancelled=0,
                                      lag_resets=0, first_arrival=None, last_finish=None)
        self.chain_s: dict[str, float] = defaultdict(float)

    # -- requests -------------------------------------------------------------------------------------
    def _cached_prefix(self, prompt: str) -> int:
        best = ""
        for text in self.cache:
            if len(text) > len(best) and prompt.startswith(text):
                best = text
        if best:
            self.cache.move_to_end(best)
        return len(best)

    def submit(self, prompt: str, *, max_tokens: int, stop: list[str], include_stop: bool,
               stream: bool) -> SimRequest:
        cpt = self.cfg.chars_per_token
        full, key, kind = self.policy.respond(prompt)
        gen, ret, finish, stop_reason = full, full, "stop", None
        hits = [(full.find(s), s) for s in stop if s and s in full]
        if hits:
            idx, s = min(hits)
            gen, stop_reason = full[:idx + len(s)], s
            ret = gen if include_stop else full[:idx]
        steps = max(1, math.ceil(len(gen) / cpt))
        if steps > max_tokens:
            steps, finish, stop_reason = max_tokens, "length", None
            ret = gen = gen[:max_tokens * cpt]
        prompt_tokens = len(prompt) // cpt
        if prompt_tokens + max_tokens > self.cfg.max_model_len:
            raise ValueError(f"This model's maximum context length is {self.cfg.max_model_len} tokens; the "
                             f"request asks for {prompt_tokens} prompt + {max_tokens} completion tokens")
        cached = self._cached_prefix(prompt) // cpt if self.cfg.prefix_cache else 0
        loop = asyncio.get_running_loop()
        self._ids += 1
        r = SimRequest(self._ids, prompt, ret, steps, [ret[i:i + cpt] for i in range(0, len(ret), cpt)] or [""],
                       finish, stop_reason, prompt_tokens, max(1, prompt_tokens - cached), key, kind,
                       asyncio.Queue() if stream else None, loop.create_future())
        self.s["requests"] += 1
        self.s["by_kind"][kind] += 1
        if self.s["first_arrival"] is None:
            self.s["first_arrival"] = r.arrival
        self.waiting.append(r)
        self.wake.set()
        return r

    def cancel(self, r: SimRequest) -> None:
        if not r.done.done():
            r.cancelled = True

    def _close(self, r: SimRequest, now: float) -> None:
        """Account a request that left the engine (finished or cancelled after admission)."""
        c, s = self.cfg, self.s
        s["decode_tokens"] += r.produced
        s["prompt_tokens"] += r.prompt_tokens
        s["prefill_tokens"] += r.new_tokens
        s["queue_s"].append(r.admitted - r.arrival)
        s["last_finish"] = now
        self.chain_s[r.key] += (r.new_tokens * c.prefill_ms_per_token + r.produced * c.step_ms(1)) / 1000
        if c.prefix_cache and not r.cancelled:
            self.cache[r.prompt + r.text] = None
            while len(self.cache) > c.cache_entries:
                self.cache.popitem(last=False)
        if r.stream is not None:
            r.stream.put_nowait(None)
        if not r.done.done():
            r.done.set_result(r)

    # -- the scheduler --------------------------------------------------------------------------------
    async def run(self) -> None:
        c, s = self.cfg, self.s
        deadline: float | None = None
        while True:
            if not self.running and not self.waiting:
                self.wake.clear()
                await self.wake.wait()
                deadline = None
            s = self.s  # reset() may have replaced it
            prefill = 0
            while self.waiting and len(self.running) < c.max_batch:
                r = self.waiting.popleft()
                if r.cancelled:
                    s["cancelled"] += 1
                    r.done.cancel()
                    continue
                r.admitted = time.perf_counter()
                prefill += r.new_tokens
                self.running.append(r)
            if not self.running:
                continue
            batch = len(self.running)
            planned = (c.step_ms(batch) + c.prefill_ms_per_token * prefill) / 1000
            start = time.perf_counter()
            if deadline is None or start - deadline > c.max_lag_ms / 1000:
                s["lag_resets"] += deadline is not None
                deadline = start
            deadline += planned
            await asyncio.sleep(max(0.0, deadline - time.perf_counter()))
            now = time.perf_counter()
            s["steps"] += 1
            s["busy_s"] += now - start
            s["planned_busy_s"] += planned
            s["busy_slot_s"] += batch * (now - start)
            s["max_batch_seen"] = max(s["max_batch_seen"], batch)
            still = []
            for r in self.running:
                if r.cancelled:
                    s["cancelled"] += 1
                    self._close(r, now)
                    continue
                if r.stream is not None and r.produced < len(r.chunks):
                    r.stream.put_nowait(r.chunks[r.produced])
                r.produced += 1
                if r.produced >= r.steps:
                    self._close(r, now)
                else:
                    still.append(r)
            self.running = still

    def stats(self) -> dict[str, Any]:
        c, s = self.cfg, self.s
        span = (s["last_finish"] - s["first_arrival"]) if s["last_finish"] and s["first_arrival"] else 0.0
        work = (s["decode_tokens"] * c.step_ms(c.max_batch) / c.max_batch
                + s["prefill_tokens"] * c.prefill_ms_per_token) / 1000
        crit_key = max(self.chain_s, key=self.chain_s.__getitem__, default=None)
        crit = self.chain_s.get(crit_key, 0.0) if crit_key else 0.0
        q = sorted(s["queue_s"])
        return {
            "config": asdict(c), "requests": s["requests"], "by_kind": dict(s["by_kind"]), "steps": s["steps"],
            "cancelled": s["cancelled"], "decode_tokens": s["decode_tokens"], "prompt_tokens": s["prompt_tokens"],
            "prefill_tokens": s["prefill_tokens"], "span_s": span, "busy_s": s["busy_s"],
            "planned_busy_s": s["planned_busy_s"], "sim_lag_s": s["busy_s"] - s["planned_busy_s"],
            "lag_resets": s["lag_resets"], "busy_slot_s": s["busy_slot_s"],
            "utilisation": s["busy_slot_s"] / (c.max_batch * span) if span else 0.0,
            "mean_batch": s["busy_slot_s"] / s["busy_s"] if s["busy_s"] else 0.0, "max_batch_seen": s["max_batch_seen"],
            "queue_wait_median_s": q[len(q) // 2] if q else 0.0, "queue_wait_max_s": q[-1] if q else 0.0,
            "work_bound_s": work, "critical_path_s": crit, "critical_path_key": crit_key,
            "ideal_makespan_s": max(work, crit),
        }
