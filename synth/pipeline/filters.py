"""Filters as plain functions: each returns `True` (keep) or `(False, reason)`; the pipeline's `filter` step
wraps them (`synth.pipeline.filter_step.FilterStep`), counts every reason and writes the dropped records with it.

    from synth.pipeline.filters import correct, accuracy_band
    correct(traj, metric="em")                  # True, or (False, "incorrect:em") / (False, "unjudged:em")
    accuracy_band(group, metric="em")           # one result per trajectory of the group

Scopes (`FILTERS[name].scope`): `trajectory` (`fn(traj, **opts)`), `group` (`fn(trajs, **opts) -> list`, the
k samples of one example), `dataset` (`fn(groups, **opts) -> list`, one result per group, over everything
one datatrove task sees), `text` (a class: `fn(**opts)` makes a stateful `__call__(text)`, e.g. dedup).

| name | scope | drops | reason |
|---|---|---|---|
| `correct` | trajectory | verdict below `threshold` (or missing) under `metric` | `incorrect:<metric>`, `unjudged:<metric>` |
| `format` | trajectory | no answer in the dialect's format, or an unclosed action tag | `bad_format:no_answer`, `bad_format:unclosed:<tag>` |
| `length` | trajectory | generated tokens outside [`min_tokens`, `max_tokens`] | `too_short`, `too_long` |
| `tool_calls` | trajectory | tool calls outside [`min_calls`, `max_calls`] | `too_few_tool_calls`, `too_many_tool_calls` |
| `finished` | trajectory | `finish_reason` not in `allowed` | `unfinished:<reason>` |
| `confidence` | group | DeepConf: traces below the (1-eta) percentile of the group's confidences | `low_confidence`, `no_logprobs` |
| `accuracy_band` | group | groups with accuracy > `high` or < `low` (Agent-RL-Scaling / ZeroTIR replay filter) | `accuracy_above_band`, `accuracy_below_band` |
| `all_equal` | group | groups whose rewards are all equal (DAPO dynamic sampling) | `all_equal_rewards` |
| `reward_variance` | dataset | groups outside the top-`p` by within-group reward variance (RAGEN-2) | `low_reward_variance` |
| `exact_dedup` | text | a record whose normalised text was seen before | `exact_duplicate` |
| `minhash_dedup` | text | Jaccard similarity >= `threshold` with an earlier record (datasketch MinHash LSH) | `near_duplicate` |
| `decontaminate` | text | any word `n`-gram shared with a question of the `eval_files` | `contaminated` |

Dedup and `reward_variance` see one datatrove task's records (all of them with `tasks: 1`); dedup across
tasks on a cluster is datatrove's own multi-stage MinHash pipeline. Not covered: LLM-judged quality filters.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory

Result = bool | tuple[bool, str]
KEEP = True


def _reward(traj: Trajectory, metric: str) -> float | None:
    v = traj.rewards.get(metric)
    return None if v is None else float(v)


# ----------------------------------------------------------------------------------- trajectory


def correct(traj: Trajectory, *, metric: str = "em", threshold: float = 1.0) -> Result:
    """Keep a trajectory whose verdict `rewards[metric]` reaches `threshold` (a `judge` step writes it)."""
    v = _reward(traj, metric)
    if v is None:
        return False, f"unjudged:{metric}"
    return KEEP if v >= threshold else (False, f"incorrect:{metric}")


def format_valid(traj: Trajectory, *, dialect: str | None = None) -> Result:
    """Keep a trajectory whose answer is in its dialect's format and whose action tags are all closed.

    The dialect is `dialect`, else the one in the trajectory's engine config (`config["dialect"]`); without
    one (direct/CoT engines), the answer the engine extracted must exist."""
    from agentic_infer.engines.dialects import extract_answer, get_dialect

    name = dialect or traj.config.get("dialect")
    text = "".join(s.text for s in traj.segments if s.kind == "model")
    if not name:
        return KEEP if traj.answer not in (None, "") else (False, "bad_format:no_answer")
    d = get_dialect(name)
    for tag in d.actions:
        if text.count(tag.begin) > text.count(tag.end.strip() or tag.end):
            return False, f"bad_format:unclosed:{tag.begin}"
    return KEEP if extract_answer(d, text) not in (None, "") else (False, "bad_format:no_answer")


def generated_tokens(traj: Trajectory) -> int:
    """Tokens the policy generated: the model segments' ids (or logprobs), else the usage count."""
    n = sum(len(s.token_ids if s.token_ids is not None else (s.logprobs or ())) for s in traj.segments
            if s.kind == "model")
    return n or traj.usage.completion_tokens


def length(traj: Trajectory, *, min_tokens: int = 0, max_tokens: int | None = None) -> Result:
    """Keep a trajectory whose generated tokens lie in [`min_tokens`, `max_tokens`]."""
    n = generated_tokens(traj)
    if n < min_tokens:
        return False, "too_short"
    if max_tokens is not None and n > max_tokens:
        return False, "too_long"
    return KEEP


