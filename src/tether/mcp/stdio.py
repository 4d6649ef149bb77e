"""The stdio transport: a server as a child process, one JSON message per line.

The process gets a process group of its own, so stopping it stops whatever it started
(an `npx` wrapper and the node process under it). Its stderr is kept (the last lines)
for `/mcp`. Its environment is tether's minus the provider key variables, unless the
entry names one in its `env`. A `wrap` (a project's server: the sandbox) turns the command
line into what is really started (bubblewrap around it); what the wrap holds for the
server (the sandbox's placeholders) is released once the server has exited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ..safety.processes import OWN_HELPERS
from ..safety.shell_session import Launch as Started
from ..store.keys import API_KEY_ENV
from .session import McpError, Receiver

MESSAGE_LIMIT = 32 * 1024 * 1024
"""The longest line read from a server: a bigger message breaks the connection, clearly."""
STDERR_LINES = 40
STOP_GRACE = 2.0


def server_environment(base: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """tether's environment without the provider keys, plus the entry's own variables."""
    keys = {name for names in API_KEY_ENV.values() for name in names}
    env = {k: v for k, v in base.items() if k not in keys}
    env.update(own)
    return env


Wrap = Callable[[list[str], dict[str, str]], AbstractContextManager[Started]]
"""Turns a command line and its environment into what is started (see `ServerSandbox`)."""


@contextlib.contextmanager
def as_it_is(argv: list[str], env: dict[str, str]) -> Iterator[Started]:
    yield Started(argv, env)


class StdioTransport:
    def __init__(self, command: str, args: tuple[str, ...], env: Mapping[str, str], cwd: Path,
                 wrap: Wrap = as_it_is) -> None:
        self.command = command
        self.args = args
        self.env = dict(env)
        self.cwd = cwd
        self.wrap = wrap
        self.process: asyncio.subprocess.Process | None = None
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._tasks: list[asyncio.Task[None]] = []
        self._write_lock = asyncio.Lock()
        self._release: Callable[[], None] | None = None

    async def open(self, receive: Receiver, closed: Callable[[str], None]) -> None:
        try:
            with self.wrap([self.command, *self.args], self.env) as started:
                self.process = await asyncio.create_subprocess_exec(
                    *started.argv, cwd=self.cwd, env=started.env, pass_fds=started.pass_fds,
                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=MESSAGE_LIMIT,
                )
        except OSError as exc:  # the program, or the sandbox refusing (a linked keys file)
            raise McpError(f"could not start {self.command!r}: {exc.strerror or exc}") from None
        self._release = started.release
        OWN_HELPERS.add(self.process.pid)  # not a command's orphan for any run's sweep
        self._tasks = [
            asyncio.ensure_future(self._read_messages(receive, closed)),
            asyncio.ensure_future(self._read_stderr()),
            asyncio.ensure_future(self._release_on_exit()),
        ]

    async def _release_on_exit(self) -> None:
        """A server that exits on its own frees what its start holds, as `aclose` would."""
        assert self.process is not None
        await self.process.wait()
        self._released()

    def _released(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    async def _read_messages(self, receive: Receiver, closed: Callable[[str], None]) -> None:
        assert self.process is not None and self.process.stdout is not None
        reason = ""
        try:
            while True:
                line = await self.process.stdout.readline()
                if not line:
                    break
                message = _parsed(line)
                if message is None:
                    self.stderr.append(f"(not a JSON-RPC message on stdout: {line[:120]!r})")
                    continue
                receive(message)
        except (ValueError, asyncio.LimitOverrunError):
            reason = f"the server sent a message over {MESSAGE_LIMIT // (1024 * 1024)} MiB"
        except OSError as exc:
            reason = f"reading from the server failed: {exc}"
        code = await self._exit_code()
        closed(reason or self._exit_reason(code))

    async def _exit_code(self) -> int | None:
        assert self.process is not None
        try:
            return await asyncio.wait_for(self.process.wait(), STOP_GRACE)
        except asyncio.TimeoutError:  # stdout closed, process alive: it is stopped in aclose
            return None

    def _exit_reason(self, code: int | None) -> str:
        last = f"; its last words: {self.stderr[-1]}" if self.stderr else ""
        if code is None:
            return f"the server closed its output{last}"
        return f"the server exited (code {code}){last}"

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        with contextlib.suppress(ValueError, OSError):
            async for line in self.process.stderr:
                self.stderr.append(line.decode("utf-8", "replace").rstrip()[:500])

    async def send(self, message: dict[str, Any]) -> None:
        process = self.process
        if process is not None and process.returncode is not None:
            # it exited before we spoke (a busy machine sees this first)
            raise McpError(await self._exited_reason(process))
        if process is None or process.stdin is None:
            raise McpError("the server is not running")
        data = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        async with self._write_lock:
            try:
                process.stdin.write(data)
                await process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                # a server that exits as we write closes the pipe first: its exit is
                # the reason worth telling, if it comes
                code = await self._exit_code()
                if code is not None:
                    raise McpError(await self._exited_reason(process)) from None
                raise McpError(f"the server is not reading its input ({exc})") from None

    async def _exited_reason(self, process: asyncio.subprocess.Process) -> str:
        """How it exited, with its last words once its stderr has been read to the end."""
        if len(self._tasks) > 1:
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._tasks[1]), STOP_GRACE)
        return self._exit_reason(process.returncode)

    def negotiated(self, version: str) -> None:
        pass

    def diagnostics(self) -> str:
        return "\n".join(self.stderr)

    async def aclose(self) -> None:
        """Close its input (the polite stop the protocol describes), then the group's
        SIGTERM, then SIGKILL."""
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(OSError, RuntimeError):
                if process.stdin is not None:
                    process.stdin.close()
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, sig)
                try:
                    await asyncio.wait_for(process.wait(), STOP_GRACE)
                    break
                except asyncio.TimeoutError:
                    continue
        if process is not None:  # whatever it left in its group goes too
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            OWN_HELPERS.discard(process.pid)
        self._released()  # killed, even if not yet reaped: nothing of it runs on
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("jsonrpc") == "2.0" else None
