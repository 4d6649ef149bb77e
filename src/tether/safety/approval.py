"""The approval policy dispatch consults: permission rules, path checks, then the default.

Reads run; anything with side effects asks; deny rules always win; `--auto`
allows everything a deny rule does not forbid. A path outside the project root
asks even when a rule would allow it (except under --auto).

Every path a call names (each argument its tool declares in `path_params`) is
checked, not only its main argument: copy_file's destination and
search_in_file's path meet the same deny rules as any other path, and an allow
rule must cover all of them.

Every path is judged as the kernel resolves it (`paths.resolve_path`), the
resolution the tools then use (`ToolContext.resolve`).

Five checks stand above every allow rule and --auto: tether's saved keys
(`credentials.json` in the state directory, by name or by identity) are never
read or written through a tool; when a sandbox was chosen but cannot run,
every command asks before it runs unconfined; a file tool's write into git's
own files (`.git/config`, hooks, `info/attributes`: settings that make git run
programs) or into tether's own settings (anything in the state directory: the
user's rules, trusted folders, config; and every project rules file,
`.permissions.json`: rules that would widen what later runs allow) always asks,
and where nobody can ask (one-shot mode) such a write is refused unless an allow
rule names that exact path; a command started with `keep_running` (its
background processes outlive tether) always asks; and while a rules file cannot
be read (its deny rules may be missing) every call with side effects asks, and
under --auto is refused.

A command the model asks to run outside a working sandbox (`unsandboxed:
true`) asks too, showing its reason, unless escalation is switched on
(`sandbox_escalation`, `--allow-unsandboxed`) and an allow rule names the
command (a bare `run_cmd` or `run_cmd(*)` names none).

The web rules (`web_guard`) stand there as well: call_api with a method other
than GET always asks, and once content from the web or an MCP server entered the
user's request every call that can send data out asks, in every stage of the
request and in its sub-agents (unless `web_content_asks` is off).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.messages import ToolCall
from ..core.toolspec import Tool, ToolTable
from ..core.verdict import GateVerdict
from ..host import is_within, resolve_path, resolved_forms, writes_git_files
from .permissions import PROJECT_FILE, Rule, RuleSet, RuleVerdict, ToolKinds
from .sandbox import Sandbox
from .secret_files import CREDENTIALS_FILE, SecretFiles
from .shell_parse import split_command
from .web_guard import WebTaint, method_verdict, named_hosts, taint_verdict

SHELL_TOOL = "run_cmd"
INPUT_TOOL = "send_input"
SANDBOXED_TOOLS = (SHELL_TOOL, INPUT_TOOL)
"""The tools whose commands the sandbox confines (end_process only stops one)."""
SEARCH_TOOL = "search_in_file"
COMMAND_TEXT_PARAMS = ("command", "stdin", "text")
"""Arguments of the shell tools whose text reaches a shell."""


@dataclass
class ApprovalPolicy:
    root: Path
    rules: RuleSet
    auto: bool = False
    home: Path | None = None
    """tether's state directory (TETHER_HOME): its saved keys are out of every tool's reach."""
    sandbox: Sandbox | None = None
    """The sandbox commands run in; when it was asked for but cannot run, commands ask."""
    tools: ToolTable | None = None
    """The tool table: what each tool reads, writes or runs, so that a deny rule naming one
    tool covers the same access through the others. None: only the called tool is known."""
    can_ask: bool = True
    """Whether a person can answer "ask" (False in one-shot mode)."""
    escalation: bool = False
    """Whether an allow rule that names a command lets it run outside the sandbox unasked."""
    runs_unconfined: Callable[[str], bool] = lambda session: False
    """Whether a shell session runs outside the sandbox: input sent to it runs there too."""
    web_taint: WebTaint = field(default_factory=WebTaint)
    """Whether outside content entered this user request: calls that can send data out then
    ask. Shared with the web tools and the MCP servers, which mark it."""
    web_content_asks: bool = True
    """False (setting web_content_asks) lets allow rules and --auto decide those calls again."""
    readable: tuple[Path, ...] = ()
    """Folders outside the project that a tool which only reads may read without asking:
    this run's saved results (store/result_files.py)."""

    def check(self, call: ToolCall, tool: Tool) -> GateVerdict:
        verdict = self._check_call(call, tool)
        if tool.batch_of is None or verdict.action == "deny":
            return verdict
        items = [self._check_call(*item) for item in batch_items(call, tool, self.tools)]
        return batch_verdict(verdict, items)

    def _check_call(self, call: ToolCall, tool: Tool) -> GateVerdict:
        kinds = self.tool_kinds(tool)
        decisions = [self._decide(tool, checked, kinds) for checked in checked_values(call, tool)]
        denied = next((d for d in decisions if d.action == "deny"), None)
        if denied is not None:
            return denied
        guarded = (
            self.secrets_verdict(call, tool)
            or self.sandbox_verdict(tool)
            or self.guarded_files_verdict(call, tool)
            or keep_running_verdict(call, tool)
            or self.rules_file_verdict(tool)
            or self.escalation_verdict(call, tool)
            or method_verdict(call, tool)
            or self.web_verdict(call, tool)
        )
        if guarded is not None:
            return guarded
        unverifiable = self.unverifiable(call, tool)
        if self.auto:
            if unverifiable:  # --auto turns "ask" into "run": deny rules must still be able to see it
                return GateVerdict("deny", f"{unverifiable}, so deny rules cannot check it")
            return GateVerdict("allow")
        outside = self.outside_paths(call, tool)
        if outside:
            return GateVerdict("ask", f"path outside the project: {', '.join(outside)}")
        if unverifiable:
            return GateVerdict("ask", unverifiable)
        if all(d.action == "allow" for d in decisions):
            return GateVerdict("allow")
        if tool.read_only or tool.needs_approval is False:
            return GateVerdict("allow")
        return GateVerdict("ask", describe_effect(tool))

    def secrets_verdict(self, call: ToolCall, tool: Tool) -> GateVerdict | None:
        """Deny a call that names the saved keys; ask before a search that would read them."""
        if self.home is None:
            return None
        if tool.name in SANDBOXED_TOOLS:
            texts = [call.arguments.get(k) for k in COMMAND_TEXT_PARAMS]
            confined = self._confined(call, tool)
            if any(isinstance(t, str) and self._mentions_secrets(t, confined) for t in texts):
                return GateVerdict("deny", (
                    f"the command names tether's state directory, which holds the saved keys "
                    f"({CREDENTIALS_FILE}) that no tool may read or change. This check reads the "
                    "command text only; --sandbox hides the state directory from every command"
                ))
            return None
        paths = list(tool.path_values(call.arguments).values())
        if any(is_secret_path(self.root, self.home, p) for p in paths):
            return GateVerdict("deny", (
                f"tether's saved keys ({CREDENTIALS_FILE} in the state directory) are never "
                "read or written through a tool"
            ))
        if tool.name == SEARCH_TOOL and any(contains_home(self.root, self.home, p) for p in paths):
            return GateVerdict("ask", (
                "the search would read tether's state directory, which holds saved keys"
            ))
        return None

    def web_verdict(self, call: ToolCall, tool: Tool) -> GateVerdict | None:
        """Once outside content is in the request, a call that can send data out asks."""
        taint = self.web_taint
        if not taint.entered or not self.web_content_asks:
            return None
        confined = tool.runs_commands and self._confined(call, tool)
        return taint_verdict(call, tool, taint, confined=confined)

    def may_reach(self, host: str, port: int) -> bool:
        """Whether an allow rule for a web tool names this host, so the web tools may reach
        it though it resolves to a loopback or private address (netguard)."""
        return (host.lower(), port) in named_hosts(self.rules.allow)

    def guarded_files_verdict(self, call: ToolCall, tool: Tool) -> GateVerdict | None:
        """A write into files that make things run or widen what is allowed (git's own files,
        tether's own settings) asks, whatever the rules and --auto say. Nobody to ask:
        refused, unless an allow rule names exactly that path."""
        if not tool.writes_files:
            return None
        written = tool.path_values(call.arguments, written_only=bool(tool.written_params))
        hits = {p: kind for p in written.values() if (kind := guarded_write(self.root, self.home, p))}
        if not hits:
            return None
        shown = ", ".join(hits)
        kind = next(iter(hits.values()))
        if self.can_ask:
            return GateVerdict("ask", f"writes {kind.what} ({shown}): {kind.danger}")
        if all(self._exact_allow_rule(tool.name, p) for p in hits):
            return None
        return GateVerdict("deny", (
            f"{shown} is in {kind.what}, where {kind.danger}; only an allow rule naming "
            "exactly that path lets one-shot mode write it"
        ))

    def _exact_allow_rule(self, tool_name: str, path: str) -> bool:
        """An allow rule for this tool whose pattern, without wildcards, is this very path."""
        wanted = _spellings(self.root, path)
        return any(
            rule.matches_tool(tool_name) and rule.pattern is not None and not rule.has_wildcard
            and _spellings(self.root, rule.pattern) == wanted
            for rule in self.rules.allow
        )

    def _mentions_secrets(self, text: str, confined: bool) -> bool:
        """Any mention of the state directory, not just of the keys file: `cat ~/.tether/cred*`
        names no file, yet reads it. Inside a working sandbox the directory is hidden anyway."""
        if self.home is None or confined:
            return False
        return any(spelling in text for spelling in home_spellings(self.root, self.home))

    def _confined(self, call: ToolCall, tool: Tool) -> bool:
        """Whether the call's command runs inside a working sandbox."""
        sandbox = self.sandbox
        return (sandbox is not None and sandbox.available() and not asks_unsandboxed(call, tool)
                and not self._input_to_unconfined(call, tool))

    def sandbox_verdict(self, tool: Tool) -> GateVerdict | None:
        """Ask before a command when the sandbox it should run in cannot start."""
        sandbox = self.sandbox
        if sandbox is None or tool.name not in SANDBOXED_TOOLS or not sandbox.insisted_on():
            return None
        return GateVerdict("ask", (
            f"the {sandbox.mode} sandbox cannot be used ({sandbox.problem}), so the command "
            "would run unconfined; install bubblewrap or choose --sandbox off"
        ))

    def rules_file_verdict(self, tool: Tool) -> GateVerdict | None:
        """Fail closed while a rules file cannot be read: its deny rules may be missing, so
        a call with side effects asks, and under --auto is refused."""
        if not self.rules.unreadable or tool.read_only or tool.needs_approval is False:
            return None
        why = f"{'; '.join(self.rules.unreadable)}, so its deny rules may be missing"
        if self.auto:
            return GateVerdict("deny", f"{why}; under --auto such calls are refused until "
                                       "the file is fixed")
        return GateVerdict("ask", why)

    def may_read(self, path: Path) -> bool:
        """Whether no deny rule covers reading `path` (a file a search found inside a folder
        the call named): a deny `read(secret/*)` keeps a search of `.` out of `secret/`."""
        tool = self.tools.get(SEARCH_TOOL) if self.tools is not None else None
        kinds = self.tool_kinds(tool) if tool is not None else {}
        decision = self.rules.decide(
            SEARCH_TOOL, str(path), is_path=True, root=self.root, kinds=("read",), tools=kinds
        )
        return decision.action != "deny"

    def escalation_verdict(self, call: ToolCall, tool: Tool) -> GateVerdict | None:
        """Ask before a command runs outside a working sandbox, unless escalation is on and
        an allow rule names the command."""
        sandbox = self.sandbox
        if sandbox is None or not sandbox.available():
            return None
        if self._input_to_unconfined(call, tool):
            return None if self.escalation else GateVerdict("ask", (
                f"sends input to a command running OUTSIDE the {sandbox.confinement} sandbox, "
                "where it can reach the network, every file you can write and your environment; "
                "without asking (--auto, one-shot) this needs --allow-unsandboxed "
                "(setting sandbox_escalation)"
            ))
        if not asks_unsandboxed(call, tool):
            return None
        command = str(call.arguments.get("command", ""))
        if self.escalation and self._named_by_allow_rule(command, tool):
            return None
        reason = " ".join(str(call.arguments.get("reason") or "").split())
        return GateVerdict("ask", (
            f"OUTSIDE the {sandbox.confinement} sandbox: network, every file you can write, "
            "your environment; "
            f"the model's reason: {reason}. Without asking (--auto, one-shot) this needs an "
            "allow rule naming the command plus --allow-unsandboxed (setting sandbox_escalation)"
        ))

    def _input_to_unconfined(self, call: ToolCall, tool: Tool) -> bool:
        return tool.name == INPUT_TOOL and self.runs_unconfined(str(call.arguments.get("session", "")))

    def _named_by_allow_rule(self, command: str, tool: Tool) -> bool:
        naming = RuleSet([r for r in self.rules.allow if names_something(r)], self.rules.deny)
        decision = naming.decide(
            tool.name, command, runs_commands=True, root=self.root, tools=self.tool_kinds(tool)
        )
        return decision.action == "allow"

    def tool_kinds(self, tool: Tool) -> ToolKinds:
        """What every tool of the table does (read, write, run), the called one included."""
        kinds = self.tools.access() if self.tools is not None else {}
        return {**kinds, tool.name: tool.access}

    def _decide(self, tool: Tool, checked: Checked, kinds: ToolKinds) -> RuleVerdict:
        return self.rules.decide(
            tool.name, checked.value, runs_commands=tool.runs_commands and not checked.is_path,
            is_path=checked.is_path, root=self.root, kinds=checked.kinds, tools=kinds,
        )

    def unverifiable(self, call: ToolCall, tool: Tool) -> str:
        """Why a command cannot be checked against the deny rules ("" when it can, or none apply)."""
        if not tool.runs_commands or not self._deny_rules_for(tool):
            return ""
        args = call.arguments
        if tool.name == SHELL_TOOL:
            if args.get("stdin"):
                return "the command is given input on stdin"
            split = split_command(str(args.get("command", "")))
            if split.opaque:
                return "the command cannot be split into simple parts (" + ", ".join(split.reasons) + ")"
            return ""
        if args.get("text"):
            return "input sent to a running command"
        return ""

    def _deny_rules_for(self, tool: Tool) -> bool:
        kinds = self.tool_kinds(tool)
        return any(
            r.applies(tool.name, ("run",), kinds, deny=True) or r.matches_tool(SHELL_TOOL)
            for r in self.rules.deny
        )

    def outside_paths(self, call: ToolCall, tool: Tool) -> list[str]:
        readable = self.readable if tool.read_only else ()
        return [p for p in tool.path_values(call.arguments).values()
                if not is_inside(self.root, p)
                and not any(is_inside(f, p, base=self.root) for f in readable)]


