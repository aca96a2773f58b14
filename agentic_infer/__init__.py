"""agentic-infer: agentic LLM reasoning at inference time, and its trajectories as data.

Heavy libraries (torch, llama_cpp, vllm, transformers) are imported only by the backends and
tools that need them, so `import agentic_infer` stays light.
"""

from agentic_infer.errors import AgenticError, BackendError, ConfigError, ContextLengthError, ParseError
from agentic_infer.types import Completion, Message, SamplingParams, Segment, Step, TokenLogprob, Trajectory

__version__ = "0.1.0"

__all__ = [
    "AgenticError", "BackendError", "Completion", "ConfigError", "ContextLengthError", "Message", "ParseError",
    "SamplingParams", "Segment", "Step", "TokenLogprob", "Trajectory", "__version__",
]
