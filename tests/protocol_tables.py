"""The small tool table the protocol tests parse against (no real tool module needed)."""

from __future__ import annotations

from pydantic import BaseModel

from tether.core.toolspec import Tool, ToolContext, ToolTable


class ReadArgs(BaseModel):
    filepath: str
    offset: int | None = None
    limit: int | None = None


class WriteArgs(BaseModel):
    filepath: str
    content: str


class EditArgs(BaseModel):
    filepath: str
    old_content: str
    new_content: str


class RunArgs(BaseModel):
    command: str
    stdin: str | None = None
    background: bool = False


def _echo(args: BaseModel, ctx: ToolContext) -> str:
    return repr(args)


def make_table() -> ToolTable:
    return ToolTable(
        [
            Tool(
                "read_file",
                "Read a file with line numbers. Long files are windowed.",
                ReadArgs,
                _echo,
                reads=True,
            ),
            Tool(
                "write_file",
                "Write a whole file.\nCreates parent folders.",
                WriteArgs,
                _echo,
                writes_files=True,
                block_params=("content",),
            ),
            Tool(
                "edit_file",
                "Replace one exact piece of a file.",
                EditArgs,
                _echo,
                writes_files=True,
                block_params=("old_content", "new_content"),
            ),
            Tool(
                "run_cmd",
                "Run a shell command.",
                RunArgs,
                _echo,
                runs_commands=True,
                block_params=("stdin",),
            ),
        ]
    )