def tool_calls(traj: Trajectory, *, min_calls: int = 0, max_calls: int | None = None) -> Result:
    """Keep a trajectory whose tool calls (`usage.tool_calls`) lie in [`min_calls`, `max_calls`]."""
    n = traj.usage.tool_calls
    if n < min_calls:
        return False, "too_few_tool_calls"
    if max_calls is not None and n > max_calls:
        return False, "too_many_tool_calls"
    return KEEP


def finished(traj: Trajectory, *, allowed: Sequence[str] = ("answer",)) -> Result:
    """Keep a trajectory that ended one of the `allowed` ways (default: the model answered by itself)."""
    return KEEP if traj.finish_reason in allowed else (False, f"unfinished:{traj.finish_reason}")


# ----------------------------------------------------------------------------------- group


def trace_confidence(traj: Trajectory, *, metric: str = "bottom10", window: int = 2048, k: int = 20) -> float | None:
    """DeepConf's trace confidence of the model tokens (None without top-k logprobs)."""
    from agentic_infer.engines.deepconf.confidence import token_confidences
    from agentic_infer.engines.deepconf.confidence import trace_confidence as _trace

    lps = [lp for s in traj.segments if s.kind == "model" for lp in (s.logprobs or ())]
    if not lps or any(not lp.top for lp in lps):
        return None
    return float(_trace(token_confidences(lps, k=k), metric=metric, window=window))


def confidence(trajs: Sequence[Trajectory], *, eta: float = 0.1, metric: str = "bottom10",
               window: int = 2048) -> list[Result]:
    """DeepConf filtering within a group: keep traces with confidence >= the (1-eta) percentile (numpy's
    default interpolation) of the group's; eta=0.1 is DeepConf-low, 0.9 DeepConf-high."""
    import numpy as np

    if not 0 < eta <= 1:
        raise ConfigError(f"filter confidence: eta={eta!r} must be in (0, 1] (0.1 = DeepConf-low, 0.9 = -high)")
    confs = [trace_confidence(t, metric=metric, window=window) for t in trajs]
    known = [c for c in confs if c is not None]
    cut = float(np.percentile(known, 100 * (1 - eta))) if known else 0.0
    return [(False, "no_logprobs") if c is None else (KEEP if c >= cut else (False, "low_confidence"))
            for c in confs]


def _group_rewards(trajs: Sequence[Trajectory], metric: str) -> list[float]:
    return [_reward(t, metric) or 0.0 for t in trajs]


def accuracy_band(trajs: Sequence[Trajectory], *, metric: str = "em", low: float = 0.2, high: float = 0.8,
                  threshold: float = 1.0) -> list[Result]:
    """Drop the whole group when its accuracy (share of `rewards[metric] >= threshold`) is > `high` or < `low`."""
    if not trajs:
        return []
    acc = sum(r >= threshold for r in _group_rewards(trajs, metric)) / len(trajs)
    res: Result = (False, "accuracy_above_band") if acc > high else (
        (False, "accuracy_below_band") if acc < low else KEEP)
    return [res] * len(trajs)


def all_equal(trajs: Sequence[Trajectory], *, metric: str = "em") -> list[Result]:
    """DAPO: drop a group whose rewards are all equal (no learning signal for a group-relative advantage)."""
    rs = _group_rewards(trajs, metric)
    res: Result = (False, "all_equal_rewards") if len(set(rs)) <= 1 else KEEP
    return [res] * len(trajs)


# ----------------------------------------------------------------------------------- dataset


def reward_variance(groups: Sequence[Sequence[Trajectory]], *, metric: str = "em", p: float = 0.5) -> list[Result]:
    """RAGEN-2: rank groups by within-group reward variance and keep the top `p` share (ties kept together)."""
    import numpy as np

    if not 0 < p <= 1:
        raise ConfigError(f"filter reward_variance: p={p!r} must be in (0, 1]")
    var = [float(np.var(_group_rewards(g, metric))) if g else 0.0 for g in groups]
    if not var:
        return []
    n_keep = max(1, int(round(p * len(var))))
    cut = sorted(var, reverse=True)[n_keep - 1]
    return [KEEP if v >= cut and v > 0 else (False, "low_reward_variance") for v in var]


