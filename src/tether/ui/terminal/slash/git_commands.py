"""/diff and /commit: the project's uncommitted changes, and committing them as the user's
own commit with a message the model drafts and the user approves (or edits).

Git runs only through `GitOps` (the hardened plumbing of store/git_repo.py), in a worker
thread, so nothing the repository configures runs and the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import re

from rich.text import Text

from tether.core.messages import Message, TextDelta
from tether.providers.base import RequestOptions
from tether.store.git_commit import changed_files
from tether.store.git_repo import GitCommandError

from ..keyboard import Choices
from ..terminal_ui import shown
from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command

DIFF_LINES_SHOWN = 400
"""Lines of /diff printed; the rest is counted."""
DRAFT_DIFF_CHARS = 12_000
"""Characters of the diff the model sees when it drafts a message."""
DRAFT_MAX_TOKENS = 300
COMMIT = Choices("Commit with this message? [y]es / [n]o / [e]dit it (Esc: no) ",
                 {"y": "yes", "n": "no", "e": "edit", "escape": "no"}, "Press y, n or e (Esc: no).")
_THINKING = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_FENCE = re.compile(r"^```[\w-]*\n(.*?)\n```$", re.DOTALL)


async def _uncommitted(ctx: CommandContext, when_clean: str) -> str:
    """The diff of every uncommitted change; "" (with `when_clean`, or the reason git cannot
    give one here, said) when there is none."""
    try:
        text = await asyncio.to_thread(ctx.runtime.git.uncommitted)
    except (GitCommandError, OSError) as exc:
        ctx.say(f"No diff: {exc}", "warning")
        return ""
    if not text.strip():
        ctx.say(when_clean)
        return ""
    return text


@command("diff", "/diff", "the uncommitted changes of the project's repository")
async def diff(ctx: CommandContext, arg: str) -> None:
    text = await _uncommitted(ctx, "No uncommitted changes.")
    if text:
        print_diff(ctx, text)


def print_diff(ctx: CommandContext, text: str) -> None:
    lines = text.splitlines()
    for line in lines[:DIFF_LINES_SHOWN]:
        ctx.console.print(shown(line, _diff_style(line)))
    if len(lines) > DIFF_LINES_SHOWN:
        ctx.console.print(Text(f"[... {len(lines) - DIFF_LINES_SHOWN} more diff lines ...]",
                               style="status"))
    files = changed_files(text)
    ctx.say(f"{len(files)} file(s) changed: " + ", ".join(files))


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---", "diff --git", "index ")):
        return "bold"
    if line.startswith("+"):
        return "diff.add"
    if line.startswith("-"):
        return "diff.del"
    return "tool" if line.startswith("@@") else ""


@command("commit", "/commit [MESSAGE]",
         "commit the uncommitted changes; without a message the model drafts one for your yes")
async def commit(ctx: CommandContext, arg: str) -> None:
    text = await _uncommitted(ctx, "Nothing to commit.")
    if not text:
        return
    files = changed_files(text)
    ctx.say(f"{len(files)} file(s) to commit: " + ", ".join(files))
    message = arg or await _approved_draft(ctx, text)
    if not message:
        return
    try:
        sha = await asyncio.to_thread(ctx.runtime.git.commit_uncommitted, message)
    except (GitCommandError, OSError) as exc:
        ctx.say(f"Not committed: {exc}", "error")
        return
    ctx.say(f"Committed {sha[:8]}: {message.strip().splitlines()[0]}")


async def _approved_draft(ctx: CommandContext, diff_text: str) -> str:
    """The model's draft once the user says yes, or the message the user edits it into;
    "" when the user says no (or leaves the message empty) or the draft fails."""
    await ctx.ready()
    try:
        draft = await ctx.run_cancellable(draft_message(ctx, diff_text))
    except Exception as exc:  # a failed request is one line; nothing is committed
        ctx.say(f"The model could not draft a message ({exc}); use /commit MESSAGE.", "warning")
        return ""
    if not draft:
        ctx.say("No message was drafted; use /commit MESSAGE.", "warning")
        return ""
    ctx.console.print(Text("Commit message:", style="bold"))
    ctx.console.print(shown(draft))
    answer = await ctx.choose(COMMIT)
    if answer == "y":
        return draft
    if answer == "e":
        try:  # typed after the e: what follows it is meant
            draft = (await ctx.ask_line("Commit message: ", default=draft, fresh=False)).strip()
        except (KeyboardInterrupt, EOFError):
            draft = ""
        if draft:
            return draft
    ctx.say("Not committed.")
    return ""


async def draft_message(ctx: CommandContext, diff_text: str) -> str:
    """A commit message for `diff_text`, asked of the model without tools."""
    runtime = ctx.runtime
    request = [Message.user(draft_prompt(diff_text))]
    options = RequestOptions(runtime.model, max_tokens=DRAFT_MAX_TOKENS)
    text = ""
    async for event in runtime.provider.stream(request, None, options):
        if isinstance(event, TextDelta):
            text += event.text
    return clean_message(text)


def draft_prompt(diff_text: str) -> str:
    shown_diff = diff_text[:DRAFT_DIFF_CHARS]
    cut = "" if len(diff_text) <= DRAFT_DIFF_CHARS else "\n[... the rest of the diff is cut ...]"
    return ("Write a git commit message for the changes below: a subject line of at most 72 "
            "characters in the imperative mood, then, if it helps, a blank line and a short "
            "body. Reply with the message only, no quotes or code fences.\n\n"
            f"<diff>\n{shown_diff}{cut}\n</diff>")


def clean_message(text: str) -> str:
    """The model's reply as a message: reasoning, a code fence and surrounding blank lines
    removed."""
    text = _THINKING.sub("", text).strip()
    fenced = _FENCE.match(text)
    return (fenced.group(1) if fenced else text).strip()
