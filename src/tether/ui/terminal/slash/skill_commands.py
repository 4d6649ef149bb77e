"""`/skills` lists the skills found; `/skill NAME` loads one into the conversation by hand."""

from __future__ import annotations

import asyncio

from rich.text import Text

from tether.core.messages import Message
from tether.core.messages import Text as TextPart
from tether.core.toolspec import ToolError

from ..terminal_ui import shown
from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command

NONE_FOUND = ("No skills found. Put them in skills/<name>/SKILL.md (a trusted project's "
              "skills, .tether/skills, .agents/skills or .claude/skills) or TETHER_HOME/skills.")


@command("skills", "/skills", "the skills found: where, what for, loaded or not")
async def list_skills(ctx: CommandContext, arg: str) -> None:
    book = ctx.runtime.skills
    if book is None:
        ctx.say(NONE_FOUND)
        return
    for skill in book.catalog.skills:
        state = "loaded" if skill.name in book.loaded else "not loaded"
        line = Text(f"  {skill.name}", style="bold")
        line.append(f" ({skill.source}, {state})", style="")
        ctx.console.print(line)
        ctx.console.print(Text("    ").append_text(shown(skill.meta.description)))


@command("skill", "/skill NAME", "load a skill into the conversation; its scripts become tools")
async def load_skill(ctx: CommandContext, arg: str) -> None:
    if not arg:
        ctx.say("Use /skill NAME (/skills lists them).", "warning")
        return
    await ctx.ready()
    try:
        text = await asyncio.to_thread(ctx.runtime.load_skill, arg)  # --help may run
    except ToolError as exc:
        ctx.say(str(exc), "warning")
        return
    conv = ctx.sessions.conv
    if ctx.runtime.skills is not None:  # the conversation's own set: a short menu offers them
        conv.loaded_tools.update(ctx.runtime.skills.tools_of.get(arg, []))
    # A user message and its acknowledgement: the history keeps alternating for every API.
    conv.messages += [
        Message.user(f"[/skill {arg}]\n{text}"),
        Message("assistant", [TextPart(f"Skill {arg} is loaded; I will follow it.")]),
    ]
    ctx.say(f"Skill {arg} loaded.")
