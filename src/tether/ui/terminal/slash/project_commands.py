"""/init and /review: one read-only turn each (engine/read_only.py), built in.

/init: an AGENTS.md drafted from a read-only look at the project, written after a yes.

The draft is one model turn that may only read (engine/read_only.py), handed the facts plain
code read first (engine/project_brief.py). It runs in a conversation of its own, so the chat's
history does not carry the draft. The diff against the file there now is shown and one key
answers; nothing is written without a y, and only a regular file (never through a symbolic
link a repository may have put there) is replaced.

/review: the diff of the working tree (or of a commit range) with a review instruction, in
the chat's conversation so the findings can be acted on next; the model may read the
files, never change them. Git runs through `GitOps` (hardened: nothing the repository
configures runs), in a worker thread.
"""

from __future__ import annotations

import asyncio
import difflib
import os

from tether.core.conversation import Conversation
from tether.engine.loop import TurnResult
from tether.engine.project_brief import init_request, read_text
from tether.engine.read_only import read_only_turn
from tether.host import atomic_write_text
from tether.safety.project_config import INSTRUCTIONS_FILE
from tether.store.git_commit import changed_files
from tether.store.git_ops import GitOps
from tether.store.git_repo import GitCommandError

from .context import CommandContext
from .git_commands import clean_message, print_diff
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command

CURRENT_BYTES = 256_000
"""An AGENTS.md larger than this is left alone."""
REVIEW_DIFF_CHARS = 40_000
"""Characters of the diff /review sends; the rest is cut at a line end and the cut named."""
REVIEW_READ_ONLY = ("/review only reads: say what should change in your review instead of "
                    "changing it")
REVIEW_INSTRUCTION = """\
/review: review {what}. The diff:

```diff
{diff}
```
{cut}
Read the files around the changes where the diff alone does not settle it (you cannot \
change anything now). Report, most serious first: bugs, behaviour that breaks or is left \
out, security problems, missing or wrong tests; then smaller points. For each: the file \
and line, what is wrong, and the fix. Say plainly if you find nothing wrong."""
INIT_READ_ONLY = ("/init only reads: it drafts AGENTS.md as its answer and the user decides "
                  "whether to write it. Read what you need and answer with the file")


def file_diff(name: str, old: str, new: str) -> str:
    """A git-style diff of one file's text (the header /diff's printer reads)."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 f"a/{name}", f"b/{name}")
    return f"diff --git a/{name} b/{name}\n" + "".join(
        line if line.endswith("\n") else line + "\n" for line in lines)


def finished_answer(ctx: CommandContext, result: TurnResult | None, what: str) -> str:
    """The turn's answer; "" (said why) when it was stopped, failed or came back empty."""
    if result is None:
        ctx.say(f"Stopped: {what} was not written.")
        return ""
    text = clean_message(result.text)
    if result.stop_reason != "end_turn" or not text:
        why = result.error or f"the turn ended with {result.stop_reason}"
        ctx.say(f"No draft ({why}); {what} was not written.", "warning")
        return ""
    return text


@command("init", "/init",
         "draft an AGENTS.md from a read-only look at the project; shows the diff, asks first")
async def init(ctx: CommandContext, arg: str) -> None:
    target = ctx.runtime.root / INSTRUCTIONS_FILE
    if os.path.islink(target) or (os.path.lexists(target) and not target.is_file()):
        ctx.say(f"{INSTRUCTIONS_FILE} here is a symbolic link or not a regular file; /init "
                "replaces only a plain file.", "warning")
        return
    current = read_text(target, CURRENT_BYTES)
    if current is None and os.path.lexists(target):
        ctx.say(f"{INSTRUCTIONS_FILE} could not be read (larger than {CURRENT_BYTES:,} bytes?); "
                "it is left alone.", "warning")
        return
    await ctx.ready()
    request = await asyncio.to_thread(init_request, ctx.runtime.root, current)
    result = await ctx.run_cancellable(read_only_turn(
        ctx.runtime.loop, Conversation(), request, by="/init", reason=INIT_READ_ONLY))
    draft = finished_answer(ctx, result, INSTRUCTIONS_FILE)
    if not draft:
        return
    await offer_file(ctx, draft.rstrip("\n") + "\n", current)


