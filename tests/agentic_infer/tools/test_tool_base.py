"""The tool protocol: schemas from type hints and docstrings, validation, never-raising calls, counters."""

from __future__ import annotations

import asyncio
import logging
import time
from enum import Enum
from typing import Literal

import pytest

from agentic_infer.errors import ToolError
from agentic_infer.tools import FunctionTool, Tool, ToolResult, dispatch, tool
from agentic_infer.tools.schema import function_schema, parse_docstring


class Unit(Enum):
    KM = "km"
    MILE = "mile"


async def convert(distance: float, unit: Unit, precision: int = 2, tags: list[str] | None = None,
                  mode: Literal["fast", "exact"] = "fast") -> str:
    """Convert a distance between units.

    Longer explanation that is not part of the description.

    Args:
        distance: the distance to convert,
            which may span two lines.
        unit (Unit): the unit to convert to.
        precision: decimal places.
        tags: free labels.
        mode: how to compute.

    Returns:
        The converted distance as text.
    """
    factor = 1.609344 if unit == "km" else 1 / 1.609344
    return f"{round(distance * factor, precision)} {unit}"


def test_schema_from_type_hints_and_docstring():
    description, params = function_schema(convert)
    assert description == "Convert a distance between units."
    props = params["properties"]
    assert props["distance"] == {"type": "number", "description": "the distance to convert, which may span two lines."}
    assert props["unit"]["enum"] == ["km", "mile"] and props["unit"]["type"] == "string"
    assert props["precision"] == {"type": "integer", "description": "decimal places.", "default": 2}
    assert props["tags"]["type"] == "array" and props["tags"]["items"] == {"type": "string"}
    assert props["mode"]["enum"] == ["fast", "exact"] and props["mode"]["default"] == "fast"
    assert params["required"] == ["distance", "unit"]
    assert params["additionalProperties"] is False


def test_parse_docstring_without_args():
    assert parse_docstring("One line.") == ("One line.", {})
    assert parse_docstring(None) == ("", {})


async def test_openai_schema_and_call():
    t = tool(convert)
    schema = t.openai_schema()
    assert schema["type"] == "function" and schema["function"]["name"] == "convert"
    assert schema["function"]["parameters"]["required"] == ["distance", "unit"]
    result = await t(distance=10, unit="km")
    assert result.ok and result.content == "16.09 km"
    assert result.metadata["tool"] == "convert" and t.calls == 1 and t.errors == 0


async def test_sync_function_runs_in_a_thread_and_values_are_serialised():
    @tool(name="stats", description="Summary statistics.")
    def stats(values: list[float]) -> dict:
        return {"n": len(values), "mean": sum(values) / len(values)}

    assert stats.name == "stats" and stats.description == "Summary statistics."
    result = await stats(values=[1, 2, 3])
    assert result.ok and result.content == '{"n": 3, "mean": 2.0}'


async def test_exception_becomes_error_result_counted_and_logged(caplog):
    @tool
    async def broken(x: int) -> str:
        """Always fails."""
        raise ValueError(f"bad value {x}")

    with caplog.at_level(logging.INFO, logger="agentic_infer.tools"):
        result = await broken(x=3)
    assert not result.ok and result.error == "ValueError: bad value 3" and result.content == ""
    assert broken.calls == 1 and broken.errors == 1
    assert any("broken" in r.getMessage() and "ValueError" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("arguments", "fragment"), [
    ({}, "missing required argument 'distance'"),
    ({"distance": "far", "unit": "km"}, "argument 'distance': expected a number"),
    ({"distance": 1, "unit": "furlong"}, "argument 'unit': 'furlong' is not one of"),
    ({"distance": 1, "unit": "km", "precision": 1.5}, "argument 'precision': expected an integer"),
    ({"distance": 1, "unit": "km", "colour": "red"}, "unexpected argument 'colour'"),
    ({"distance": 1, "unit": "km", "tags": ["a", 2]}, "argument 'tags'[1]: expected a string"),
    ({"distance": True, "unit": "km"}, "argument 'distance': expected a number"),
])
async def test_bad_arguments_name_the_argument(arguments, fragment):
    t = tool(convert)
    result = await t(**arguments)
    assert result.error.startswith("ToolArgumentError: ") and fragment in result.error, result.error
    assert t.errors == 1


async def test_lossless_number_conversion():
    t = tool(convert)
    result = await t(distance=10, unit="mile", precision=1.0)
    assert result.ok and result.content == "6.2 mile"


async def test_timeout_becomes_error_result():
    @tool(timeout_s=0.2)
    async def slow() -> str:
        await asyncio.sleep(10)
        return "never"

    start = time.monotonic()
    result = await slow()
    assert time.monotonic() - start < 2
    assert result.error == "TimeoutError: tool 'slow' did not finish within 0.2 s"


async def test_cancellation_propagates():
    @tool
    async def wait_forever() -> str:
        await asyncio.sleep(100)
        return ""

    task = asyncio.ensure_future(wait_forever())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_call_json_and_dispatch():
    t = tool(convert)
    ok = await dispatch([t], "convert", '{"distance": 1, "unit": "km"}')
    assert ok.ok and ok.content == "1.61 km"
    bad_json = await dispatch({"convert": t}, "convert", '{"distance": 1,')
    assert bad_json.error.startswith("ToolArgumentError") and "not valid JSON" in bad_json.error
    not_object = await t.call_json("[1, 2]")
    assert "must be a JSON object" in not_object.error
    unknown = await dispatch([t], "teleport", "{}")
    assert unknown.error == "UnknownToolError: no tool named 'teleport'; available: convert"
    assert t.calls == 3 and t.errors == 2


async def test_subclassing_tool():
    class Echo(Tool):
        name = "echo"
        description = "Repeat the text."
        parameters = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}  # noqa: RUF012

        async def invoke(self, *, text: str) -> ToolResult:
            return ToolResult(content=text, metadata={"length": len(text)})

    echo = Echo()
    result = await echo(text="hi")
    assert result.content == "hi" and result.metadata["length"] == 2 and echo.stats() == {"calls": 1, "errors": 0}


def test_tool_result_helpers_and_validation():
    failed = ToolResult.failure(KeyError("x"), content="partial")
    assert failed.error == "KeyError: 'x'" and not failed.ok
    assert failed.as_observation() == "partial\nKeyError: 'x'"
    assert ToolResult(content="fine").as_observation() == "fine"
    assert ToolResult.from_dict(failed.to_dict()) == failed
    with pytest.raises(ToolError, match="content must be a str"):
        ToolResult(content=42)  # type: ignore[arg-type]


def test_invalid_names_and_annotations_are_config_errors():
    with pytest.raises(ToolError, match="tool name"):
        FunctionTool(lambda: "", name="has space")

    def odd(x: complex) -> str:
        return ""
    with pytest.raises(ToolError, match="cannot derive a JSON schema"):
        FunctionTool(odd)
