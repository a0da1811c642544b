"""A Python MCP server. Traps: isError=True in this docstring."""

from mcp import types


def helper(is_error=True):  # a default value, not an argument
    return is_error


# {"isError": True} in a comment
class Server:
    async def call_tool(self, name, arguments):
        """Returns {"isError": True} on failure."""
        if name not in TOOLS:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"unknown tool {name}")],
                isError=True,
            )
        if not arguments:
            return {"content": [], "isError": True}
        result = {"content": []}
        result["isError"] = True
        self.last = dict(isError=False)
        return result


def anthropic_block(tool_use_id):
    return {"type": "tool_result", "tool_use_id": tool_use_id, "is_error": True}


status = types.CallToolResult(content=[], isError=False)


def is_failure(result):
    match result:
        case types.CallToolResult(is_error=True) | {"isError": True}:
            return True
    return False