async def offer_file(ctx: CommandContext, draft: str, current: str | None) -> None:
    """Show the change to AGENTS.md and write it on a y."""
    if current is not None and draft.strip() == current.strip():
        ctx.say(f"{INSTRUCTIONS_FILE} already says this; nothing to write.")
        return
    print_diff(ctx, file_diff(INSTRUCTIONS_FILE, current or "", draft))
    verb = "Replace" if current is not None else "Write"
    if not await ctx.confirm(f"{verb} {INSTRUCTIONS_FILE} with this? [y]es / [n]o "):
        ctx.say(f"{INSTRUCTIONS_FILE} was not written.")
        return
    target = ctx.runtime.root / INSTRUCTIONS_FILE
    if os.path.islink(target):  # put there while the user read the diff
        ctx.say(f"{INSTRUCTIONS_FILE} became a symbolic link; it was not written.", "warning")
        return
    await asyncio.to_thread(atomic_write_text, target, draft)
    problems = ctx.runtime.reload_instructions()  # the next request reads the new file
    skipped = target in ctx.runtime.instructions.skipped
    ctx.say(f"Wrote {INSTRUCTIONS_FILE}." + (" It is read once this folder is trusted."
                                            if skipped else ""))
    for problem in problems:
        ctx.say(problem, "warning")


@command("review", "/review [RANGE]",
         "review the uncommitted changes, or a commit range (main..HEAD), without changing files")
async def review(ctx: CommandContext, arg: str) -> None:
    spec = arg.strip()
    what = f"the commits {spec}" if spec else "the uncommitted changes of the working tree"
    try:
        diff = await asyncio.to_thread(review_diff, ctx.runtime.git, spec)
    except (GitCommandError, ValueError, OSError) as exc:
        ctx.say(f"No review: {exc}", "warning")
        return
    if not diff.strip():
        ctx.say(f"Nothing to review: {what} change nothing.")
        return
    files = changed_files(diff)
    ctx.say(f"Reviewing {what}: {len(files)} file(s).")
    await ctx.ready()
    await ctx.run_cancellable(read_only_turn(
        ctx.runtime.loop, ctx.sessions.conv, review_request(what, diff),
        by="/review", reason=REVIEW_READ_ONLY))


def review_diff(git: GitOps, spec: str) -> str:
    return git.range_diff(spec) if spec else git.uncommitted()


def review_request(what: str, diff: str) -> str:
    shown, cut = bounded_diff(diff, REVIEW_DIFF_CHARS)
    return REVIEW_INSTRUCTION.format(what=what, diff=shown, cut=cut)


def bounded_diff(diff: str, limit: int) -> tuple[str, str]:
    """The diff's head within `limit` characters, cut at a line end, and a note naming what
    was cut ("" when it fits): the characters, the files left out or shown in part."""
    if len(diff) <= limit:
        return diff.rstrip("\n"), ""
    shown = diff[:diff.rfind("\n", 0, limit) + 1 or limit]
    whole, seen = changed_files(diff), changed_files(shown)
    left_out = [name for name in whole if name not in seen]
    partly = seen[-1:] if not diff[len(shown):].startswith("diff --git") else []
    parts = [f"[... the diff is cut here: {len(diff) - len(shown):,} of {len(diff):,} "
             "characters are not shown"]
    if partly:
        parts.append(f"; {partly[0]} is shown in part")
    if left_out:
        parts.append(f"; not shown at all: {', '.join(left_out)}")
    parts.append(". Read those files for the rest ...]\n")
    return shown.rstrip("\n"), "".join(parts)
