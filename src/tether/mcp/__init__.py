"""MCP: tools, resources and prompts of Model Context Protocol servers, beside the built-in tools.

config (where servers are declared), trust (which may start), session (JSON-RPC),
stdio and http (the transports), tools (the bridge into the tool table), manager (start-up,
state, reload) and resources (the resource and prompt tools).

MCP around dispatch, in detail:

MCP tools are entries of the same `ToolTable`, so nothing in the loop or dispatch knows about
MCP. `runtime.build_runtime` calls `mcp.setup.attach_mcp`: `config.load_servers` reads the
entries (personal, project, `--mcp-config`), `trust.admit` sorts them (a project server needs a
trusted folder and an approval in `ApprovalStore` matching `ServerConfig.fingerprint` and the
states `entry_files` gives for the project files the entry names; the chat asks about the rest
through `slash/mcp_commands.ask_about_project_servers`), and an `McpManager` holds them. An
admitted project server carries those states (`approved_files`): `McpManager._transport` refuses
to start it once they differ (a sandboxed command rewrote `srv.py`), reloads included, and
`launch.server_launch` decides the program (PATH without the project), the working directory
(the project only for the project's own servers) and the environment (no loader variables into
the project). A project's stdio server starts inside the commands' sandbox: `runtime` hands its
`Sandbox` to `attach_mcp` and `McpManager` as a `launch.ServerSandbox` (a Protocol: mcp imports
no `safety.sandbox`); `McpManager._wrap` probes it (in a thread), refuses the server when a
chosen sandbox cannot start (`insisted_on`), and gives `StdioTransport` a wrap,
`Sandbox.launch(network=True, own_env=...)`: bwrap without `--unshare-net`, the allowed
variables plus the entry's own `env` (`launch.Launch.own`), PATH from `host_path`. The
transport calls the launch's `release` when the server exits or is closed (the placeholders
stay while it runs); `entry_files.project_fingerprint` skips a config file holding exactly its
placeholder text, so one server's sandbox is no change of the project for the next.
`tools.server_label` keeps each server's tool names under a prefix of its own;
`_check_label` starts only the first of two servers with the same label. `Runtime.start` starts the manager first (every server a task of its own under its
`timeout`), does its own provider questions, then waits `mcp_startup_wait` at most.

A ready server's tools become `Tool`s (`mcp.tools.bridged_tool`) whose `schema` is the server's
JSON schema (`Tool.json_schema` returns it instead of the params model's; the params model
`McpArguments` accepts any object) and whose async handler sends `tools/call` through the
session. They carry no `reads`/`writes_files` flags, so `ApprovalPolicy` asks for them like any
call with side effects; `needs_approval=False` only for `autoApprove` names and read-only tools
of a `trusted` server, both from the user's own files. Rules match them by name (wildcards
included) and by `main_arg`, the first required string argument; their `effect` ("a tool of the
MCP server fs, which calls it read-only") is what the approval question says they do. Dispatch
windows the result and records evidence as for any tool; a failure (`McpError`, a dead session)
is a `ToolError`. They set `keeps_full_result`: a result over its cap is saved whole first,
through `Dispatcher.results` (the `ResultStore` seam; `store/result_files.ResultFiles`, one
owner-only folder per run under TETHER_HOME/results, the oldest pruned past 20 runs, over-long
lines made pageable), and the window ends with a note naming the file, its lines and where the
cut begins, to be paged with `read_file`. `ApprovalPolicy.readable` holds this run's folder:
a read-only tool reads there without asking, as inside the project; other runs' folders stay
outside.

`manager.on_change` is `Runtime.set_menu`: whenever tools come or go (start, list_changed,
reload, a failure) the menu is rebuilt. The small profile's `ToolMenu(core=CORE_TOOLS)` defers
them anyway; in the full profile `setup.defers_mcp` (count over `mcp_defer_tools`, or schemas over
a tenth of the window) gives `ToolMenu(defer=is_mcp_tool)`, and `tool_search` is rebuilt so its
description names them. `Runtime.system_prompt` appends `McpManager.prompt_section` (connected
servers, their instructions, capped and escaped).

Transports implement `session.Transport` (`open(receive, closed)`, `send`, `aclose`); a
transport that ends calls `closed`, which fails every pending request at once (a dead server's
call never hangs) and tells the manager (`Session.on_close`), which marks the server failed.
The session answers server `ping`s and `roots/list` (the project root, `Session.root`; the
`roots` capability is declared unless the entry says `"roots": false`) and refuses every other
server request with -32601 (no sampling, no elicitation: a third party neither spends the
user's model nor questions the user).

Streamable HTTP (`http.StreamableHttpTransport`): each POST's answer is read by a task of its
own (`_read_answer`): JSON, or an SSE stream pumped until the answer arrives. A stream that
breaks or ends first is resumed with GET + `Last-Event-ID` from its last event id
(`RESUME_ATTEMPTS`); without one, or when resuming fails, the transport delivers a JSON-RPC
error for that request id itself, so the call fails at once instead of waiting. Sending
`notifications/initialized` starts `listener`, the GET stream the server pushes its own
notifications and requests on (`listening` is set while it is open); 405 ends it quietly,
other refusals are noted in `last_error`, and a stream that ends is reopened from its last
event id, unless it ended `LISTEN_RECONNECTS` times in a row with nothing on it. A 404 for a
request carrying `Mcp-Session-Id` drops the id and the listener and raises `SessionExpired`;
`Session.request` then runs one new handshake (`_renew`: concurrent requests share it,
counted by `_handshakes`) and sends the request again, so an expired session is not a dead
server. `Runtime.aclose` stops the manager: stdin closed, then SIGTERM and SIGKILL to the
stdio server's process group; HTTP sessions get their DELETE.
"""
