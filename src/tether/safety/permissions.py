"""Permission rules (deny, allow, or ask) and the folders whose rules are trusted.

A rule names a tool, optionally with a pattern for the call's main argument:
`run_cmd(git status)`, `write_file(src/*)`, `git_*` (every tool whose name fits); or a kind of
access through every tool that declares it: `read(P)`, `write(P)`, `run(P)`
(the tool table's path_params, written_params and runs_commands say which
tools do what). A deny rule with a pattern that names one tool covers the same
kind of access through the others. Patterns use
`*` (any text, `/` included) and `?` (one character); a pattern without a
wildcard also covers `<pattern> <anything>`, so `run_cmd(git status)` allows
`git status --short` but not `git statusx`.

Deny wins over allow; anything no rule allows asks. Shell commands are split
into the simple commands they run (see `shell_parse`): a deny rule matching
any part denies the whole; a compound command is allowed only when a rule
names its exact text or every part is allowed on its own, and a command with
constructs we cannot see through is never allowed part by part. Paths are
matched normalized as written and as the kernel resolves them (`paths`): deny
if either matches, allow only if both do, so neither `..` nor a symlink (met
before a `..` or not) can walk out of the directory a rule names.

Pattern matching lives in `rule_match`, folder trust in `trusted_folders`.

Rules come from `TETHER_HOME/permissions.json` (always), the project's
`.permissions.json` (deny rules always; allow rules only once the folder is
trusted, because a cloned repository must not be able to allow itself things)
and the command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core.verdict import GateVerdict
from ..host import LoadedFile, read_json_file, write_json_state
from .rule_match import (
    WILDCARDS,
    _glob_match,
    _path_matcher,
    _path_rule_allows,
    _path_views,
    pattern_matches,
)
from .shell_parse import (
    ShellSplit,
    TooManyWords,
    allow_forms,
    deny_forms,
    later_command_forms,
    normalize_whitespace,
    split_command,
)

# Folder trust lives in .trusted_folders; its names stay importable from here.
from .trusted_folders import PROJECT_FILE as PROJECT_FILE
from .trusted_folders import TrustedFolder as TrustedFolder
from .trusted_folders import TrustStore as TrustStore
from .trusted_folders import too_broad_to_trust as too_broad_to_trust

RuleKind = Literal["allow", "deny"]

USER_FILE = "permissions.json"
UNREADABLE_CONSEQUENCE = (
    "Until it is fixed, every call with side effects asks first (and is refused under --auto "
    "or in one-shot mode), since deny rules may be missing"
)
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.*?-]+$")
CAPABILITIES = ("read", "write", "run")
"""Rule names that cover a kind of access through every tool that declares it (toolspec
flags): `read(P)` every path a tool only reads, `write(P)` every path it changes, `run(P)`
every command it runs."""
ToolKinds = Mapping[str, Any]
"""What each tool of the table does, by name: `ToolTable.access()` (`toolspec.Access`)."""


class RuleError(ValueError):
    """A rule that cannot be understood; the message says what is wrong with it."""


@dataclass(frozen=True)
class Rule:
    tool: str
    pattern: str | None
    source: str
    """Where the rule came from: "project", "user", "command line" or "session"."""
    file: str = field(default="", compare=False)
    """The rules file it was read from or saved to ("" for the command line and the session)."""

    @classmethod
    def parse(cls, text: str, source: str, file: str = "") -> Rule:
        """`tool` or `tool(pattern)`; raises RuleError with a clear message."""
        rule = cls._parse(text, source)
        return rule if not file else cls(rule.tool, rule.pattern, source, file)

    @classmethod
    def _parse(cls, text: str, source: str) -> Rule:
        if not isinstance(text, str):
            raise RuleError(f"a rule must be text, not {type(text).__name__}")
        stripped = text.strip()
        if not stripped:
            raise RuleError("empty rule")
        if "(" not in stripped:
            if ")" in stripped:
                raise RuleError(f"unbalanced parentheses in rule '{text}'")
            return cls(_checked_tool(stripped, text), None, source)
        tool, _, rest = stripped.partition("(")
        tool = _checked_tool(tool.strip(), text)
        if not rest.endswith(")"):
            raise RuleError(f"unbalanced parentheses in rule '{text}': it must end with ')'")
        pattern = rest[:-1].strip()
        if not pattern:
            raise RuleError(
                f"empty pattern in rule '{text}': write '{tool}' alone to cover every call"
            )
        if not _balanced(pattern):
            raise RuleError(f"unbalanced parentheses in rule '{text}'")
        return cls(tool, pattern, source)

    @property
    def has_wildcard(self) -> bool:
        return self.pattern is not None and any(ch in self.pattern for ch in WILDCARDS)

    @property
    def capability(self) -> str | None:
        """"read", "write" or "run" for a capability rule; None for a rule naming tools."""
        return self.tool if self.tool in CAPABILITIES else None

    def matches_tool(self, tool_name: str) -> bool:
        if self.capability is not None:
            return False
        if any(ch in self.tool for ch in WILDCARDS):
            return _glob_match(self.tool, tool_name)
        return self.tool == tool_name

    def applies(
        self, tool_name: str, kinds: Sequence[str], tools: ToolKinds, *, deny: bool
    ) -> bool:
        """Whether the rule speaks about one value of a call: `kinds` says what the call does
        with it ("read"/"write" for a path, "run" for a command, nothing for other values).
        An allow rule covers the first kind only (edit_file's read is part of its write); a
        deny rule every kind, and a deny rule with a pattern that names a tool covers the same
        kinds of access through every other tool (deny read_file(x) stops search_in_file(x))."""
        relevant = set(kinds if deny else kinds[:1])
        if self.capability is not None:
            return self.capability in relevant
        if self.matches_tool(tool_name):
            return True
        return deny and self.pattern is not None and bool(self._reach(tools) & relevant)

    def _reach(self, tools: ToolKinds) -> frozenset[str]:
        """The kinds of access this rule speaks of: its own, or those of the tools it names."""
        if self.capability is not None:
            return frozenset({self.capability})
        named = (access.primary for name, access in tools.items() if self.matches_tool(name))
        return frozenset().union(*named)

    def covered_tools(self, tools: ToolKinds, kind: RuleKind) -> list[str]:
        """The tools whose calls this rule can decide, in table order."""
        reach = self._reach(tools)
        extends = self.capability is not None or (kind == "deny" and self.pattern is not None)

        def covered(name: str, access: Any) -> bool:
            if self.matches_tool(name):
                return True
            return extends and bool(reach & (access.every if kind == "deny" else access.primary))

        return [name for name, access in tools.items() if covered(name, access)]

    def matches_value(self, value: str) -> bool:
        """Whether the pattern covers `value`; a rule without a pattern covers everything."""
        return self.pattern is None or pattern_matches(self.pattern, value)

    def __str__(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"

    @property
    def origin(self) -> str:
        """Where it came from, as /perms shows it: `project: /path/.permissions.json`, `session`."""
        return f"{self.source}: {self.file}" if self.file else self.source


def _checked_tool(tool: str, text: str) -> str:
    if not tool:
        raise RuleError(f"rule '{text}' names no tool")
    if not TOOL_NAME.match(tool):
        raise RuleError(f"rule '{text}': '{tool}' is not a tool name")
    return tool


def _balanced(pattern: str) -> bool:
    depth = 0
    for ch in pattern:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


@dataclass(frozen=True)
class RuleVerdict(GateVerdict):
    """A verdict on one value, with the rule that decided it (None: no rule did)."""

    rule: Rule | None = None


def _label(rule: Rule) -> str:
    return f"{rule} [{rule.source}]"


@dataclass
class RuleSet:
    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    """Why a rules file could not be read, one line each naming it. Its deny rules may be
    missing, so the approval policy fails closed until it is fixed."""

    def add(self, kind: RuleKind, rule: Rule) -> None:
        if kind not in ("allow", "deny"):
            raise ValueError(f"unknown rule kind: {kind}")
        rules = self.allow if kind == "allow" else self.deny
        if all((r.tool, r.pattern) != (rule.tool, rule.pattern) for r in rules):
            rules.append(rule)

    def carry_session_rules(self, previous: RuleSet) -> None:
        """Rules added this session have no file to be read back from: keep them when the
        rules are rebuilt (a reload, a provider switch)."""
        for kind, rules in (("allow", previous.allow), ("deny", previous.deny)):
            for rule in rules:
                if rule.source == "session":
                    self.add(kind, rule)  # type: ignore[arg-type]

    def reload_from(self, fresh: RuleSet) -> None:
        """Take `fresh`'s rules (the files read again) in place, so the policy holding this set
        sees them; rules added this session carry over. The files' problems replace the old
        ones: a file broken since the start makes the policy fail closed, a mended one ends it."""
        fresh.carry_session_rules(self)
        self.allow[:], self.deny[:] = fresh.allow, fresh.deny
        self.unreadable[:] = fresh.unreadable

    def describe(self, tools: ToolKinds | None = None) -> list[str]:
        """One line per rule, deny first: `allow run_cmd(git status)  [project: FILE]`; given the
        tool table's kinds, each line also names the tools the rule covers."""
        kinds: tuple[tuple[RuleKind, list[Rule]], ...] = (("deny", self.deny), ("allow", self.allow))
        return [
            f"{kind} {rule}  [{rule.origin}]" + _covering(rule, kind, tools)
            for kind, rules in kinds
            for rule in rules
        ]

    def decide(
        self,
        tool_name: str,
        main_value: str,
        *,
        runs_commands: bool = False,
        is_path: bool = False,
        root: Path | None = None,
        kinds: Sequence[str] | None = None,
        tools: ToolKinds | None = None,
    ) -> RuleVerdict:
        """The verdict for one value of a call. `kinds` is what the call does with it
        (`Tool.path_accesses`; "run" for a command, the default when `runs_commands`);
        `tools` (the table's `access()`) lets a deny rule naming one tool cover the others."""
        if kinds is None:
            kinds = ("run",) if runs_commands else ()
        scoped = self.scoped(tool_name, kinds, tools or {})
        if runs_commands:
            return scoped._decide_command(tool_name, main_value)
        if is_path:
            return scoped._decide_path(tool_name, main_value, root)
        return scoped._decide_plain(tool_name, main_value)

    def scoped(self, tool_name: str, kinds: Sequence[str], tools: ToolKinds) -> RuleSet:
        """Just the rules that speak about this value of this call (see Rule.applies)."""
        return RuleSet(
            [r for r in self.allow if r.applies(tool_name, kinds, tools, deny=False)],
            [r for r in self.deny if r.applies(tool_name, kinds, tools, deny=True)],
        )

    def _tool_rules(self, rules: Iterable[Rule], tool_name: str) -> list[Rule]:
        """The rules for the call: `decide` has already scoped this set to it."""
        return list(rules)

    def _deny_if_any(
        self, tool_name: str, values: Sequence[str], *, paths: bool = False
    ) -> RuleVerdict | None:
        for rule in self._tool_rules(self.deny, tool_name):
            covers = _path_matcher(rule.pattern) if paths else rule.matches_value
            hit = next((v for v in values if covers(v)), None)
            if hit is not None:
                return _denied_by(rule, hit)
        return None

    def _deny_command(self, tool_name: str, split: ShellSplit, whole: str) -> RuleVerdict | None:
        """A deny rule matches the command as written, any spelling of any part, and any
        part from a later word on that begins with the rule's command name."""
        forms = [whole, *(form for part in split.parts for form in deny_forms(part))]
        for rule in self._tool_rules(self.deny, tool_name):
            hit = next((v for v in forms if _deny_covers_command(rule, v)), None)
            if hit is None:
                try:
                    hit = _later_word_hit(rule, split.parts)
                except TooManyWords as too_many:
                    hit = f"{_short(str(too_many))}: too many words to check"
            if hit is not None:
                return _denied_by(rule, hit)
        return None

    def _decide_plain(self, tool_name: str, value: str) -> RuleVerdict:
        denied = self._deny_if_any(tool_name, [value])
        if denied:
            return denied
        for rule in self._tool_rules(self.allow, tool_name):
            if rule.matches_value(value):
                return RuleVerdict("allow", f"allowed by rule {_label(rule)}", rule)
        return _no_rule(tool_name, value)

    def _decide_path(self, tool_name: str, value: str, root: Path | None) -> RuleVerdict:
        views = _path_views(value, root)
        denied = self._deny_if_any(tool_name, views.every, paths=True)
        if denied:
            return denied
        for rule in self._tool_rules(self.allow, tool_name):
            if _path_rule_allows(rule.pattern, views):
                return RuleVerdict("allow", f"allowed by rule {_label(rule)}", rule)
        return _no_rule(tool_name, value)

    def _decide_command(self, tool_name: str, command: str) -> RuleVerdict:
        split = split_command(command)
        whole = normalize_whitespace(command)
        denied = self._deny_command(tool_name, split, whole)
        if denied:
            return denied
        rules = self._tool_rules(self.allow, tool_name)
        for rule in rules:
            if rule.pattern is None or _names_exact_shape(rule, whole):
                return RuleVerdict("allow", f"allowed by rule {_label(rule)}", rule)
        if split.opaque:
            why = ", ".join(split.reasons)
            return RuleVerdict("ask", f"the command cannot be checked part by part ({why})")
        return _allow_every_part(rules, split.parts, split.reasons, tool_name, whole)


def _covering(rule: Rule, kind: RuleKind, tools: ToolKinds | None) -> str:
    if tools is None:
        return ""
    names = rule.covered_tools(tools, kind)
    return f"  covers: {', '.join(names)}" if names else "  covers: no tool of this session"


def _denied_by(rule: Rule, hit: str) -> RuleVerdict:
    what = f" ({_short(hit)})" if rule.pattern is not None else ""
    return RuleVerdict("deny", f"denied by rule {_label(rule)}{what}", rule)


def _deny_covers_command(rule: Rule, command: str) -> bool:
    """`rm *` denies `rm` alone too: a deny rule errs on the side of matching."""
    if rule.matches_value(command):
        return True
    pattern = rule.pattern or ""
    return pattern.endswith(" *") and pattern_matches(pattern[:-2], command)


def _later_word_hit(rule: Rule, parts: list[str]) -> str | None:
    """The first spelling of a command starting at a later word that `rule` denies."""
    prefix = _command_name_prefix(rule)
    if prefix is None:
        return None
    for part in parts:
        hit = next((f for f in later_command_forms(part, prefix) if _deny_covers_command(rule, f)), None)
        if hit is not None:
            return hit
    return None


def _command_name_prefix(rule: Rule) -> str | None:
    """What a command name must start with for `rule` to match a command starting there;
    None when no later word needs a look (no pattern, or a leading `*` that already
    matches the command from any word on)."""
    pattern = rule.pattern
    if pattern is None or pattern.startswith("*"):
        return None
    literal = re.split(r"[*?]", pattern, maxsplit=1)[0]
    return literal.split(" ", 1)[0]


def _names_exact_shape(rule: Rule, whole: str) -> bool:
    """A wildcard-free rule whose text is the whole command, as the user wrote it."""
    return (
        rule.pattern is not None
        and not rule.has_wildcard
        and normalize_whitespace(rule.pattern) == whole
    )


def _allow_every_part(
    rules: list[Rule], parts: list[str], reasons: list[str], tool_name: str, whole: str
) -> RuleVerdict:
    if not parts:
        return RuleVerdict("ask", "the command is empty")
    covering: list[Rule] = []
    for part in parts:
        forms = allow_forms(part)
        rule = next((r for r in rules if any(r.matches_value(f) for f in forms)), None)
        if rule is None:
            if len(parts) == 1 and not reasons:
                return _no_rule(tool_name, whole)
            why = ", ".join(reasons) or "several commands"
            return RuleVerdict(
                "ask", f"compound command ({why}): no allow rule covers {_short(part)}"
            )
        covering.append(rule)
    names = ", ".join(dict.fromkeys(_label(r) for r in covering))
    return RuleVerdict("allow", f"allowed by rule {names}", covering[0])


def _no_rule(tool_name: str, value: str) -> RuleVerdict:
    shown = f"{tool_name}({_short(value, quote=False)})" if value else tool_name
    return RuleVerdict("ask", f"no allow rule covers {shown}")


# --- files -----------------------------------------------------------------------


def load_rules(
    root: Path,
    home: Path,
    *,
    trusted: bool,
    extra_allow: Sequence[str] = (),
    extra_deny: Sequence[str] = (),
) -> tuple[RuleSet, list[str]]:
    """Rules from the user file, the project file and the command line, and warnings.

    Project allow rules count only in a trusted folder (one warning says they
    were ignored); project deny rules always apply. A bad rule in a file is
    named in a warning and skipped; a bad rule on the command line is a usage
    error and raises RuleError.
    """
    rules, warnings = RuleSet(), list[str]()
    for kind, rule in _read_rules_file(home / USER_FILE, "user", warnings, rules.unreadable):
        rules.add(kind, rule)
    project_path = root / PROJECT_FILE
    ignored = 0
    for kind, rule in _read_rules_file(project_path, "project", warnings, rules.unreadable):
        if kind == "allow" and not trusted:
            ignored += 1
            continue
        rules.add(kind, rule)
    if ignored:
        warnings.append(
            f"{project_path}: {ignored} allow rule(s) ignored because this folder is not "
            "trusted (its deny rules still apply; trust the folder, e.g. with --trust, to use them)"
        )
    for kind, texts in (("allow", extra_allow), ("deny", extra_deny)):
        for text in texts:
            rules.add(kind, _command_line_rule(kind, text))
    return rules, warnings


def check_command_line_rules(allow: Sequence[str], deny: Sequence[str]) -> None:
    """Raise RuleError for the first --allow or --deny rule that does not parse. The app
    checks them before its prompt is drawn, so the runtime that loads them can wait until
    the prompt is up and a bad rule is still a usage error at once."""
    kinds: tuple[tuple[RuleKind, Sequence[str]], ...] = (("allow", allow), ("deny", deny))
    for kind, texts in kinds:
        for text in texts:
            _command_line_rule(kind, text)


def _command_line_rule(kind: RuleKind, text: str) -> Rule:
    try:
        return Rule.parse(text, "command line")
    except RuleError as exc:
        raise RuleError(f"--{kind} {text!r}: {exc}") from None


def _read_rules_file(
    path: Path, source: str, warnings: list[str], unreadable: list[str]
) -> list[tuple[RuleKind, Rule]]:
    """The file's rules. A file that cannot be read, or whose deny list cannot be, is
    added to `unreadable` (its deny rules are lost, so the caller must fail closed)."""
    loaded = _read_rules_json(path)
    if loaded.broken:
        warnings.append(f"{loaded.problem}; ignored. {UNREADABLE_CONSEQUENCE}")
        unreadable.append(loaded.problem)
        return []
    data = loaded.data or {}
    for key in data:
        if key not in ("allow", "deny"):
            warnings.append(f'{path}: unknown key "{key}" ignored (expected "allow" and "deny")')
    found: list[tuple[RuleKind, Rule]] = []
    for kind in ("allow", "deny"):
        entries = data.get(kind, [])
        if not isinstance(entries, list):
            if kind == "deny":  # every deny rule of the file is lost: fail closed
                unreadable.append(f'{path}: its "deny" is not a list of rules')
                warnings.append(f'{path}: "deny" must be a list of rules; ignored. '
                                + UNREADABLE_CONSEQUENCE)
            else:
                warnings.append(f'{path}: "{kind}" must be a list of rules; ignored')
            continue
        for entry in entries:
            try:
                found.append((kind, Rule.parse(entry, source, str(path))))
            except RuleError as exc:
                warnings.append(f"{path}: {kind} rule {_short(entry)} refused: {exc}"
                                + (f". {UNREADABLE_CONSEQUENCE}" if kind == "deny" else ""))
                if kind == "deny":  # what it meant to forbid is unknown: fail closed
                    unreadable.append(f"{path}: its deny rule {_short(entry)} cannot be read")
    return found


def _read_rules_json(path: Path) -> LoadedFile:
    return read_json_file(path, _rules_shape)


def _rules_shape(data: Any) -> str:
    return "" if isinstance(data, dict) else 'does not hold an object with "allow" and "deny" lists'


def _short(value: object, limit: int = 80, *, quote: bool = True) -> str:
    """A value for a message: quoted (repr) unless told otherwise, and cut to `limit`."""
    text = repr(value) if quote else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def save_rule(path: Path, kind: RuleKind, rule: Rule) -> None:
    """Add `rule` to a permissions.json, keeping everything else in it.

    Raises RuleError when the existing file cannot be understood: it is left
    untouched rather than overwritten.
    """
    if kind not in ("allow", "deny"):
        raise ValueError(f"unknown rule kind: {kind}")
    loaded = _read_rules_json(path)
    if loaded.broken:
        raise RuleError(f"{loaded.problem}; not changed")
    data = loaded.data or {}
    entries = data.setdefault(kind, [])
    if not isinstance(entries, list):
        raise RuleError(f'{path}: "{kind}" is not a list; not changed')
    if str(rule) not in entries:
        entries.append(str(rule))
    write_json_state(path, data, loaded)
