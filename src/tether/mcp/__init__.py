"""MCP: tools, resources and prompts of Model Context Protocol servers, beside the built-in tools.

config (where servers are declared), trust (which may start), session (JSON-RPC),
stdio and http (the transports), tools (the bridge into the tool table), manager (start-up,
state, reload) and resources (the resource and prompt tools).
"""
