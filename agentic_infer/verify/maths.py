r"""Math answers: equivalence via math-verify, a canonical form for voting, the last number of a text.

- `math_equal(prediction, gold)`: mathematical equivalence via `math-verify` (`verify(gold, pred)`,
  gold first). math-verify's own timeouts use `signal.alarm`, which fails off the main thread, so we
  disable them and run it in a worker process (`_math_verify_worker.py`) that is killed when
  `timeout_s` passes: safe from any thread. `timeout_s=None` runs it in process with no timeout.
- `normalize_math_answer(s)`: a light canonical form for grouping answers (voting), not a verdict.
- `last_number(text)`: the last number of a text (lm-eval-harness's flexible extraction).
Not covered: `\boxed{}` extraction (`verify.extract`), symbolic checks beyond what math-verify does.
"""

from __future__ import annotations

import atexit
import json
import logging
import math
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

from agentic_infer.errors import ConfigError
from agentic_infer.verify.normalize import Gold, gold_list

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?$")
_LAST_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")


def last_number(text: str | None) -> str | None:
    """The last number in a text (commas removed), e.g. 'The answer is 1,234.' -> '1234'."""
    found = _LAST_NUMBER.findall(text or "")
    return found[-1].replace(",", "").rstrip(".") if found else None


def _as_number(s: str) -> float | None:
    if not s or not _NUMBER.match(s) or s in "+-.":
        return None
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def normalize_math_answer(s: str | None) -> str | None:
    r"""A light canonical form of a math answer, used to group equal answers before voting.

    Strips whitespace, `$`, `\$`, `\!`, `\left`/`\right`, `\text{}` wrappers around units-free
    answers, a trailing period, `\dfrac`/`\tfrac`; writes plain numbers canonically (`1,000.50` ->
    `1000.5`, `72.0` -> `72`). It never decides equivalence (that is `math_equal`).
    """
    if s is None:
        return None
    t = s.strip().rstrip(".").strip()
    t = re.sub(r"^\\text\{(.*)\}$", r"\1", t)
    for a, b in (("\\$", ""), ("$", ""), ("\\!", ""), ("\\left", ""), ("\\right", ""), ("\\dfrac", "\\frac"),
                 ("\\tfrac", "\\frac"), ("\\,", "")):
        t = t.replace(a, b)
    t = "".join(t.split()).rstrip(".")
    num = _as_number(t)
    if num is not None and math.isfinite(num):
        if num == int(num) and abs(num) < 1e15:
            return str(int(num))
        return repr(num)
    return t


def _quick_equal(pred: str, gold: str) -> bool | None:
    """Decide cheaply when possible: same canonical text, or two plain numbers. None = undecided."""
    a, b = normalize_math_answer(pred), normalize_math_answer(gold)
    if a == b:
        return True
    x, y = _as_number(a or ""), _as_number(b or "")
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
    return None


_WORKER_SCRIPT = Path(__file__).with_name("_math_verify_worker.py")


