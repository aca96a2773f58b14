"""Shared fixtures: the real retail tables (skipped without the shared data) and the embedded model's vocabulary."""

from __future__ import annotations

import pytest

from tests.conftest import shared_data


@pytest.fixture(scope="session")
def tables():
    shared_data("tools/tau_retail_db/orders.json")
    from agentic_infer.envs.retail.db import load_tables

    return load_tables()


@pytest.fixture(scope="session")
def vocab():
    """SmolLM2's tokenizer and chat template from the embedded GGUF (no weights loaded)."""
    from agentic_infer.backends.tokenizer import load_tokenizer
    from synth.demos import Vocab

    return Vocab(load_tokenizer("default"))
