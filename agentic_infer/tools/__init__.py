"""Tools an agent can call: the protocol (`Tool`, `ToolResult`, `@tool`), a Python sandbox, a calculator.

Web search and page fetching live in `agentic_infer.tools.web` (optional extra `web`), retrieval
in `agentic_infer.tools.retrieval`; neither is imported here, so this package stays light.
"""

from agentic_infer.tools.base import FunctionTool, Tool, ToolArgumentError, ToolResult, dispatch, tool
from agentic_infer.tools.calculator import Calculator, evaluate_expression
from agentic_infer.tools.sandbox import PythonSandbox, SandboxConfig, last_error_line

__all__ = [
    "Calculator", "FunctionTool", "PythonSandbox", "SandboxConfig", "Tool", "ToolArgumentError", "ToolResult",
    "dispatch", "evaluate_expression", "last_error_line", "tool",
]
