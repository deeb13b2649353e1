"""The MCP server: the memory tools behind tools/list and tools/call, on any transport.

Built on the SDK's low-level `Server`: the tools' arguments are pydantic models
whose JSON schemas are advertised as they are enforced, and every failure the
model can act on comes back as an `isError` result worded for it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, ListToolsResult, TextContent
from mcp.types import Tool as ToolListing
from pydantic import ValidationError

from .. import __version__
from ..domain import MnemoError
from ..providers.base import ModelError
from .tools import TOOLS, Caller, Tool

log = logging.getLogger(__name__)

Resolve = Callable[[ServerRequestContext[Any, Any]], Awaitable[Caller]]
"""Who is calling: from the HTTP request (its API key), or the configured user (stdio)."""

INSTRUCTIONS = (
    "mnemo is the person's long-term memory: first-person facts about them, kept across "
    "conversations and assistants. Call recall before answering when what you know about them "
    "could matter; call remember when they tell you something lasting about themselves; call "
    "forget when they say a memory is wrong or no longer true. They can see, correct and audit "
    "everything stored."
)


CODE = "mnemo/code"  # where a tool's error carries its code, in the result's _meta


def build_server(resolve: Resolve) -> Server[Any]:
    tools = {t.name: t for t in TOOLS}
    listing = ListToolsResult(tools=[_listing(t) for t in TOOLS])

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> ListToolsResult:
        return listing

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        tool = tools.get(params.name)
        if tool is None:  # not the tool's failure but the request's: a protocol error
            raise MCPError(INVALID_PARAMS, f"no tool {params.name!r}; the tools are: {', '.join(tools)}")
        try:
            args = tool.args.model_validate(params.arguments or {})
        except ValidationError as exc:
            return _failed(f"Invalid arguments for {tool.name}: {_problems(tool, exc)}.", "invalid_request")
        caller = await resolve(ctx)
        try:
            result = await tool(caller, args)
        except MnemoError as exc:
            return _failed(_sentence(str(exc)), exc.code)
        except ModelError as exc:
            return _failed(f"The model failed: {exc}", exc.code)
        except Exception:
            log.exception("the %s tool failed", tool.name)
            return _failed(
                "mnemo could not do this: an internal error (the server's log has the details).", "internal"
            )
        data = result.model_dump(mode="json")
        text = json.dumps(data, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    return Server(
        "mnemo",
        version=__version__,
        title="mnemo memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=lambda name: tools[name].args.model_json_schema() if name in tools else None,
    )


def _listing(tool: Tool) -> ToolListing:
    return ToolListing(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=_inline(tool.args.model_json_schema()),
        output_schema=_inline(tool.result.model_json_schema()),
        annotations=tool.annotations,
    )


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its `$defs` written in place: some clients do not follow `$ref`."""
    defs = schema.pop("$defs", {})

    def expand(node: Any) -> Any:
        if isinstance(node, list):
            return [expand(n) for n in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**expand(defs[ref.removeprefix("#/$defs/")]), **expand(rest)}
        return {k: expand(v) for k, v in node.items()}

    return expand(schema)


def _problems(tool: Tool, exc: ValidationError) -> str:
    """Each validation error as 'where: what', worded for a model to correct its call."""
    found = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        kind = error["type"]
        if kind == "missing":
            found.append(f"{where} is required")
        elif kind == "extra_forbidden":
            found.append(f"{where!r} is not one of its arguments ({', '.join(tool.args.model_fields)})")
        elif kind == "model_type":
            found.append("the arguments must be a JSON object")
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
            found.append(f"{where}: {message} (got {json.dumps(error.get('input'), default=str)[:80]})")
    return "; ".join(found)


def _failed(message: str, code: str) -> CallToolResult:
    """A tool's error, worded for the model; its stable code (docs/reference/errors.md) in the
    result's `_meta`, for a program."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True, _meta={CODE: code})


def _sentence(text: str) -> str:
    text = text.strip() or "failed"
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
