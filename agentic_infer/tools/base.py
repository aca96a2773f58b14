"""The tool protocol: `Tool`, `ToolResult`, the `@tool` decorator and `dispatch`.

A tool has a `name`, a `description` and a JSON schema of its `parameters`; calling it
(`await tool(**arguments)`) always returns a `ToolResult(content, error, metadata)` and never
raises into the caller: bad arguments, exceptions and timeouts become an error result
(`error="<Type>: <message>"`), are counted (`tool.calls`, `tool.errors`) and logged. A tool failure
is data shown to the model, never a crash and never silent. Cancellation (`asyncio.CancelledError`)
still propagates, so engines can abandon a call.

    from agentic_infer.tools import tool

    @tool
    async def lookup(title: str, max_chars: int = 500) -> str:
        '''Fetch an article by title.

        Args:
            title: the exact article title.
            max_chars: how much of the article to return.
        '''
        ...

    result = await lookup(title="Paris")          # ToolResult
    lookup.openai_schema()                          # {"type": "function", "function": {...}}
    await dispatch([lookup], "lookup", '{"title": "Paris"}')   # native tool calls (JSON text)

Sync functions run in a worker thread (`asyncio.to_thread`); a sync function that times out keeps
running in its thread until it returns (Python cannot kill a thread); use the process sandbox for
code that must be stopped. Not covered here: retries, rate limits, caching of results.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from agentic_infer.errors import ToolError
from agentic_infer.tools.schema import ToolArgumentError, function_schema, validate_arguments

__all__ = ["FunctionTool", "Tool", "ToolArgumentError", "ToolResult", "dispatch", "tool"]

logger = logging.getLogger("agentic_infer.tools")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the OpenAI function-calling API accepts


@dataclass
class ToolResult:
    """The outcome of one tool call: `content` for the model, `error` when it failed.

    `error` is one line, `"<Type>: <message>"` (for code, the last line of the traceback);
    `metadata` holds everything else (full stderr, timings, isolation report, hits, ...).
    """

    content: str
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise ToolError(f"ToolResult.content must be a str, got {type(self.content).__name__}; "
                            "serialise the value (e.g. json.dumps) before returning it")
        if self.error is not None and not isinstance(self.error, str):
            raise ToolError(f"ToolResult.error must be a str or None, got {type(self.error).__name__}")

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failure(cls, exc: BaseException | str, *, content: str = "", metadata: dict[str, Any] | None = None
                ) -> ToolResult:
        """An error result from an exception (`"<Type>: <message>"`) or a ready message."""
        error = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}".rstrip(": ")
        return cls(content=content, error=error, metadata=dict(metadata or {}))

    def as_observation(self) -> str:
        """The text to show a model: the content, then the error line if the call failed."""
        if self.ok:
            return self.content
        return f"{self.content.rstrip()}\n{self.error}" if self.content.strip() else str(self.error)

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "error": self.error, "metadata": self.metadata}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        return cls(content=data["content"], error=data.get("error"), metadata=dict(data.get("metadata") or {}))


def _to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=value)
    if value is None:
        return ToolResult(content="")
    if isinstance(value, (dict, list, tuple, int, float, bool)):
        return ToolResult(content=json.dumps(value, ensure_ascii=False, default=str))
    return ToolResult(content=str(value))


class Tool:
    """Base class of every tool. Subclasses implement `async invoke(**arguments)`.

    `invoke` may return a `ToolResult`, a str, or any JSON-serialisable value; it may raise: the
    exception becomes an error result. Subclasses set `name`, `description` and `parameters` as
    class attributes or pass them to `__init__`; `timeout_s` bounds each call (None: no bound).
    """

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}, "required": []}  # noqa: RUF012
    timeout_s: float | None = None

    def __init__(self, *, name: str | None = None, description: str | None = None,
                 parameters: dict[str, Any] | None = None, timeout_s: float | None = None) -> None:
        self.name = name if name is not None else type(self).name
        self.description = description if description is not None else type(self).description
        self.parameters = parameters if parameters is not None else dict(type(self).parameters)
        self.timeout_s = timeout_s if timeout_s is not None else type(self).timeout_s
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolError(f"tool name {self.name!r} is invalid: use 1-64 letters, digits, '_' or '-' "
                            "(the OpenAI function-calling rule)")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ToolError(f"tool {self.name!r}: timeout_s={self.timeout_s!r} must be > 0 or None")
        if self.parameters.get("type") != "object":
            raise ToolError(f"tool {self.name!r}: parameters must be a JSON schema with type 'object', "
                            f"got {self.parameters!r}")
        self.calls = 0
        self.errors = 0

    async def invoke(self, **arguments: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement `async invoke(**arguments)`")

    async def __call__(self, **arguments: Any) -> ToolResult:
        """Validate, run (bounded by `timeout_s`), and return a ToolResult; never raises."""
        self.calls += 1
        start = time.perf_counter()
        try:
            checked = validate_arguments(self.parameters, arguments, tool=self.name)
            pending = self.invoke(**checked)
            value = await (asyncio.wait_for(pending, self.timeout_s) if self.timeout_s else pending)
            result = _to_result(value)
        except ToolArgumentError as exc:
            result = ToolResult.failure(exc)
        except TimeoutError:
            result = ToolResult.failure(f"TimeoutError: tool {self.name!r} did not finish within {self.timeout_s} s")
        except Exception as exc:  # noqa: BLE001 - a tool failure is data for the model, never a crash
            logger.debug("tool %r raised", self.name, exc_info=True)
            result = ToolResult.failure(exc)
        result.metadata.setdefault("tool", self.name)
        result.metadata.setdefault("tool_wall_s", round(time.perf_counter() - start, 4))
        if not result.ok:
            self.errors += 1
            logger.info("tool %r failed (%d of %d calls): %s", self.name, self.errors, self.calls, result.error)
        return result

    async def call_json(self, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        """Call with arguments as sent in a native tool call: a JSON object text (or a dict)."""
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            return await self()
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                self.calls += 1
                self.errors += 1
                return ToolResult.failure(f"ToolArgumentError: tool {self.name!r}: arguments are not valid "
                                          f"JSON ({exc.msg} at position {exc.pos}): {arguments[:200]!r}")
        if not isinstance(arguments, Mapping):
            self.calls += 1
            self.errors += 1
            return ToolResult.failure(f"ToolArgumentError: tool {self.name!r}: arguments must be a JSON object, "
                                      f"got {type(arguments).__name__}")
        return await self(**dict(arguments))

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool description (`tools=[...]` in chat completions)."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def stats(self) -> dict[str, int]:
        return {"calls": self.calls, "errors": self.errors}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, calls={self.calls}, errors={self.errors})"


class FunctionTool(Tool):
    """A tool around a plain (async or sync) function; schema from its type hints and docstring."""

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None,
                 timeout_s: float | None = None) -> None:
        if not callable(fn):
            raise ToolError(f"FunctionTool needs a callable, got {fn!r}")
        doc_description, parameters = function_schema(fn)
        super().__init__(name=name or getattr(fn, "__name__", ""), description=description or doc_description,
                         parameters=parameters, timeout_s=timeout_s)
        self.fn = fn
        self._is_async = inspect.iscoroutinefunction(fn) or (  # or an object with `async def __call__`
            not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__))

    async def invoke(self, **arguments: Any) -> Any:
        if self._is_async:
            return await self.fn(**arguments)
        value = await asyncio.to_thread(self.fn, **arguments)
        if inspect.isawaitable(value):
            value = await value
        return value


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None,
         timeout_s: float | None = None) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None,
         timeout_s: float | None = None) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a `FunctionTool`: `@tool` or `@tool(name=..., timeout_s=...)`."""
    if fn is not None:
        return FunctionTool(fn, name=name, description=description, timeout_s=timeout_s)

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, timeout_s=timeout_s)
    return wrap


async def dispatch(tools: Mapping[str, Tool] | Iterable[Tool], name: str,
                   arguments: str | Mapping[str, Any] | None) -> ToolResult:
    """Run the tool called `name` (arguments as JSON text or a dict); unknown names are error results."""
    table = dict(tools) if isinstance(tools, Mapping) else {t.name: t for t in tools}
    chosen = table.get(name)
    if chosen is None:
        logger.info("call of unknown tool %r (available: %s)", name, sorted(table))
        return ToolResult.failure(f"UnknownToolError: no tool named {name!r}; available: {', '.join(sorted(table))}",
                                  metadata={"tool": name})
    return await chosen.call_json(arguments)

