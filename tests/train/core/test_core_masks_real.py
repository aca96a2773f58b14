"""Masks from a REAL trajectory of the embedded model (Search-o1 over a tiny in-memory corpus)."""

from agentic_infer.engines.search_o1 import DEFAULT_SAMPLING, SearchO1
from agentic_infer.tools.retrieval.base import Document
from agentic_infer.tools.retrieval.memory import InMemoryRetriever
from train.core.masks import completion_view, sft_row

DOCS = [Document("1", "Paris", "Paris is the capital and largest city of France."),
        Document("2", "Berlin", "Berlin is the capital of Germany.")]


async def test_masks_of_a_real_search_o1_trajectory(embedded_llm):
    engine = SearchO1(embedded_llm, InMemoryRetriever(DOCS), max_searches=1, max_turns=2, k=1, rid=False,
                      assistant_prefix="<|begin_search_query|>capital of France",
                      sampling=DEFAULT_SAMPLING.replace(max_tokens=16, seed=0))
    traj = (await engine.run({"id": "q1", "question": "What is the capital of France?"})).trajectory
    assert traj.token_exact
    kinds = [s.kind for s in traj.segments]
    assert "model" in kinds and "observation" in kinds
    eos = embedded_llm._llama.token_eos()
    v = completion_view(traj, eos_token_id=eos, append_eos="finished")
    ids = [i for s in traj.segments for i in s.token_ids]
    n_prompt = len(v.prompt_ids)
    # token-in/token-out: exactly the recorded ids, nothing re-encoded
    assert v.prompt_ids + v.completion_ids[:len(ids) - n_prompt] == ids
    first = next(i for i, s in enumerate(traj.segments) if s.kind != "prompt")
    for j in range(first, len(traj.segments)):
        seg = traj.segments[j]
        pos = [i for i, s in enumerate(v.segment_index) if s == j]
        assert [v.completion_ids[i] for i in pos] == seg.token_ids
        assert all(v.env_mask[i] == int(seg.kind == "model") for i in pos)
        if seg.kind == "model":
            assert [v.logprobs[i] for i in pos] == [lp.logprob for lp in seg.logprobs]
    n_model = sum(len(s.token_ids) for s in traj.segments if s.kind == "model")
    assert sum(v.env_mask) == n_model + int(v.eos_appended)
    assert v.eos_appended == (traj.finish_reason == "answer")
    row = sft_row(traj)
    assert sum(1 for x in row["labels"] if x != -100) == n_model
    cut = completion_view(traj, max_completion_length=len(v.completion_ids) - 3)
    assert len(cut.completion_ids) == len(cut.env_mask) == len(cut.logprobs) == len(v.completion_ids) - 3
