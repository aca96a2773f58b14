"""What our backend wrappers add on top of the libraries they wrap.

Side by side in one process, interleaved (A, B, A, B, ...) so machine noise hits both equally:
1. our `llamacpp` backend vs direct `llama_cpp.Llama.create_completion` on the same loaded model;
2. our `openai` backend vs the raw `openai` client, both against the same llama.cpp server on loopback.
Each call is a greedy generation of up to `--tokens` tokens (no stop strings). Every prompt opens
with its own request number and the two sides run the same prompts shifted by one (step i: ours
on prompt i+1, raw on prompt i), so both do the same work and neither reuses the other's cached
prompt prefix (llama.cpp keeps the KV cache of the previous prompt). We report median seconds per
call, median milliseconds per generated token, and the ratio ours / raw of the latter.
Because that ratio moves with the machine's load, we also measure the wrappers' fixed cost alone
(1-token requests on a cached prompt, 30 interleaved pairs) and express it as a share of a whole
raw call ("ratio (overhead)"). Target: ratio <= 1.05.

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


async def compare(name: str, ours, raw, calls: int) -> dict:
    """ours(i) / raw(i) run prompt i and return the number of tokens generated; calls alternate."""
    await ours(1000)
    await raw(1001)  # warm-up (model pages, connections)
    t_ours, t_raw, tok_ours, tok_raw = [], [], [], []
    for i in range(calls):
        for fn, k, times, toks in ((ours, i + 1, t_ours, tok_ours), (raw, i, t_raw, tok_raw)):
            t0 = time.perf_counter()
            toks.append(await fn(k))
            times.append(time.perf_counter() - t0)
    per_tok_ours = statistics.median(t / n for t, n in zip(t_ours, tok_ours))
    per_tok_raw = statistics.median(t / n for t, n in zip(t_raw, tok_raw))
    return {"what": name, "calls": calls, "median_ours_s": statistics.median(t_ours),
            "median_raw_s": statistics.median(t_raw), "tokens_ours": sum(tok_ours), "tokens_raw": sum(tok_raw),
            "ms_per_token_ours": 1000 * per_tok_ours, "ms_per_token_raw": 1000 * per_tok_raw,
            "ratio": per_tok_ours / per_tok_raw}


async def fixed_cost(ours, raw, calls: int = 30) -> dict:
    """Per-request cost with the model's work near zero: 1 token from an already cached prompt."""
    t_ours, t_raw = [], []
    for _ in range(calls):
        for fn, times in ((ours, t_ours), (raw, t_raw)):
            t0 = time.perf_counter()
            await fn()
            times.append(time.perf_counter() - t0)
    m_ours, m_raw = statistics.median(t_ours), statistics.median(t_raw)
    return {"one_token_ms_ours": 1000 * m_ours, "one_token_ms_raw": 1000 * m_raw,
            "overhead_ms": 1000 * (m_ours - m_raw)}


def with_fixed_cost(row: dict, cost: dict) -> dict:
    """The overhead measured alone, as a share of a whole raw call: the ratio load noise cannot blur."""
    row.update(cost)
    row["ratio_from_overhead"] = (row["median_raw_s"] + cost["overhead_ms"] / 1000) / row["median_raw_s"]
    return row


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    llm = LlamaCppLLM(n_ctx=2048)
    params = SamplingParams(max_tokens=args.tokens, temperature=0)
    rows = []

    def prompt(i: int) -> str:
        return llm.render([Message("user", f"Request {i}. {PROMPTS[i % len(PROMPTS)]}")])

    same = prompt(999)  # same prompt through both: the outputs must agree
    one = SamplingParams(max_tokens=1, temperature=0)
    [c] = await llm.generate(same, params)
    raw_same = llm.llama.create_completion(same, max_tokens=args.tokens, temperature=0, top_k=0, min_p=0.0,
                                           repeat_penalty=1.0)
    assert c.text == raw_same["choices"][0]["text"], "in-process outputs differ; comparison would be unfair"

    async def ours_local(i):
        [c] = await llm.generate(prompt(i), params)
        return c.num_tokens

    async def raw_local(i):
        out = await asyncio.to_thread(llm.llama.create_completion, prompt(i), max_tokens=args.tokens,
                                      temperature=0, top_k=0, min_p=0.0, repeat_penalty=1.0)
        return out["usage"]["completion_tokens"]

    row = await compare("llamacpp backend vs llama_cpp.Llama", ours_local, raw_local, args.calls)

    async def ours_one():
        await llm.generate(same, one)

    async def raw_one():
        await asyncio.to_thread(llm.llama.create_completion, same, max_tokens=1, temperature=0, top_k=0,
                                min_p=0.0, repeat_penalty=1.0)

    rows.append(with_fixed_cost(row, await fixed_cost(ours_one, raw_one)))

    import openai

    with LlamaCppServer(n_ctx=2048) as server:
        remote = load_llm(server.uri)
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="EMPTY", max_retries=0)

        async def raw_call(text):
            return await client.completions.create(
                model="smollm2", prompt=text, max_tokens=args.tokens, temperature=0,
                extra_body={"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0})

        [a] = await remote.generate(same, params)
        assert a.text == (await raw_call(same)).choices[0].text, "server outputs differ; comparison would be unfair"

        async def ours_remote(i):
            [c] = await remote.generate(prompt(i), params)
            return len(remote.tokenizer.encode(c.text))  # the same count for both sides

        async def raw_remote(i):
            return len(remote.tokenizer.encode((await raw_call(prompt(i))).choices[0].text))

        row = await compare("openai backend vs raw openai client", ours_remote, raw_remote, args.calls)

        async def ours_remote_one():
            await remote.generate(same, one)

        async def raw_remote_one():
            await client.completions.create(model="smollm2", prompt=same, max_tokens=1, temperature=0,
                                            extra_body={"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0})

        rows.append(with_fixed_cost(row, await fixed_cost(ours_remote_one, raw_remote_one)))
        await remote.aclose()
        await client.close()

    print(f"{'comparison':38s} {'ours s':>7s} {'raw s':>7s} {'ours ms/tok':>11s} {'raw ms/tok':>10s} {'ratio':>6s}"
          f" {'1-tok ours ms':>13s} {'1-tok raw ms':>12s} {'overhead ms':>11s} {'ratio (overhead)':>16s}")
    for r in rows:
        print(f"{r['what']:38s} {r['median_ours_s']:7.3f} {r['median_raw_s']:7.3f} {r['ms_per_token_ours']:11.2f} "
              f"{r['ms_per_token_raw']:10.2f} {r['ratio']:6.3f} {r['one_token_ms_ours']:13.1f} "
              f"{r['one_token_ms_raw']:12.1f} {r['overhead_ms']:11.1f} {r['ratio_from_overhead']:16.4f}")
    out = Path(__file__).parent / "results" / "backend_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"tokens": args.tokens, "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    asyncio.run(main())
