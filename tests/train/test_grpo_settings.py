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