class _Worker:
    """One math-verify process speaking JSON lines; a reader thread feeds a queue so reads can time out."""

    def __init__(self, startup_timeout_s: float):
        self.proc = subprocess.Popen([sys.executable, "-u", str(_WORKER_SCRIPT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, name="math-verify-reader", daemon=True).start()
        first = self.get(startup_timeout_s)
        if first is None or "fatal" in first or not first.get("ready"):
            self.kill()
            why = (first or {}).get("fatal", f"no answer within {startup_timeout_s:.0f} s")
            raise ConfigError(f"math_equal: the math-verify worker did not start ({why}); "
                              "install it with `pip install math-verify`")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.replies.put(json.loads(line))
            except json.JSONDecodeError:
                log.debug("math-verify worker wrote a non-JSON line: %r", line)
        self.replies.put(None)  # EOF: the worker is gone

    def get(self, timeout_s: float) -> dict | None:
        try:
            return self.replies.get(timeout=timeout_s)
        except queue.Empty:
            return None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()
        self.proc.wait()


class MathVerifier:
    """math-verify in up to `max_workers` worker processes, each call bounded by a timeout.

    A call that runs past its timeout kills its worker (a fresh one starts on demand) and counts as
    "not equal", as math-verify's own timeout does. Thread-safe; `close()` ends the workers.
    """

    def __init__(self, *, max_workers: int = 2, startup_timeout_s: float = 120.0):
        if max_workers < 1:
            raise ConfigError(f"MathVerifier.max_workers={max_workers!r}: must be >= 1")
        self.max_workers = max_workers
        self.startup_timeout_s = startup_timeout_s
        self._idle: list[_Worker] = []
        self._count = 0
        self._cond = threading.Condition()
        self.timeouts = 0

    def _acquire(self) -> _Worker:
        with self._cond:
            while not self._idle and self._count >= self.max_workers:
                self._cond.wait()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        try:
            return _Worker(self.startup_timeout_s)
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, w: _Worker) -> None:
        with self._cond:
            if w.alive:
                self._idle.append(w)
            else:
                self._count -= 1
            self._cond.notify()

    def equal(self, prediction: str, gold: str, *, timeout_s: float = 5.0) -> bool:
        """math-verify's `verify(parse(gold), parse(prediction))`, False on timeout or parse failure."""
        w = self._acquire()
        try:
            assert w.proc.stdin is not None
            w.proc.stdin.write(json.dumps({"gold": gold, "pred": prediction}) + "\n")
            w.proc.stdin.flush()
            reply = w.get(timeout_s)
            if reply is None:
                self.timeouts += 1
                log.warning("math_equal(%r, %r): math-verify ran past %.1f s or died; counted as not equal",
                            prediction[:80], gold[:80], timeout_s)
                w.kill()
                return False
            if "error" in reply:
                log.debug("math-verify failed on (%r, %r): %s", prediction[:80], gold[:80], reply["error"])
                return False
            return bool(reply["equal"])
        except (BrokenPipeError, OSError) as e:
            log.warning("math-verify worker failed (%s); a new one starts on the next call", e)
            w.kill()
            return False
        finally:
            self._release(w)

    def close(self) -> None:
        with self._cond:
            workers, self._idle = self._idle, []
            self._count -= len(workers)
        for w in workers:
            w.kill()


_default_verifier: MathVerifier | None = None
_default_lock = threading.Lock()


def _verifier() -> MathVerifier:
    global _default_verifier
    with _default_lock:
        if _default_verifier is None:
            _default_verifier = MathVerifier()
            atexit.register(_default_verifier.close)
        return _default_verifier


_filter_installed = False


def _in_process_equal(pred: str, gold: str) -> bool:
    try:
        from math_verify import parse, verify
    except ImportError as e:
        raise ConfigError("math_equal needs math-verify: pip install math-verify") from e
    from agentic_infer.verify._math_verify_worker import compare

    global _filter_installed
    if not _filter_installed:  # we disable its timeouts on purpose: its warning about that is noise
        for name in ("math_verify.parser", "math_verify.grader"):
            logging.getLogger(name).addFilter(lambda rec: not str(rec.msg).startswith("Timeout is disabled"))
        _filter_installed = True
    return compare(gold, pred, parse, verify)


def math_equal(prediction: str | None, gold: Gold, *, timeout_s: float | None = 5.0) -> bool:
    """Whether `prediction` is mathematically equal to a gold answer (any of a list).

    Plain numbers and identical canonical forms are decided in process; anything else goes to
    math-verify in a worker process bounded by `timeout_s` (False when it runs out). `timeout_s=None`
    calls math-verify in this process without a timeout (faster, but a pathological expression can
    hang). Safe to call from any thread.
    """
    golds = gold_list(gold)
    if prediction is None or not prediction.strip():
        return False
    if timeout_s is not None and timeout_s <= 0:
        raise ConfigError(f"math_equal: timeout_s={timeout_s!r} must be > 0, or None for no timeout")
    for g in golds:
        quick = _quick_equal(prediction, g)
        if quick is True:
            return True
        if quick is False:
            continue
        if timeout_s is None:
            if _in_process_equal(prediction, g):
                return True
        elif _verifier().equal(prediction, g, timeout_s=timeout_s):
            return True
    return False


__all__ = ["MathVerifier", "last_number", "math_equal", "normalize_math_answer"]
