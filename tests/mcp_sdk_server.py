"""A server written with the official Python SDK (the `test` extra), over stdio:
one tool with structured output, one prompt, one resource."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-test", instructions="Add numbers with add.")


@server.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> dict:
    """Add two whole numbers."""
    return {"sum": a + b}


@server.prompt()
def review(topic: str) -> str:
    """Ask for a review of a topic."""
    return f"Please review {topic}."


@server.resource("memo://today")
def today() -> str:
    """Today's memo."""
    return "Buy milk."


if __name__ == "__main__":
    server.run("stdio")
