"""`/mcp`: the attached MCP servers, their tools and resources, reload, prompts; and the
question that starts a project's server the first time."""

from __future__ import annotations

import shlex

from tether.core.toolspec import ToolError
from tether.mcp.manager import answer_source
from tether.mcp.resources import list_resources, parse_prompt_arguments, prompt_list, prompt_text
from tether.mcp.setup import McpSetup

from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command

USAGE = "/mcp [tools|resources|reload|prompt SERVER NAME [key=value ...]]"


def _setup(ctx: CommandContext) -> McpSetup | None:
    setup = ctx.runtime.mcp
    if setup is None or not (setup.manager.servers or setup.waiting):
        ctx.say("No MCP servers are declared (.mcp.json in the project, TETHER_HOME/mcp.json, "
                "or --mcp-config FILE).")
        return None
    return setup


@command("mcp", USAGE, "MCP servers: state, tools, resources, reload, prompts")
async def mcp(ctx: CommandContext, arg: str) -> None:
    setup = _setup(ctx)
    if setup is None:
        return
    word, _, rest = arg.partition(" ")
    if word == "":
        show_servers(ctx, setup)
    elif word == "tools":
        for line in setup.manager.tool_lines() or ["No MCP tools are attached."]:
            ctx.say(line)
    elif word == "resources":
        ctx.say(await list_resources(setup.manager))
    elif word == "reload":
        await reload(ctx, setup)
    elif word == "prompt":
        await run_prompt(ctx, setup, rest)
    else:
        ctx.say(f"Usage: {USAGE}", "warning")


def show_servers(ctx: CommandContext, setup: McpSetup) -> None:
    for status in setup.manager.statuses():
        error = f" · {status['error']}" if status["error"] else ""
        ctx.say(f"{status['name']} · {status['transport']} · {status['state']} · "
                f"{status['tools']} tools{error}")
    for server in setup.waiting:
        ctx.say(f"{server.name} · {server.transport} · not approved (restart tether to be asked)")


async def reload(ctx: CommandContext, setup: McpSetup) -> None:
    ctx.say("Restarting the MCP servers…")
    await setup.manager.reload()
    await setup.manager.wait_ready(max(s.config.timeout for s in setup.manager.servers.values())
                                   if setup.manager.servers else 0)
    show_servers(ctx, setup)


async def run_prompt(ctx: CommandContext, setup: McpSetup, rest: str) -> None:
    """The prompt's messages become the next request, sent now."""
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        ctx.say(f"/mcp prompt: {exc}", "warning")
        return
    if len(words) < 2:
        for line in await prompt_list(setup.manager) or ["No MCP server offers prompts."]:
            ctx.say(line)
        return
    try:
        text = await prompt_text(setup.manager, words[0], words[1], parse_prompt_arguments(words[2:]))
    except (ValueError, ToolError) as exc:
        ctx.say(f"/mcp prompt: {exc}", "warning")
        return
    await ctx.turn(text, source=answer_source(words[0]))


async def ask_about_project_servers(ctx: CommandContext) -> None:
    """A trusted project's servers that were never approved: asked once each, by entry."""
    setup = ctx.runtime.mcp
    if setup is None:
        return
    for server in list(setup.waiting):
        because = setup.asked_because.get(server.name)
        ctx.say(f"This project's .mcp.json declares the MCP server {server.name!r}: "
                f"{server.describe()}" + (f" (approved before, but {because})" if because else ""),
                "warning")
        if await ctx.confirm("Start it now and whenever this entry and the files it runs are unchanged?"):
            problem = setup.approve(server)
            ctx.say(problem or f"Approved; {server.name!r} is starting.", "warning" if problem else "info")
        else:
            ctx.say(f"Not started: {server.name!r}.")