# ----------------------------------------------------------------------------------- text

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class ExactDedup:
    """Drop a text whose normalised form (lower-cased words) was seen before."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, text: str) -> Result:
        h = hashlib.sha1(" ".join(words(text)).encode()).hexdigest()
        if h in self.seen:
            return False, "exact_duplicate"
        self.seen.add(h)
        return KEEP


class MinHashDedup:
    """Drop a text with estimated Jaccard similarity >= `threshold` (word `shingle`-grams) to an earlier one."""

    def __init__(self, *, threshold: float = 0.8, num_perm: int = 128, shingle: int = 3):
        from datasketch import MinHash, MinHashLSH

        if not 0 < threshold <= 1:
            raise ConfigError(f"filter minhash_dedup: threshold={threshold!r} must be in (0, 1]")
        self._mh, self.num_perm, self.shingle = MinHash, num_perm, shingle
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self.n = 0

    def __call__(self, text: str) -> Result:
        w = words(text)
        grams = {" ".join(w[i:i + self.shingle]) for i in range(max(1, len(w) - self.shingle + 1))}
        m = self._mh(num_perm=self.num_perm)
        for g in grams:
            m.update(g.encode())
        if self.lsh.query(m):
            return False, "near_duplicate"
        self.lsh.insert(str(self.n), m)
        self.n += 1
        return KEEP


def eval_questions(spec: str) -> list[str]:
    """The questions of an eval file: `TASK:PATH` (read by that task's loader) or a JSONL/JSON `PATH` whose
    records hold `question` or `problem`."""
    task, sep, path = spec.partition(":")
    if sep and not Path(spec).exists():
        from agentic_infer.tasks import get_task

        return [str(ex["question"]) for ex in get_task(task).load(path)]
    from agentic_infer.tasks.base import read_rows

    p = Path(spec)
    if not p.exists():
        raise ConfigError(f"filter decontaminate: eval file {spec!r} does not exist; give PATH or TASK:PATH "
                          "(e.g. hotpotqa:../shared/data/multihop/hotpotqa_dev_distractor_150.jsonl)")
    out = []
    for _, rec in read_rows(p, "JSONL/JSON records with a 'question' or 'problem' field"):
        q = rec.get("question", rec.get("problem")) if isinstance(rec, dict) else None
        if q is None:
            raise ConfigError(f"filter decontaminate: {p}: a record without 'question' or 'problem'; give "
                              "TASK:PATH so the task's loader reads it")
        out.append(str(q))
    return out


class Decontaminate:
    """Drop a text sharing any word `n`-gram with a question of `eval_files` (a question shorter than `n`
    words counts as one n-gram: the whole question)."""

    def __init__(self, *, eval_files: Sequence[str] = (), n: int = 8):
        if not eval_files:
            raise ConfigError("filter decontaminate: eval_files is empty; give the eval files to check against, "
                              "e.g. eval_files=[hotpotqa:PATH]")
        self.n = n
        self.grams: set[str] = set()
        for spec in eval_files:
            for q in eval_questions(spec):
                self.grams.update(self._grams(q))

    def _grams(self, text: str) -> set[str]:
        w = words(text)
        if len(w) < self.n:
            return {" ".join(w)} if w else set()
        return {" ".join(w[i:i + self.n]) for i in range(len(w) - self.n + 1)}

    def __call__(self, text: str) -> Result:
        w = words(text)
        if any(" ".join(w[i:i + self.n]) in self.grams for i in range(max(1, len(w) - self.n + 1))):
            return False, "contaminated"
        if len(w) < self.n and " ".join(w) in self.grams:
            return False, "contaminated"
        return KEEP


@dataclass(frozen=True)
class FilterSpec:
    name: str
    scope: str  # trajectory | group | dataset | text
    fn: Callable[..., Any]
    text: str = "question"  # text filters: which text they read ("question" or "record": question + completion)


FILTERS: dict[str, FilterSpec] = {s.name: s for s in (
    FilterSpec("correct", "trajectory", correct),
    FilterSpec("format", "trajectory", format_valid),
    FilterSpec("length", "trajectory", length),
    FilterSpec("tool_calls", "trajectory", tool_calls),
    FilterSpec("finished", "trajectory", finished),
    FilterSpec("confidence", "group", confidence),
    FilterSpec("accuracy_band", "group", accuracy_band),
    FilterSpec("all_equal", "group", all_equal),
    FilterSpec("reward_variance", "dataset", reward_variance),
    FilterSpec("exact_dedup", "text", ExactDedup, text="record"),
    FilterSpec("minhash_dedup", "text", MinHashDedup, text="record"),
    FilterSpec("decontaminate", "text", Decontaminate, text="question"),
)}


def get_filter(name: str) -> FilterSpec:
    if name not in FILTERS:
        raise ConfigError(f"unknown filter {name!r}; choose one of {', '.join(FILTERS)}")
    return FILTERS[name]


__all__ = ["FILTERS", "Decontaminate", "ExactDedup", "FilterSpec", "MinHashDedup", "accuracy_band", "all_equal",
           "confidence", "correct", "eval_questions", "finished", "format_valid", "generated_tokens", "get_filter",
           "length", "reward_variance", "tool_calls", "trace_confidence"]
