"""One exception hierarchy for the toolkit.

Every error says what went wrong, the offending value, and how to fix it. The CLI turns any
`AgenticError` into one line on stderr and exit code 2; library callers can catch the base class.
"""

from __future__ import annotations


class AgenticError(Exception):
    """Base class of every error this toolkit raises on purpose."""


class ConfigError(AgenticError, ValueError):
    """A parameter, URI or config value is invalid (the message names it and the fix)."""


class BackendError(AgenticError):
    """An LLM backend failed. `retryable` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = False, status_code: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code


class ContextLengthError(BackendError):
    """The prompt (plus the requested tokens) does not fit the model's context window."""


class ParseError(AgenticError):
    """Model or file output could not be parsed into the expected structure."""


class ToolError(AgenticError):
    """A tool could not be constructed or configured (failures of a tool *call* are ToolResults)."""
