"""Running one hook command: `bash -c COMMAND` in the project root, the event as JSON on
stdin, under its timeout, inside the sandbox when commands run in one.

Every process a hook starts carries the run's marker (`processes.CommandProcesses`), so a
hook that times out is stopped with everything it started, and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..host import host_program
from ..safety.processes import CommandProcesses, stop_processes
from ..safety.shell_session import Launch, Launcher

OUTPUT_CAP = 64_000
"""Characters of a hook's stdout and stderr kept (each)."""
HOOK_ENV_KEYS = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "SHELL")
HOOK_ENV_PREFIXES = ("LC_",)


@dataclass(frozen=True)
class HookRun:
    """How one hook command ended."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    start_error: str = ""
    """Why the command could not be started ("" when it started)."""

    @property
    def started(self) -> bool:
        return not self.start_error


def hook_environment(env: Mapping[str, str], root: Path) -> dict[str, str]:
    """A small environment (no provider keys) plus the project folder (project_variables)."""
    kept = {k: v for k, v in env.items() if k in HOOK_ENV_KEYS or k.startswith(HOOK_ENV_PREFIXES)}
    return {**kept, **project_variables(root)}


def project_variables(root: Path) -> dict[str, str]:
    """The project folder under tether's name and the one Claude Code's hooks read; kept
    inside the sandbox too (its allowlist knows neither)."""
    return {"TETHER_PROJECT_DIR": str(root), "CLAUDE_PROJECT_DIR": str(root)}


class HookRunner:
    """Starts hook commands, each in a session of its own, and stops what a late one left."""

    def __init__(self, root: Path, env: Mapping[str, str], launcher: Launcher) -> None:
        """`launcher` is the one commands run through (the sandbox, whatever its mode): no
        hook starts any other way."""
        self.root = root
        self.env = hook_environment(env, root)
        self.launcher = launcher
        self.processes = CommandProcesses()
        self._ids = itertools.count(1)

    async def run(self, command: str, payload: dict[str, Any], timeout: float) -> HookRun:
        sid = f"hook{next(self._ids)}"
        argv = [host_program("bash", self.root) or "bash", "-c", command]
        env = {**self.env, **self.processes.environment(sid)}
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8", "replace")
        try:
            with self.launcher.launch(argv, env) as launch:
                try:
                    return await self._start_and_wait(sid, launch, data, timeout)
                finally:
                    launch.release()
        except OSError as exc:  # the sandbox refused to start (e.g. the keys file is linked)
            return HookRun(None, start_error=str(exc))

    async def _start_and_wait(self, sid: str, launch: Launch, data: bytes, timeout: float) -> HookRun:
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv, cwd=self.root, env={**launch.env, **project_variables(self.root)},
                pass_fds=launch.pass_fds,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,
            )
        except OSError as exc:
            return HookRun(None, start_error=f"{exc.strerror or exc}: {launch.argv[0]}")
        except ValueError as exc:  # a NUL byte in the command or the environment
            return HookRun(None, start_error=str(exc))
        self.processes.started(sid, proc.pid)
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), timeout)
        except asyncio.TimeoutError:
            await self._stop(sid, proc)
            return HookRun(None, timed_out=True)
        except BaseException:  # cancelled: nothing it started outlives the call
            await asyncio.shield(self._stop(sid, proc))
            raise
        else:
            await self._stop_leftovers(sid)
        finally:
            self.processes.forget(sid)
        return HookRun(proc.returncode, _text(out), _text(err))

    async def _stop(self, sid: str, proc: asyncio.subprocess.Process) -> None:
        await stop_processes(lambda: self.processes.members(sid), self.processes.reap_adopted)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()

    async def _stop_leftovers(self, sid: str) -> None:
        """A hook's background processes (`sleep 100 &`) do not outlive it."""
        if self.processes.members(sid, leader=False):
            await stop_processes(lambda: self.processes.members(sid, leader=False),
                                 self.processes.reap_adopted)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")[:OUTPUT_CAP]

