"""GRPOSettings: engines by the registry's names."""

import pytest

from agentic_infer.errors import ConfigError


def test_grpo_engine_names_are_the_registrys():
    """GRPO takes the registry's names (the old spelling points at the new one) and only loop engines."""
    from train.grpo.config import GRPOSettings

    with pytest.raises(ConfigError, match="did you mean 'search-o1'"):
        GRPOSettings(engine="search_o1")
    with pytest.raises(ConfigError, match="GRPO trains loop engines"):
        GRPOSettings(engine="cot")


def test_the_generation_batch_not_the_micro_batch_must_tile_the_groups():
    from train.grpo.config import GRPOSettings

    s = GRPOSettings(num_generations=8, batch_size=4, trl={"gradient_accumulation_steps": 4})
    assert s.generation_batch == 16  # 4 micro-batches of 4: two groups of 8 generated together
    assert GRPOSettings(num_generations=4, batch_size=2, trl={"steps_per_generation": 2}).generation_batch == 4
    with pytest.raises(ConfigError, match="num_generations=8, batch_size=4 x 1 micro-batches"):
        GRPOSettings(num_generations=8, batch_size=4)
    with pytest.raises(ConfigError, match="batch_size=4 x 3 micro-batches"):
        GRPOSettings(num_generations=8, batch_size=4, trl={"gradient_accumulation_steps": 3})
