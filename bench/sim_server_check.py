"""Assertions on the simulated server's cost model and accounting (`bench/sim_engine.py`, `sim_server.py`).

    .venv/bin/python bench/sim_server_check.py        # ~15 s; prints "ok" per check, raises on failure

Engine level (no HTTP): one request alone (time = its planned cost, utilisation = 1/max_batch,
ideal = its critical path), two full waves (utilisation ~1, ideal = work bound ~ makespan, queue
wait = one wave), prefix-cache prefill, stop strings and max_tokens. Over HTTP through our
`openai` backend: server-side stops (non-streaming) and client-side stops (streaming, aborted at
the stop) return the same text, and a two-question Search-o1 run gets the scripted answers.
Timing tolerances are loose (this machine is shared); the token and request counts are exact.
"""

from __future__ import annotations

import asyncio
import math
import time

from sim_server import QUERY_END, SimConfig, SimEngine, SimServer, sim_answer, sim_query, sim_question


def close(a: float, b: float, rel: float, what: str) -> None:
    assert abs(a - b) <= rel * max(abs(b), 1e-9), f"{what}: {a:.4f} vs expected {b:.4f} (tolerance {rel:.0%})"


async def run_engine(engine: SimEngine, prompts: list[str], **kw) -> tuple[list, float]:
    task = asyncio.create_task(engine.run())
    t0 = time.perf_counter()
    reqs = [engine.submit(p, **{"max_tokens": 1000, "stop": [], "include_stop": False, "stream": False, **kw})
            for p in prompts]
    await asyncio.gather(*(r.done for r in reqs))
    wall = time.perf_counter() - t0
    task.cancel()
    return reqs, wall


def prompt(i: int, hops: int, tail: str = "") -> str:
    return f"<|im_start|>user\nQuestion: {sim_question(i, hops)}<|im_end|>\n<|im_start|>assistant\n{tail}"


