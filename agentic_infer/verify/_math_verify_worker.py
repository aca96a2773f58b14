"""The math-verify worker process behind `verify.maths.math_equal` (run as a script; `compare` is also
used in process when `math_equal(..., timeout_s=None)`).

Protocol, one JSON object per line: the worker first writes `{"ready": true}` (or `{"fatal": msg}`
when math-verify is missing), then answers each request `{"gold": str, "pred": str}` with
`{"equal": bool}` or `{"error": msg}`. It runs math-verify with its own timeouts disabled (they use
`signal.alarm`); the parent enforces the timeout by killing this process. It imports nothing from the
project, so it runs wherever the interpreter has math-verify.
"""

from __future__ import annotations

import json
import logging
import os
import sys


def compare(gold: str, pred: str, parse, verify) -> bool:
    """Parse both sides (wrapped in `$...$` first when they carry no math delimiters) and verify."""

    def parsed(s: str):
        if not any(m in s for m in ("$", "\\boxed", "\\(", "\\[")):
            out = parse(f"${s}$", parsing_timeout=None)
            if out:
                return out
        return parse(s, parsing_timeout=None)

    g, p = parsed(gold), parsed(pred)
    if not g or not p:
        return False
    return bool(verify(g, p, timeout_seconds=None))


def main() -> None:
    logging.disable(logging.WARNING)  # math-verify warns that its own timeout is disabled: we know
    out = sys.stdout
    try:
        from math_verify import parse, verify
    except ImportError as e:
        out.write(json.dumps({"fatal": f"math-verify is not importable: {e}"}) + "\n")
        out.flush()
        return
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            res = {"equal": compare(str(req["gold"]), str(req["pred"]), parse, verify)}
        except Exception as e:  # any failure of one comparison is reported, the worker lives on
            res = {"error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(res) + "\n")
        out.flush()


if __name__ == "__main__":
    # Run as a script, this folder heads sys.path: its module names must not shadow what math-verify imports.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    main()