def denial(policy: ApprovalPolicy, tool_name: str, arguments: dict[str, Any]) -> str:
    """Why the rules deny a call of `tool_name` with `arguments` ("" when they do not): a
    batch's handler asks this of each item before it runs it."""
    tool = policy.tools.get(tool_name) if policy.tools is not None else None
    verdict = policy.check(ToolCall("", tool_name, arguments), tool) if tool is not None else None
    if verdict is None or verdict.action != "deny":
        return ""
    return verdict.reason or f"{tool_name} is denied"


def batch_items(call: ToolCall, tool: Tool, tools: ToolTable | None) -> list[tuple[ToolCall, Tool]]:
    """A batch call's items (`Tool.batch_of`), each as a call of the item tool."""
    if tool.batch_of is None or tools is None:
        return []
    name, argument = tool.batch_of
    item_tool, items = tools.get(name), call.arguments.get(argument)
    if item_tool is None or not isinstance(items, list):
        return []
    return [(ToolCall(call.id, name, item), item_tool) for item in items if isinstance(item, dict)]


def batch_verdict(whole: GateVerdict, items: list[GateVerdict]) -> GateVerdict:
    """A batch call judged by its items too: refused when the rules deny every item; run
    without asking when the call's own verdict allows it or the rules allow (or deny) each
    item; otherwise the call's own verdict. A denied item among others that run is refused
    by the handler (`denial`)."""
    if not items:
        return whole
    if all(v.action == "deny" for v in items):
        return GateVerdict("deny", f"every item: {items[0].reason}")
    if whole.action == "allow" or all(v.action != "ask" for v in items):
        return GateVerdict("allow", whole.reason)
    return whole


