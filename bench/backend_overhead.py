"""What our backend wrappers add on top of the libraries they wrap.

Side by side in one process, interleaved (A, B, A, B, ...) so machine noise hits both equally:
1. our `llamacpp` backend vs direct `llama_cpp.Llama.create_completion` on the same loaded model;
2. our `openai` backend vs the raw `openai` client, both against the same llama.cpp server on loopback.
Each call is a greedy generation of exactly `--tokens` tokens (no stop strings, so the work is
identical); we report the median seconds per call and the ratio ours / raw. Target: ratio <= 1.05.

    .venv/bin/python bench/backend_overhead.py [--calls 8] [--tokens 64]

Writes bench/results/backend_overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from agentic_infer.backends import load_llm
from agentic_infer.backends.llamacpp import LlamaCppLLM
from agentic_infer.backends.llamacpp_server import LlamaCppServer
from agentic_infer.types import Message, SamplingParams

PROMPTS = [
    "Explain why the sky is blue.",
    "Write a short story about a robot learning to paint.",
    "List some facts about the Roman Empire.",
    "Describe how a bicycle works.",
]


async def timed(fn, i: int) -> float:
    t0 = time.perf_counter()
    await fn(i)
    return time.perf_counter() - t0


async def compare(name: str, ours, raw, calls: int) -> dict:
    await ours(0)
    await raw(0)  # warm-up (prompt cache, connections)
    t_ours, t_raw = [], []
    for i in range(calls):
        t_ours.append(await timed(ours, i))
        t_raw.append(await timed(raw, i))
    m_ours, m_raw = statistics.median(t_ours), statistics.median(t_raw)
    return {"what": name, "calls": calls, "median_ours_s": m_ours, "median_raw_s": m_raw,
            "ratio": m_ours / m_raw}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    llm = LlamaCppLLM(n_ctx=2048)
    prompts = [llm.render([Message("user", p)]) for p in PROMPTS]
    params = SamplingParams(max_tokens=args.tokens, temperature=0)
    rows = []

    async def ours_local(i):
        [c] = await llm.generate(prompts[i % len(prompts)], params)
        return c

    async def raw_local(i):
        return await asyncio.to_thread(llm.llama.create_completion, prompts[i % len(prompts)],
                                       max_tokens=args.tokens, temperature=0, top_k=0, min_p=0.0,
                                       repeat_penalty=1.0)

    c_ours, c_raw = await ours_local(0), await raw_local(0)
    assert c_ours.text == c_raw["choices"][0]["text"], "in-process outputs differ; comparison would be unfair"
    rows.append(await compare("llamacpp backend vs llama_cpp.Llama", ours_local, raw_local, args.calls))

    import openai

    with LlamaCppServer(n_ctx=2048) as server:
        remote = load_llm(server.uri)
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0)

        async def ours_remote(i):
            [c] = await remote.generate(prompts[i % len(prompts)], params)
            return c

        async def raw_remote(i):
            return await client.completions.create(
                model="smollm2", prompt=prompts[i % len(prompts)], max_tokens=args.tokens, temperature=0,
                extra_body={"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0})

        a, b = await ours_remote(0), await raw_remote(0)
        assert a.text == b.choices[0].text, "server outputs differ; comparison would be unfair"
        rows.append(await compare("openai backend vs raw openai client", ours_remote, raw_remote, args.calls))
        await remote.aclose()
        await client.close()

    print(f"{'comparison':40s} {'ours s':>9s} {'raw s':>9s} {'ratio':>7s}")
    for r in rows:
        print(f"{r['what']:40s} {r['median_ours_s']:9.3f} {r['median_raw_s']:9.3f} {r['ratio']:7.3f}")
    out = Path(__file__).parent / "results" / "backend_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"tokens": args.tokens, "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    asyncio.run(main())
