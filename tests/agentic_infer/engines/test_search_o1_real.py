"""Search-o1 end to end with the embedded model (llama.cpp) and a real BM25 index over real text."""

import pytest

from agentic_infer.engines.search_o1 import DEFAULT_SAMPLING, SearchO1
from tests.conftest import shared_data


@pytest.fixture(scope="module")
def hotpot_index(tmp_path_factory):
    pytest.importorskip("bm25s")
    from agentic_infer.tools.retrieval.index import build_index

    corpus = shared_data("multihop/hotpotqa_train_100_corpus.json")
    return build_index(corpus, out=tmp_path_factory.mktemp("idx") / "bm25", kind="bm25")


async def test_real_model_searches_a_real_index(embedded_llm, hotpot_index):
    engine = SearchO1(embedded_llm, hotpot_index, max_searches=1, max_turns=2, k=3, worked_example=True,
                      assistant_prefix="<|begin_search_query|>Arthur's Magazine", rid_prefill=True,
                      sampling=DEFAULT_SAMPLING.replace(max_tokens=48, seed=0),
                      rid_sampling=DEFAULT_SAMPLING.replace(max_tokens=48, seed=0))
    traj = (await engine.run({"question": "Which magazine was started first, Arthur's Magazine or First for Women?"})).trajectory
    [step, *_] = traj.steps
    assert step.action == "search" and step.metadata["status"] == "executed"
    assert len(step.metadata["doc_ids"]) == 3 and step.observation
    model = [s for s in traj.segments if s.kind == "model"]
    assert model and all(s.token_ids and len(s.logprobs) == len(s.token_ids) for s in model)
    mask = traj.loss_mask()
    assert sum(mask) == sum(len(s.token_ids) for s in model)
    assert traj.usage.prompt_tokens > len(traj.segments[0].token_ids)  # every turn re-reads the prompt
    assert traj.usage.llm_calls >= 2 and traj.finish_reason in ("answer", "max_turns", "length")