def keep_running_verdict(call: ToolCall, tool: Tool) -> GateVerdict | None:
    """A command whose processes may outlive tether asks every time: no rule and no --auto
    says yes for the user (in one-shot mode, where nobody can answer, it is refused)."""
    wanted = call.arguments.get("keep_running")
    # Anything but a plain "no" asks: validation may read "yes" or 1 as true.
    if tool.name != SHELL_TOOL or wanted is None or wanted is False:
        return None
    return GateVerdict("ask", (
        "keep_running: what this command starts in the background keeps running after "
        "tether exits"
    ))


@dataclass(frozen=True)
class Checked:
    """One value of a call that the rules judge."""

    value: str
    kinds: tuple[str, ...]
    """What the call does with it: ("read",) or ("write", ...) for a path, ("run",) for a
    command, () for any other value (search_in_file's pattern)."""
    is_path: bool


def checked_values(call: ToolCall, tool: Tool) -> list[Checked]:
    """The main argument and every path the call names, each with what the call does to it."""
    accesses = {name: kinds for name, _, kinds in tool.path_accesses(call.arguments)}
    main_is_path = tool.main_arg in tool.path_params
    main_kinds = accesses.get(tool.main_arg or "", ("read",)) if main_is_path else (
        ("run",) if tool.runs_commands else ()
    )
    values = [Checked(tool.main_value(call.arguments), main_kinds, main_is_path)]
    return values + [
        Checked(value, kinds, True)
        for name, value, kinds in tool.path_accesses(call.arguments)
        if name != tool.main_arg
    ]