async def engine_checks() -> None:
    cfg = SimConfig(max_batch=4, decode_ms=5.0, alpha=0.1, prefill_ms_per_token=0.05, turn_tokens_min=32,
                    turn_tokens_max=32, turn_tokens_median=32)
    # one request alone
    eng = SimEngine(cfg)
    [r], wall = await run_engine(eng, [prompt(1, 2)], stop=[QUERY_END], include_stop=True)
    assert r.text.endswith(sim_query(1, 1) + QUERY_END) and r.stop_reason == QUERY_END, r.text
    assert r.steps == math.ceil(len(r.text) / 4) and r.finish_reason == "stop"
    st = eng.stats()
    planned = (r.steps * cfg.step_ms(1) + r.new_tokens * cfg.prefill_ms_per_token) / 1000
    assert st["decode_tokens"] == r.steps and st["requests"] == 1 and st["steps"] == r.steps
    close(st["planned_busy_s"], planned, 1e-6, "planned busy time of one request")
    close(wall, planned, 0.25, "wall time of one request")
    close(st["utilisation"], 1 / cfg.max_batch, 0.2, "utilisation of one request")
    close(st["critical_path_s"], planned, 1e-6, "critical path of one request")
    assert st["ideal_makespan_s"] == st["critical_path_s"] > st["work_bound_s"]
    print(f"ok  one request: {r.steps} tokens, wall {wall * 1000:.0f} ms vs planned {planned * 1000:.0f} ms")

    # prefix cache: the continuation pays prefill only for the observation
    obs = "\n\n<|begin_search_result|>" + "x" * 400 + "<|end_search_result|>\n\n"
    [r2], _ = await run_engine(eng, [r.prompt + r.text + obs])
    assert abs(r2.new_tokens - len(obs) // 4) <= 1, (r2.new_tokens, len(obs) // 4)
    assert r2.text.endswith(QUERY_END) and r2.stop_reason is None  # no stop asked for: ends at "EOS"
    print(f"ok  prefix cache: {r2.prompt_tokens} prompt tokens, {r2.new_tokens} prefilled")

    # max_tokens
    [r3], _ = await run_engine(SimEngine(cfg), [prompt(3, 0)], max_tokens=5)
    assert r3.finish_reason == "length" and r3.steps == 5 and len(r3.text) == 20
    print("ok  max_tokens -> finish_reason length")

    # two full waves of equal requests: utilisation ~1, makespan ~ work bound, queue wait ~ one wave
    eng = SimEngine(cfg)
    n = 2 * cfg.max_batch
    reqs, wall = await run_engine(eng, [prompt(10 + i, 0) for i in range(n)])
    st = eng.stats()
    assert all(r.steps == 32 for r in reqs), [r.steps for r in reqs]
    assert st["decode_tokens"] == n * 32 and st["steps"] == 64 and st["max_batch_seen"] == cfg.max_batch
    close(st["mean_batch"], cfg.max_batch, 1e-9, "mean batch")
    close(st["utilisation"], 1.0, 0.1, "utilisation at full batch")
    close(st["work_bound_s"], st["planned_busy_s"], 1e-6, "work bound vs planned time at full batch")
    assert st["ideal_makespan_s"] == st["work_bound_s"]
    close(wall, st["ideal_makespan_s"], 0.2, "makespan at full batch vs ideal")
    close(st["queue_wait_max_s"], 32 * cfg.step_ms(4) / 1000, 0.3, "queue wait of the second wave")
    print(f"ok  two waves: utilisation {st['utilisation']:.3f}, wall {wall:.3f} s, ideal {st['ideal_makespan_s']:.3f} s")


async def http_checks() -> None:
    from agentic_infer.backends import load_llm
    from agentic_infer.engines.search_o1 import SearchO1
    from agentic_infer.runner import run_many
    from agentic_infer.tools.retrieval import Document
    from agentic_infer.tools.retrieval.memory import InMemoryRetriever
    from agentic_infer.types import Message, SamplingParams

    cfg = SimConfig(max_batch=4, decode_ms=1.0)
    with SimServer(cfg) as server:
        server_llm = load_llm(server.uri(stops="server"))
        client_llm = load_llm(server.uri(stops="client"))
        text = server_llm.render([Message("user", f"Question: {sim_question(5, 2)}")])
        params = SamplingParams(max_tokens=500, stop=(QUERY_END,), include_stop=True, logprobs=0)
        [a] = await server_llm.generate(text, params)
        [b] = await client_llm.generate(text, params)
        assert a.text == b.text and a.stop_reason == b.stop_reason == QUERY_END, (a, b)
        assert len(a.logprobs) == len(b.logprobs) > 0
        print("ok  server-side stops (non-streaming) == client-side stops (streaming)")

        server.reset()
        [c] = await client_llm.generate(text, SamplingParams(max_tokens=500, stop=("chain",)))
        await asyncio.sleep(0.2)
        st = server.stats()
        assert c.stop_reason == "chain" and st["cancelled"] == 1, (c, st)
        print(f"ok  a streamed request stopped client-side is aborted at the server "
              f"({st['decode_tokens']} tokens generated)")

        server.reset()
        docs = [Document(f"{i}-{h}", sim_query(i, h), f"Hop {h} of chain {i} leads to E{i:03d}_{h}.")
                for i in (1, 2) for h in range(1, 4)]
        engine = SearchO1(server_llm, InMemoryRetriever(docs), max_searches=5, k=2,
                          sampling=SamplingParams(max_tokens=1000, temperature=0.0, logprobs=0))
        rollouts = await run_many(engine, [{"question": sim_question(1, 3)}, {"question": sim_question(2, 1)}],
                                  concurrency=2, progress=False)
        trajs = [r.trajectory for r in rollouts]
        assert [t.answer for t in trajs] == [sim_answer(1, 3), sim_answer(2, 1)], [t.answer for t in trajs]
        assert [t.metadata["actions"] for t in trajs] == [3, 1]
        st = server.stats()
        assert st["by_kind"] == {"main": 6, "rid": 4}, st["by_kind"]
        assert sum(t.usage.llm_calls for t in trajs) == st["requests"] == 10
        print(f"ok  Search-o1 on the simulator: answers {[t.answer for t in trajs]}, {st['requests']} requests")
        await server_llm.aclose()
        await client_llm.aclose()


def main() -> None:
    asyncio.run(engine_checks())
    asyncio.run(http_checks())
    print("all simulator checks passed")


if __name__ == "__main__":
    main()
