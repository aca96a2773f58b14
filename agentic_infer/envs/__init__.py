"""Environments: stateful tool domains (retail, travelplanner, bfcl) and tree-search worlds behind one `Env`
interface (`agentic_infer.envs.base`) and one factory (`make_env`, `agentic_infer.envs.registry`)."""

from agentic_infer.envs.base import (
    CallRecord,
    CallResult,
    Check,
    Env,
    EnvVerdict,
    Refusal,
    canonical,
    canonical_text,
    state_diff,
    state_digest,
)
from agentic_infer.envs.registry import EnvSpec, get_env_spec, list_envs, make_env, register_env

__all__ = ["CallRecord", "CallResult", "Check", "Env", "EnvSpec", "EnvVerdict", "Refusal", "canonical",
           "canonical_text", "get_env_spec", "list_envs", "make_env", "register_env", "state_diff", "state_digest"]