def asks_unsandboxed(call: ToolCall, tool: Tool) -> bool:
    """Whether a run_cmd call asks to run outside the sandbox, read exactly as its handler
    will read it (so `"unsandboxed": "yes"` cannot slip past as text)."""
    if tool.name != SHELL_TOOL:
        return False
    try:
        params = tool.params.model_validate(call.arguments)
    except ValueError:  # pydantic's ValidationError: dispatch refuses such a call anyway
        return False
    return getattr(params, "unsandboxed", False) is True


def names_something(rule: Rule) -> bool:
    """A rule whose pattern names the command itself: `run_cmd(npm install)` or `run_cmd(npm *)`,
    not `run_cmd(*)`, nor `run_cmd(*-*)`, which matches any command with a dash in it."""
    if rule.pattern is None:
        return False
    words = rule.pattern.split()
    return bool(words) and not any(c in words[0] for c in "*?")


def is_inside(root: Path, path: str, *, base: Path | None = None) -> bool:
    """True when `path` (relative to `base`, root by default, or absolute) stays inside root
    as the kernel resolves it, with and without following a last symlink. A call's relative
    path always starts at the project root, so checking it against another folder (a readable
    results folder) passes the project root as `base`."""
    try:
        forms = resolved_forms(path, str(base if base is not None else root))
        real_root = resolve_path(str(root), "/")
    except (ValueError, OSError):  # a path the OS cannot represent, a symlink loop
        return False
    return all(is_within(form, real_root) for form in forms)


