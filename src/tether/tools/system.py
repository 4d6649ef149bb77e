"""get_system_info: what the machine is doing, so the model can reason about load and space."""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tether.core.toolspec import Tool, ToolContext, ToolOutput

from .limits import params_named

if TYPE_CHECKING:
    from .params import SystemInfoParams

CPU_SAMPLE_SECONDS = 0.3
"""Both the machine's and each process's CPU use are measured over this window."""
TOP_PROCESSES = 5


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _cpu_lines(usage: float) -> list[str]:
    import psutil  # imported when asked for: not at start-up

    lines = [f"CPU: {psutil.cpu_count(logical=True)} logical cores, {usage:.0f}% in use"]
    if hasattr(os, "getloadavg"):
        one, five, fifteen = os.getloadavg()
        lines.append(f"Load average: {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min)")
    return lines


def _memory_lines() -> list[str]:
    import psutil  # imported when asked for: not at start-up

    mem = psutil.virtual_memory()
    swap = psutil.swap_memory()
    return [
        f"Memory: {_size(mem.used)} used of {_size(mem.total)} "
        f"({mem.percent:.0f}%), {_size(mem.available)} available",
        f"Swap: {_size(swap.used)} used of {_size(swap.total)}",
    ]


def _disk_line(root: Path) -> str:
    import psutil  # imported when asked for: not at start-up

    try:
        disk = psutil.disk_usage(str(root))
    except OSError as exc:
        return f"Disk ({root}): unavailable ({exc.strerror or exc})"
    return (
        f"Disk ({root}): {_size(disk.used)} used of {_size(disk.total)} "
        f"({disk.percent:.0f}%), {_size(disk.free)} free"
    )


def _sample_processes() -> tuple[float, list[dict]]:
    """Machine CPU use and a per-process snapshot, CPU measured over the same short window."""
    import psutil  # imported when asked for: not at start-up

    procs = list(psutil.process_iter(["pid", "name", "memory_info"]))
    psutil.cpu_percent(None)
    for proc in procs:
        try:
            proc.cpu_percent(None)
        except psutil.Error:
            pass
    time.sleep(CPU_SAMPLE_SECONDS)
    usage = psutil.cpu_percent(None)
    rows = []
    for proc in procs:
        try:
            cpu = proc.cpu_percent(None)
        except psutil.Error:
            continue  # it ended meanwhile, or is not ours to look at
        mem = proc.info.get("memory_info")
        rows.append(
            {"pid": proc.pid, "name": proc.info.get("name") or "?", "cpu": cpu,
             "rss": mem.rss if mem else 0}
        )  # fmt: skip
    return usage, rows


def _top(rows: list[dict], key: str, title: str) -> list[str]:
    best = sorted(rows, key=lambda r: r[key], reverse=True)[:TOP_PROCESSES]
    lines = [title]
    for r in best:
        lines.append(f"  {r['pid']:>7}  {r['cpu']:5.1f}% CPU  {_size(r['rss']):>10}  {r['name']}")
    return lines


def system_info(root: Path) -> str:
    usage, rows = _sample_processes()
    lines = [
        f"OS: {platform.system()} {platform.release()} ({platform.machine()})",
        f"Python: {sys.version.split()[0]} ({sys.executable})",
        *_cpu_lines(usage),
        *_memory_lines(),
        _disk_line(root),
        *_top(rows, "cpu", "Top processes by CPU:"),
        *_top(rows, "rss", "Top processes by memory:"),
    ]
    return "\n".join(lines)


def get_system_info(args: SystemInfoParams, ctx: ToolContext) -> ToolOutput:
    text = system_info(ctx.root)
    return ToolOutput(text, summary=text.splitlines()[2] if text else "")


SYSTEM_TOOLS: list[Tool] = [
    Tool(
        name="get_system_info",
        description=(
            "Show the machine's OS and Python version, CPU count and load, memory, disk use of "
            "the project's filesystem, and the top processes by CPU and by memory."
        ),
        params=params_named("SystemInfoParams"),
        handler=get_system_info,
        reads=True,
    )
]
