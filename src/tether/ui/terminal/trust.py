"""Folder trust and [a]lways answers: which allow rules count, and where a new one is saved."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from tether.core.messages import ToolCall
from tether.hooks.config import PROJECT_HOOKS_FILE, project_declares_hooks
from tether.runtime import RunOptions, Runtime
from tether.safety.approval import guarded_write
from tether.safety.permissions import (
    PROJECT_FILE,
    USER_FILE,
    Rule,
    TrustStore,
    save_rule,
    too_broad_to_trust,
)
from tether.store.statefile import StateFileError

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

    def trusted_before(self) -> bool:
        """Trusted in an earlier session (one-shot mode needs --trust instead)."""
        return self.store.is_trusted(self.options.root)

    async def ask(self, rebuild: Callable[[], Awaitable[None]]) -> None:
        """A project's own allow rules count only once the user trusts the folder; a yes
        rebuilds the runtime so they apply at once."""
        root = self.options.root
        has_rules, has_hooks = (root / PROJECT_FILE).exists(), project_declares_hooks(root)
        if self.options.trusted or not (has_rules or has_hooks) or self.trusted_before():
            return
        if has_rules:
            self.say(f"This folder has a {PROJECT_FILE} that may allow tools to run without "
                     "asking.", "warning")
        if has_hooks:
            self.say(f"This folder's {PROJECT_HOOKS_FILE} has hooks: commands tether would run "
                     "around tool calls and requests.", "warning")
        question = ("Trust this folder and honour its allow rules and hooks?" if has_hooks
                    else "Trust this folder and honour its allow rules?")
        if await self.confirm(question):
            saved = self.remember()
            self.options.trusted = True
            await rebuild()
            self.say("Trusted; its rules apply from now on." if saved
                     else "Trusted for this session only; its rules apply until you exit.", "info")
        else:
            self.say("Not trusted: its allow rules and hooks are ignored (its deny rules still "
                     "apply)." if has_hooks else
                     "Not trusted: its allow rules are ignored (its deny rules still apply).", "info")

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
