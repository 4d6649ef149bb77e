"""A small stdio MCP server of our own, for the faults real servers do not show on demand.

    python mcp_fake_server.py MODE

MODE: `ok` (tools over two pages: echo, die, huge, add_tool, env; garbage lines on stdout
before each answer), `hang` (reads initialize and never answers), `exit` (says why on
stderr and exits), `version` (answers initialize with a protocol version nobody speaks),
`ask` (`ok` plus ask_client, which sends the client a request of the server's own, such as
sampling/createMessage, and shows the answer).
"""

from __future__ import annotations

import json
import os
import sys

EXTRA_TOOLS: list[dict] = []


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tool(tool_name: str, description: str, **properties: dict) -> dict:
    return {"name": tool_name, "description": description,
            "inputSchema": {"type": "object", "properties": properties,
                            "required": list(properties)}}


PAGES = [
    [tool("echo", "Echo the text back.\x1b[31m", text={"type": "string"}),
     tool("die", "Exit in the middle of the call.")],
    [tool("huge", "Answer with a very long text.", size={"type": "integer"}),
     tool("add_tool", "Add a tool and say the list changed."),
     tool("env", "Show an environment variable.", name={"type": "string"})],
]


def answer(request: dict) -> dict | None:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake", "version": "1"},
                "instructions": "Use echo for echoes."}
    if method == "tools/list":
        page = int(params.get("cursor") or 0)
        result: dict = {"tools": PAGES[page] + (EXTRA_TOOLS if page == 1 else [])}
        if page + 1 < len(PAGES):
            result["nextCursor"] = str(page + 1)
        return result
    if method == "tools/call":
        return call(params.get("name"), params.get("arguments") or {})
    return None


def call(name: str, arguments: dict) -> dict:
    if name == "echo":
        return {"content": [{"type": "text", "text": arguments["text"]}]}
    if name == "die":
        sys.stderr.write("fake: dying on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "huge":  # numbered lines, so a page of the saved whole shows where it is
        rows = "".join(f"row {i:07d}\n" for i in range(int(arguments["size"]) // 12 + 1))
        return {"content": [{"type": "text", "text": rows[: int(arguments["size"])]}]}
    if name == "ask_client":
        return {"content": [{"type": "text", "text": json.dumps(ask_client(arguments["method"]))}]}
    if name == "add_tool":
        EXTRA_TOOLS.append(tool("added", "A tool added later."))
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return {"content": [{"type": "text", "text": "added"}]}
    if name == "env":
        return {"content": [{"type": "text", "text": repr(os.environ.get(arguments["name"]))}]}
    return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}


def ask_client(method: str) -> dict:
    """Send the client a request of our own and give back its whole answer."""
    send({"jsonrpc": "2.0", "id": "from-server", "method": method, "params": {}})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == "from-server" and "method" not in message:
            return message
    return {}


def main(mode: str) -> None:
    if mode == "ask":
        PAGES[1].append(tool("ask_client", "Send the client a request; show its answer.",
                             method={"type": "string"}))
    if mode == "exit":
        sys.stderr.write("fake: cannot start, no config\n")
        sys.exit(2)
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue
        if mode == "hang":
            continue
        if mode == "version" and request["method"] == "initialize":
            send({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "1999-01-01",
                                                                   "capabilities": {}}})
            continue
        sys.stdout.write("this is not JSON-RPC\n")  # a stray print a server left in
        result = answer(request)
        if result is None:
            send({"jsonrpc": "2.0", "id": request["id"],
                  "error": {"code": -32601, "message": "no such method"}})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main(sys.argv[1])
