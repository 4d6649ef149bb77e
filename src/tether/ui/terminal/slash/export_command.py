"""/export: the conversation as JSON or Markdown, written where nothing is lost by surprise.

Without a path the file goes under TETHER_HOME/exports, never into the project. A path the
user names is relative to the project; an existing file there is replaced only after a yes,
and a folder outside the project is created only after a yes (inside it, missing folders
are simply made).
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.host import is_within, make_parents

from .context import CommandContext
from .table import CommandTable

COMMANDS = CommandTable()
command = COMMANDS.command

EXPORTS_FOLDER = "exports"
"""The folder under TETHER_HOME that /export writes to by default."""


def export_target(where: str, fmt: str, session_id: str, root: Path, home: Path) -> Path:
    """The file /export writes: `where` (relative to the project, `~` expanded; an existing
    folder gets a file named after the session), or TETHER_HOME/exports/tether-ID.FMT."""
    if not where:
        return home / EXPORTS_FOLDER / f"tether-{session_id}.{fmt}"
    path = Path(where).expanduser()
    path = path if path.is_absolute() else root / path
    return path / f"tether-{session_id}.{fmt}" if path.is_dir() else path


def missing_folder(path: Path) -> Path | None:
    """The highest folder above `path` that does not exist yet (None when its folder does)."""
    missing = None
    for folder in path.parents:
        if os.path.lexists(folder):
            break
        missing = folder
    return missing


@command("export", "/export json|md [PATH]",
         "write this conversation to a file (default: under TETHER_HOME/exports)")
async def export(ctx: CommandContext, arg: str) -> None:
    fmt, _, where = arg.partition(" ")
    if fmt not in ("json", "md"):
        ctx.say("Use /export json [path] or /export md [path].", "warning")
        return
    runtime = ctx.runtime
    target = export_target(where.strip(), fmt, ctx.sessions.record.id, runtime.root, runtime.home)
    if not await _may_write(ctx, target, runtime.root, runtime.home):
        ctx.say("Not exported.")
        return
    try:
        if _inside(target, runtime.home):  # tether's own folders there are owner-only
            make_parents(target, private=True)
        written = ctx.sessions.export(fmt, target)
    except OSError as exc:
        ctx.say(f"Could not export: {exc}", "error")
        return
    ctx.say(f"Wrote {written}.")


async def _may_write(ctx: CommandContext, target: Path, root: Path, home: Path) -> bool:
    """Ask before replacing a file and before making a folder outside the project (and
    outside TETHER_HOME, whose folders are tether's own)."""
    if os.path.lexists(target):
        return await ctx.confirm(f"{target} exists. Replace it?")
    folder = missing_folder(target)
    if folder is None or _inside(folder, root) or _inside(folder, home):
        return True
    return await ctx.confirm(f"{folder} does not exist and is outside the project. Create it?")


def _inside(path: Path, base: Path) -> bool:
    """Containment as the kernel sees it: `..` and symbolic links resolved first."""
    return is_within(str(path.resolve()), str(base.resolve()))