def _spellings(root: Path, path: str) -> tuple[str, ...]:
    """The normalized path and its kernel resolutions: two paths are the same path only
    when all of them agree."""
    absolute = os.path.normpath(os.path.join(root, os.path.expanduser(path)))
    try:
        return (absolute, *resolved_forms(path, str(root)))
    except (ValueError, OSError):
        return (absolute,)


@dataclass(frozen=True)
class GuardedFiles:
    """Files whose every write asks: what they are and why."""

    what: str
    danger: str


GIT_FILES = GuardedFiles(
    "git's own files", "git settings and hooks there can make git run programs"
)
OWN_SETTINGS = GuardedFiles(
    "tether's own settings",
    "rules, trusted folders and settings there decide what later runs may do without asking",
)


def guarded_write(root: Path, home: Path | None, path: str) -> GuardedFiles | None:
    """Which guarded files a write to `path` would change, if any (git's first)."""
    if writes_git_files(root, path):
        return GIT_FILES
    if writes_own_settings(root, home, path):
        return OWN_SETTINGS
    return None


def writes_own_settings(root: Path, home: Path | None, path: str) -> bool:
    """Whether `path` (as written or as the kernel resolves it) is a project rules file, at
    any depth (a subfolder is a project of its own when tether starts there, and trust of
    its parent covers it), or lies in tether's state directory (the user's rules, trusted
    folders, config.toml, sessions): the model changing them would change what later runs
    allow. A project's hooks file (`.tether/settings.json`) is one too: its hooks are commands.
    A path the OS cannot represent: the careful answer."""
    spellings = _spellings(root, path)
    if any(os.path.basename(form).lower() == PROJECT_FILE for form in spellings):
        return True
    if any(_is_hooks_file(form) for form in spellings):
        return True
    return home is not None and SecretFiles(home).holds(path, root)


def _is_hooks_file(form: str) -> bool:
    parts = form.replace("\\", "/").lower().rsplit("/", 2)
    return parts[-2:] == [".tether", "settings.json"]


def is_secret_path(root: Path, home: Path, path: str) -> bool:
    """True when `path` is a credentials file inside `home`, by name, symlink or hard link."""
    return SecretFiles(home).guards(path, root)


def contains_home(root: Path, home: Path, path: str) -> bool:
    """True when the directory `path` is `home` or one of its ancestors."""
    return SecretFiles(home).held_below(path, root)


def home_spellings(root: Path, home: Path) -> set[str]:
    """Ways a command may name the state directory: absolute, ~/..., relative, by variable."""
    spellings = {".tether", "TETHER_HOME", str(home)}
    with contextlib.suppress(OSError, RuntimeError):
        spellings.add(str(home.resolve()))
    with contextlib.suppress(ValueError, RuntimeError):
        spellings.add("~/" + home.relative_to(Path.home()).as_posix())
    relative = os.path.relpath(home, root)
    if not relative.startswith(".."):
        spellings.add(relative)
    return {s for s in spellings if s not in ("", ".", "~/.")}


def describe_effect(tool: Tool) -> str:
    if tool.effect:
        return tool.effect
    if tool.runs_commands:
        return "it runs a command"
    if tool.writes_files:
        return "it changes files"
    if tool.network:
        return "it uses the network"
    return "it has side effects"
