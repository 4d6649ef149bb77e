"""What each built-in tool accepts: its parameters model, from which its schema and its
validation come.

The models live apart from the handlers so that a start imports neither pydantic nor them: a
tool names its model by where it lives (`Tool.params`, "tether.tools.params:Name"), imported at
the first call or the first request that offers the tool. The handler modules import these names
only to annotate (the chat's warm-up loads this module once it is ready).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from ..core.tool_params import Params
from .limits import DEFAULT_COMMAND_TIMEOUT, DEFAULT_MAP_BUDGET, MAX_COMMAND_TIMEOUT, MAX_MAP_BUDGET

MAX_QUESTIONS = 5
NAME_HELP = "Memory name: 1-64 characters, letters, digits, spaces, '_', '.', '-'."
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


# --- read_file, write_file, delete_file, copy_file, create_directory, list_directory ---


class ReadFileParams(Params):
    filepath: str = Field(description="Path of the file to read.")
    offset: int | None = Field(None, ge=0, description="1-based line number to start at.")
    limit: int | None = Field(None, ge=1, description="Most lines to return (default 400).")


class WriteFileParams(Params):
    filepath: str = Field(description="Path of the file to create or overwrite.")
    content: str = Field(description="The complete new content of the file.")


class DeleteFileParams(Params):
    filepath: str = Field(description="Path of the file to delete.")


class CopyFileParams(Params):
    source: str = Field(description="Path of the file to copy.")
    destination: str = Field(description="Path of the new copy; must not exist yet.")


class CreateDirParams(Params):
    path: str = Field(description="Directory to create, with any missing parents.")


class ListDirParams(Params):
    path: str = Field(".", description="Directory to list.")


# --- git_status, git_diff --------------------------------------------------------------


class GitStatusParams(Params):
    pass


class GitDiffParams(Params):
    path: str | None = Field(
        None, description="File or directory to limit the diff to; omit for the whole repository."
    )


# --- search_in_file -------------------------------------------------------------------


class SearchInFileParams(Params):
    pattern: str = Field(
        description="Python regular expression to search for (all lower case: any case matches)."
    )
    path: str = Field(".", description="File or directory to search.")


# --- edit_file ------------------------------------------------------------------------


class EditFileParams(Params):
    filepath: str = Field(description="Path of the file to edit.")
    old_content: str | None = Field(
        None, description="Exact text to replace; must occur exactly once."
    )
    new_content: str = Field(description="Replacement text.")
    start_anchor: str | None = Field(
        None, description="Instead of old_content: first line to replace, as 'N:hh' from read_file."
    )
    end_anchor: str | None = Field(
        None, description="Last line to replace, as 'N:hh' (default: start_anchor)."
    )


# --- edit_file as the small profile offers it -----------------------------------------


class SimpleEditParams(Params):
    model_config = ConfigDict(extra="allow")  # so a stray argument gets advice, not a bare error

    filepath: str = Field(description="Path of the file to edit.")
    old_content: str = Field(description="Exact text to replace; must occur exactly once.")
    new_content: str = Field(description="Replacement text.")


# --- run_cmd, send_input, end_process -------------------------------------------------


class RunCmdParams(Params):
    command: str = Field(description="Shell command, run with bash -c in the project root.")
    stdin: str | None = Field(
        None,
        description="Text written to the command's input at start (the first answers to its prompts).",
    )
    timeout: int | None = Field(
        None,
        ge=1,
        le=MAX_COMMAND_TIMEOUT,
        description=f"Seconds before the command is killed (default {DEFAULT_COMMAND_TIMEOUT}).",
    )
    keep_running: bool = Field(
        False,
        description=(
            "Let what the command starts in the background (e.g. a server with `&`) keep "
            "running after tether exits. Needs the user's approval every time; redirect its "
            "output to a file."
        ),
    )
    unsandboxed: bool = Field(
        False,
        description=(
            "Run outside the sandbox (network, Unix sockets, writes outside the project and "
            "in .git). Only after the sandbox stopped the command; needs `reason` and the "
            "user's approval."
        ),
    )
    reason: str | None = Field(
        None, description="Why the command must run outside the sandbox (shown to the user)."
    )

    @model_validator(mode="after")
    def _reason_with_unsandboxed(self) -> RunCmdParams:
        if self.unsandboxed and not (self.reason or "").strip():
            raise ValueError("unsandboxed: true needs a reason, shown to the user who approves it")
        return self


class SendInputParams(Params):
    session: str = Field(description="Session id from run_cmd, e.g. 's1'.")
    text: str = Field(description="The answer; a newline is added if missing.")
    eof: bool = Field(
        False,
        description="Close the input after the text, for programs that read until end of input (sort, cat).",
    )
    timeout: int | None = Field(
        None,
        ge=1,
        le=MAX_COMMAND_TIMEOUT,
        description=f"Seconds to wait before the command is killed (default {DEFAULT_COMMAND_TIMEOUT}).",
    )


class EndProcessParams(Params):
    session: str = Field(description="Session id from run_cmd, e.g. 's1'.")


# --- system_info ----------------------------------------------------------------------


class SystemInfoParams(Params):
    pass


# --- get_user_input -------------------------------------------------------------------


class Question(Params):
    question: str = Field(min_length=1, description="The question, complete and specific.")
    options: list[str] = Field(
        default_factory=list,
        description="Optional choices to offer; the user may also answer in their own words.",
    )


class AskParams(Params):
    questions: list[Question] = Field(
        min_length=1,
        max_length=MAX_QUESTIONS,
        description=f"1 to {MAX_QUESTIONS} questions, asked together.",
    )


# --- get_code_skeleton, query_ast_node, repo_map --------------------------------------


class SkeletonParams(Params):
    filepath: str = Field(description="Source file to outline.")


class QueryAstParams(Params):
    filepath: str = Field(description="Source file whose syntax tree to query.")
    query: str = Field(
        description="A tree-sitter S-expression query with @captures, e.g. "
        "(function_definition name: (identifier) @name)."
    )


class RepoMapParams(Params):
    budget: int | None = Field(
        None, ge=32, le=MAX_MAP_BUDGET,
        description=f"Tokens the map may take (default {DEFAULT_MAP_BUDGET}).",
    )
    path: str = Field(".", description="Folder to map (default: the whole project).")
    focus: list[str] = Field(
        default_factory=list,
        description="Names or files to rank higher (those the conversation mentions count anyway).",
    )


# --- the memory tools -----------------------------------------------------------------


class WriteMemoryParams(Params):
    name: str = Field(description=NAME_HELP)
    content: str = Field(description="The complete text to remember (replaces any old content).")


class ReadMemoryParams(Params):
    name: str = Field(description=NAME_HELP)


class MemoryListParams(Params):
    pass


class EditMemoryParams(Params):
    name: str = Field(description=NAME_HELP)
    old_content: str = Field(description="Exact text to replace; must occur exactly once.")
    new_content: str = Field(description="Replacement text.")


class DeleteMemoryParams(Params):
    name: str = Field(description=NAME_HELP)


# --- search_web, get_url, call_api ----------------------------------------------------


class SearchWebParams(Params):
    query: str = Field(description="What to find, in plain words; names and identifiers as written.")


class GetUrlParams(Params):
    url: str = Field(description="An http:// or https:// URL to read with GET.")
    raw: bool = Field(False, description="The body as received instead of HTML turned into text.")


class CallApiParams(Params):
    method: Method = Field("GET", description="HTTP method; anything but GET always asks the user.")
    url: str = Field(description="The http:// or https:// endpoint.")
    headers: dict[str, str] | None = Field(None, description="Request headers.")
    body: dict[str, Any] | list[Any] | str | None = Field(
        None, description="A JSON value (sent as application/json) or text."
    )


# --- submit_plan ----------------------------------------------------------------------


class SubmitPlanParams(Params):
    plan: str = Field(
        description="What you will change, where, and how you will check it, in a few lines."
    )


# --- spawn_agent, spawn_agents --------------------------------------------------------


class AgentJob(Params):
    task: str = Field(description="The self-contained job and what its report must say.")
    context: str = Field("", description="What it needs from this conversation: it sees nothing else.")
    agent: str = Field("", description="An agent definition's name; empty: a general agent.")


class SpawnAgentArgs(AgentJob):
    model: str = Field("", description="Another model for this agent; empty: the current one.")


class SpawnAgentsArgs(Params):
    agents: list[AgentJob] = Field(description="The jobs, each run by its own agent.", min_length=1)


# --- tool_search ----------------------------------------------------------------------


class ToolSearchParams(Params):
    query: str = Field(
        description="'select:name1,name2' to load tools by name, or keywords to find tools."
    )
