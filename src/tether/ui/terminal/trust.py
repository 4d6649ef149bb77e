"""Folder trust and [a]lways answers: which allow rules count, and where a new one is saved."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tether.core.messages import ToolCall
from tether.engine.run_options import RunOptions
from tether.hooks.config import PROJECT_HOOKS_FILE, project_declares_hooks
from tether.host import StateFileError
from tether.safety.permissions import (
    PROJECT_FILE,
    USER_FILE,
    Rule,
    TrustStore,
    save_rule,
    too_broad_to_trust,
)
from tether.safety.project_config import (
    AGENT_FOLDERS,
    DEFAULT_FALLBACKS,
    INSTRUCTIONS_FILE,
    MCP_FILE,
    OVERRIDE_FILE,
    SKILL_FOLDERS,
)

if TYPE_CHECKING:  # the runtime is built behind the first prompt: its import waits for that
    from tether.runtime import Runtime

    from .asking import Say

Confirm = Callable[[str], Awaitable[bool]]
"""Asks a yes/no question (one key; Enter, Esc, Ctrl-C and Ctrl-D say no): True for yes."""


async def nobody_to_ask(question: str) -> bool:
    return False


class FolderTrust:
    """Whether this run trusts the project folder (`options.trusted`, which the runtime's
    rules read), asked at start and remembered in TETHER_HOME."""

    def __init__(self, options: RunOptions, say: Say, confirm: Confirm | None = None) -> None:
        """`confirm` asks the trust question; without one, nobody can say yes."""
        self.options = options
        self.say = say
        self.confirm = confirm or nobody_to_ask
        self.store = TrustStore(options.home)
        self.asked = False

    def trusted_before(self) -> bool:
        """Trusted in an earlier session (one-shot mode needs --trust instead)."""
        return self.store.is_trusted(self.options.root)

    async def ask(self, rebuild: Callable[[], Awaitable[None]] | None = None) -> None:
        """A project's own configuration (allow rules, hooks, MCP servers, skills, agents,
        instructions) counts only once the user trusts the folder. Asked before the runtime is
        built, so no warning about what trust would change comes first; `rebuild` is for a
        runtime built already, so that a yes applies at once."""
        root = self.options.root
        has_rules, has_hooks = (root / PROJECT_FILE).exists(), project_declares_hooks(root)
        if self.asked or self.options.trusted or not (has_rules or has_hooks) or self.trusted_before():
            return
        self.asked = True  # a no is not asked again in the same start
        self.say("This folder brings configuration of its own, which counts only once you trust "
                 "the folder:", "warning")
        for line in trust_enables(root):
            self.say("  " + line, "warning")
        if await self.confirm("Trust this folder?"):
            saved = self.remember()
            self.options.trusted = True
            if rebuild is not None:
                await rebuild()
            self.say("Trusted; its configuration applies from now on." if saved
                     else "Trusted for this session only; its configuration applies until you "
                     "exit.", "info")
        else:
            self.say("Not trusted: its allow rules, hooks, MCP servers, skills, agents and "
                     "instructions are ignored (its deny rules still apply).", "info")

    def remember(self) -> bool:
        """Save that the user trusts this folder; a home that cannot be written is reported
        (the trust still holds for this session) and gives False."""
        try:
            self.store.trust(self.options.root)
        except StateFileError as exc:  # a broken trusted.json is kept, not replaced
            self.say(f"Could not save the trust: {exc}", "warning")
            return False
        except OSError as exc:
            self.say(f"Could not save the trust in {self.store.path} ({exc.strerror or exc}).",
                     "warning")
            return False
        return True

    def keep_rules_trusted(self, file_is_ours: bool) -> None:
        """A rules file the user's own answers created is theirs: trust the folder so the rules
        count next time. A file that came with the project needs an explicit yes."""
        if self.options.trusted:
            return
        if file_is_ours:
            self.remember()
            self.options.trusted = True
        else:
            self.say(f"This folder is not trusted, so its {PROJECT_FILE} counts only after you "
                     "trust it (asked at start).", "warning")


TRUST_ENABLES: tuple[tuple[tuple[str, ...], str], ...] = (
    ((PROJECT_FILE,), "allow rules: the tool calls they name run without asking"),
    ((PROJECT_HOOKS_FILE,), "hooks: commands run around tool calls and requests"),
    ((MCP_FILE,), "MCP servers: programs started on your machine (each asked about first)"),
    (SKILL_FOLDERS, "skills: instructions and script tools the model can load"),
    (AGENT_FOLDERS, "sub-agent definitions: their prompts and tools"),
    ((OVERRIDE_FILE, INSTRUCTIONS_FILE, *DEFAULT_FALLBACKS),
     "instructions sent to the model with every request"),
)
"""What trusting a folder lets count, by the project paths that bring it (hooks are only
named when the file declares some)."""


def trust_enables(root: Path) -> list[str]:
    """One line per kind of configuration this folder has that trusting it would enable:
    the paths that bring it, and what it does."""
    lines = []
    for paths, what in TRUST_ENABLES:
        present = [p for p in paths if (root / p).exists()]
        if PROJECT_HOOKS_FILE in present and not project_declares_hooks(root):
            present.remove(PROJECT_HOOKS_FILE)
        if present:
            lines.append(f"{', '.join(present)}: {what}")
    return lines


class AlwaysAnswer:
    """An [a]lways answer to an approval question: an allow rule for exactly that call,
    saved where it cannot trust too much, and applied at once."""

    def __init__(self, trust: FolderTrust, runtime: Callable[[], Runtime], say: Say) -> None:
        self.trust = trust
        self.options = trust.options
        self.runtime = runtime
        self.say = say

    def __call__(self, call: ToolCall) -> str:
        """Save the rule; the answer says where it went (the project's rules, the user's own,
        or this session only), or is empty when the call was allowed just once."""
        text = self.exact_rule(call)
        if not text:
            return ""
        rules_file, source = self.rules_file()
        first_rules = source == "project" and not rules_file.exists()
        runtime = self.runtime()
        try:
            rule = Rule.parse(text, source, str(rules_file))
            save_rule(rules_file, "allow", rule)
        except (OSError, ValueError) as exc:
            self.say(f"Could not save the rule ({exc}); it holds for this session only.", "error")
            runtime.add_session_rule("allow", text)
            return f"{text} for this session only"
        if source == "project":
            self.trust.keep_rules_trusted(first_rules)
        if source == "project" and not self.options.trusted:
            # saved, but the file counts only once the folder is trusted: this session's rule
            runtime.add_session_rule("allow", text)
        else:
            runtime.add_saved_rule("allow", rule)
        return f"{rule} in {rules_file}"

    def exact_rule(self, call: ToolCall) -> str:
        """The rule text naming exactly this call, or "" (with the reason shown) when none can."""
        tool = self.runtime().table.get(call.name)
        value = tool.main_value(call.arguments) if tool else ""
        if tool is None or tool.main_arg == "session" or any(ch in value for ch in "*?"):
            # the rule language has no escape for wildcards, and a session id says nothing
            # about what is sent to it: no rule could name exactly this call
            self.say("No exact rule can name this call; allowed this once.", "warning")
            return ""
        from tether.safety.approval import guarded_write  # the runtime has it loaded by now

        guarded = [guarded_write(self.options.root, self.options.home, p)
                   for p in tool.path_values(call.arguments).values()] if tool.writes_files else []
        kind = next((g for g in guarded if g is not None), None)
        if kind is not None:
            self.say(f"Writes into {kind.what} always ask; allowed this once.", "warning")
            return ""
        return f"{call.name}({value})" if value else call.name

    def rules_file(self) -> tuple[Path, str]:
        """Where an [a]lways rule goes: the project's rules, unless that would create them in
        (and so trust) a folder too broad to trust as a side effect, such as $HOME."""
        project = self.options.root / PROJECT_FILE
        if self.options.trusted or project.exists():
            return project, "project"
        try:
            user_home = Path.home()
        except RuntimeError:  # no $HOME and no account entry: still refuse / and folders of repos
            user_home = Path(self.options.root.anchor or "/")
        why = too_broad_to_trust(self.options.root, user_home)
        if why is None:
            return project, "project"
        user_file = self.options.home / USER_FILE
        self.say(f"This folder is not made trusted by an [a]lways answer ({why}): the rule goes "
                 f"to your own rules in {user_file}, which apply in every folder.", "warning")
        return user_file, "user"
