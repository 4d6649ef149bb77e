"""tether's saved keys are out of every tool's reach: no rule, no --auto, no symlink gets there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.core.messages import ToolCall, ToolResult
from tether.core.toolspec import ToolContext
from tether.core.ui_protocol import Decision, SilentUI
from tether.engine.dispatch import AllowAll, CallPolicy, Dispatcher
from tether.safety.approval import ApprovalPolicy, contains_home, home_spellings, is_secret_path
from tether.safety.permissions import Rule, RuleSet
from tether.safety.sandbox import Sandbox
from tether.safety.secret_files import SecretFiles
from tether.tools import builtin_tools

SAVED = '{"openai": "sk-saved-not-real"}'


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A project root and a state directory (outside it) with saved keys and other state."""
    root, home = tmp_path / "proj", tmp_path / "state"
    root.mkdir()
    home.mkdir()
    (home / "credentials.json").write_text(SAVED)
    (home / "memory.json").write_text("{}")
    (root / "a.txt").write_text("hello\n")
    return root, home


class AskingUI(SilentUI):
    """Approves everything, remembering what it was asked about."""

    can_ask = True

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    async def approve(self, call: ToolCall, reason: str) -> Decision:
        self.asked.append(reason)
        return Decision(True)


def dispatcher(
    root: Path,
    home: Path | None,
    ui: SilentUI | None = None,
    allow: tuple[str, ...] = ("*",),
    sandbox: Sandbox | None = None,
) -> Dispatcher:
    """The real dispatcher and policy, under --auto with an allow-everything rule."""
    table, _ = builtin_tools(ToolContext(root=root))
    rules = RuleSet([Rule.parse(r, "test") for r in allow], [])
    policy = ApprovalPolicy(root, rules, auto=True, home=home, sandbox=sandbox, tools=table)
    return Dispatcher(table, tool_context(root, home), ui or SilentUI(), policy=policy)


def tool_context(root: Path, home: Path | None) -> ToolContext:
    """What the runtime gives the tools: the project root and the saved keys to keep out of reach."""
    return ToolContext(root=root, secrets=SecretFiles(home) if home is not None else None)


def unguarded(root: Path, home: Path) -> Dispatcher:
    """A dispatcher whose policy allows everything: only the tools' own guard stands."""
    table, _ = builtin_tools(ToolContext(root=root))
    policy: CallPolicy = AllowAll()
    return Dispatcher(table, tool_context(root, home), SilentUI(), policy=policy)


async def call(d: Dispatcher, name: str, **args: object) -> ToolResult:
    result, _ = await d.dispatch(ToolCall("c1", name, dict(args)))
    return result


def assert_blocked(result: ToolResult) -> None:
    assert result.is_error and result.content.startswith("Blocked by a permission rule")
    assert "saved keys" in result.content and "sk-saved-not-real" not in result.content


# ---------------------------------------------------------------- file tools


async def test_reading_the_keys_is_refused_under_auto_and_an_allow_all_rule(world) -> None:
    root, home = world
    d = dispatcher(root, home)
    assert_blocked(await call(d, "read_file", filepath=str(home / "credentials.json")))
    assert_blocked(await call(d, "read_file", filepath="../state/credentials.json"))
    assert_blocked(await call(d, "read_file", filepath=f"{home}/../state/./credentials.json"))
    other = await call(d, "read_file", filepath=str(home / "memory.json"))
    assert not other.is_error and "{}" in other.content  # only the keys are guarded, not every file of the state


async def test_symlinks_and_hard_links_to_the_keys_are_refused(world) -> None:
    root, home = world
    (root / "innocent.txt").symlink_to(home / "credentials.json")
    (root / "state-link").symlink_to(home)
    os.link(home / "credentials.json", root / "copy.txt")
    d = dispatcher(root, home)
    for path in ("innocent.txt", "state-link/credentials.json", "copy.txt"):
        assert_blocked(await call(d, "read_file", filepath=path))


async def test_tilde_paths_are_expanded_before_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    root, home = tmp_path / "proj", tmp_path / ".tether"
    root.mkdir()
    home.mkdir()
    (home / "credentials.json").write_text(SAVED)
    assert_blocked(await call(dispatcher(root, home), "read_file", filepath="~/.tether/credentials.json"))


async def test_writing_deleting_and_copying_the_keys_is_refused(world) -> None:
    root, home = world
    keys = str(home / "credentials.json")
    d = dispatcher(root, home)
    assert_blocked(await call(d, "write_file", filepath=keys, content="{}"))
    assert_blocked(await call(d, "edit_file", filepath=keys, old_content="sk", new_content="x"))
    assert_blocked(await call(d, "delete_file", filepath=keys))
    assert_blocked(await call(d, "copy_file", source=keys, destination="leak.json"))
    assert_blocked(await call(d, "copy_file", source="a.txt", destination=keys))
    assert (home / "credentials.json").read_text() == SAVED and not (root / "leak.json").exists()


async def test_a_credentials_file_anywhere_in_the_state_dir_is_guarded(world) -> None:
    root, home = world
    (home / "sub").mkdir()
    (home / "sub" / "credentials.json").write_text(SAVED)
    d = dispatcher(root, home)
    assert_blocked(await call(d, "read_file", filepath=str(home / "sub" / "credentials.json")))
    assert_blocked(await call(d, "write_file", filepath=str(home / "new" / "credentials.json"), content="x"))


async def test_the_projects_own_credentials_file_is_not_guarded(world) -> None:
    root, home = world
    (root / "credentials.json").write_text('{"fixture": true}')
    result = await call(dispatcher(root, home), "read_file", filepath="credentials.json")
    assert not result.is_error and "fixture" in result.content


async def test_without_a_state_dir_nothing_extra_is_guarded(world) -> None:
    root, home = world
    result = await call(dispatcher(root, None), "read_file", filepath=str(home / "credentials.json"))
    assert not result.is_error and "sk-saved-not-real" in result.content  # the guard needs to know where the state lives


# ---------------------------------------------------------------- spellings the kernel resolves


@pytest.fixture
def beside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The layout of a real install: the project and the home folder (with .tether in it)
    side by side, tether started in the project."""
    root, home = tmp_path / "proj", tmp_path / "home" / ".tether"
    root.mkdir()
    home.mkdir(parents=True)
    (home / "sessions").mkdir()
    (home / "credentials.json").write_text(SAVED)
    (root / "a.txt").write_text("hello\n")
    (root / "sess").symlink_to(home / "sessions")  # e.g. a link a hostile repository ships
    monkeypatch.chdir(root)
    return root, home


KERNEL_SPELLINGS = [
    "/proc/self/cwd/../home/.tether/credentials.json",  # lexically /proc/self/home/...
    "sess/../credentials.json",  # lexically proj/credentials.json
    "sess/./../../.tether/credentials.json",
    "missing/../sess/../credentials.json",
]
SANDBOXES = [None, "workspace-write"]


def sandbox_of(mode: str | None, root: Path, home: Path) -> Sandbox | None:
    return None if mode is None else Sandbox(mode, root, home)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", SANDBOXES, ids=["no-sandbox", "workspace-write"])
@pytest.mark.parametrize("spelling", KERNEL_SPELLINGS)
async def test_spellings_the_kernel_resolves_to_the_keys_are_refused_under_auto(
    beside, spelling: str, mode: str | None
) -> None:
    root, home = beside
    d = dispatcher(root, home, sandbox=sandbox_of(mode, root, home))
    assert_blocked(await call(d, "read_file", filepath=spelling))
    assert_blocked(await call(d, "copy_file", source=spelling, destination="leak.json"))
    assert_blocked(await call(d, "write_file", filepath=spelling, content="{}"))
    assert_blocked(await call(d, "edit_file", filepath=spelling, old_content="sk", new_content="x"))
    assert_blocked(await call(d, "delete_file", filepath=spelling))
    assert_blocked(await call(d, "copy_file", source="a.txt", destination=spelling))
    assert (home / "credentials.json").read_text() == SAVED
    assert not (root / "leak.json").exists()


@pytest.mark.parametrize("spelling", KERNEL_SPELLINGS)
async def test_the_tools_refuse_the_keys_even_when_the_policy_lets_everything_through(
    beside, spelling: str
) -> None:
    root, home = beside
    d = unguarded(root, home)
    for name, args in [
        ("read_file", {"filepath": spelling}),
        ("copy_file", {"source": spelling, "destination": "leak.json"}),
        ("write_file", {"filepath": spelling, "content": "{}"}),
        ("delete_file", {"filepath": spelling}),
        ("copy_file", {"source": "a.txt", "destination": spelling}),
        ("search_in_file", {"pattern": "sk-", "path": spelling}),
    ]:
        result = await call(d, name, **args)
        assert result.is_error and "saved keys" in result.content, (name, result.content)
        assert "sk-saved-not-real" not in result.content
    assert (home / "credentials.json").read_text() == SAVED
    assert not (root / "leak.json").exists()


async def test_the_old_guard_was_fooled_by_folding_dotdot_first(beside) -> None:
    """The spellings really reach the keys: the kernel opens them."""
    root, home = beside
    for spelling in KERNEL_SPELLINGS[:3]:
        assert Path(spelling).read_text() == SAVED
        assert is_secret_path(root, home, spelling)


# ---------------------------------------------------------------- hard links and reading tools


@pytest.fixture
def hard_linked(world) -> tuple[Path, Path]:
    root, home = world
    os.link(home / "credentials.json", root / "notes.txt")
    return root, home


@pytest.mark.parametrize("tracked", [False, True], ids=["walk", "git"])
async def test_a_search_over_the_project_skips_a_hard_link_to_the_keys(
    hard_linked, tracked: bool
) -> None:
    root, home = hard_linked
    if tracked:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    for d in (dispatcher(root, home), unguarded(root, home)):
        found = await call(d, "search_in_file", pattern="sk-|hello", path=".")
        assert not found.is_error and "a.txt:1: hello" in found.content
        assert "sk-saved-not-real" not in found.content
        assert "1 holding tether's saved keys" in found.content


async def test_every_reading_tool_refuses_a_hard_link_to_the_keys(hard_linked) -> None:
    root, home = hard_linked
    for d in (dispatcher(root, home), unguarded(root, home)):
        for name, args in [
            ("read_file", {"filepath": "notes.txt"}),
            ("copy_file", {"source": "notes.txt", "destination": "leak.txt"}),
            ("search_in_file", {"pattern": "sk-", "path": "notes.txt"}),
            ("edit_file", {"filepath": "notes.txt", "old_content": "sk", "new_content": "x"}),
        ]:
            result = await call(d, name, **args)
            assert result.is_error and "saved keys" in result.content, (name, result.content)
            assert "sk-saved-not-real" not in result.content
    assert not (root / "leak.txt").exists()


async def test_git_diff_of_a_hard_link_to_the_keys_is_refused(hard_linked) -> None:
    root, home = hard_linked
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = await call(dispatcher(root, home), "git_diff", path="notes.txt")
    assert_blocked(result)


# ---------------------------------------------------------------- searching and listing


async def test_a_search_over_the_state_dir_asks_and_is_blocked_in_one_shot(world) -> None:
    root, home = world
    blocked = await call(dispatcher(root, home), "search_in_file", pattern="sk-", path=str(home.parent))
    assert blocked.is_error and "state directory" in blocked.content
    assert "sk-saved-not-real" not in blocked.content
    ui = AskingUI()
    asked = await call(dispatcher(root, home, ui), "search_in_file", pattern="hello", path=str(home))
    assert ui.asked and "saved keys" in ui.asked[0] and not asked.is_error


async def test_searching_the_project_and_listing_the_state_dir_run(world) -> None:
    root, home = world
    d = dispatcher(root, home)
    found = await call(d, "search_in_file", pattern="hello", path=".")
    assert not found.is_error and "hello" in found.content
    listed = await call(d, "list_dir", path=str(home))
    assert not listed.is_error and "credentials.json" in listed.content  # names only
    assert "sk-saved-not-real" not in listed.content


# ---------------------------------------------------------------- commands


@pytest.mark.parametrize("command", [
    "cat ~/.tether/credentials.json",
    'cat "$TETHER_HOME/credentials.json"',
    "cp {home}/credentials.json /tmp/x",
    "python -c \"print(open('{real}/credentials.json').read())\"",
])
async def test_commands_naming_the_keys_are_refused_under_auto(world, command: str) -> None:
    root, home = world
    text = command.format(home=home, real=home.resolve())
    result = await call(dispatcher(root, home), "run_cmd", command=text)
    assert_blocked(result)
    assert "--sandbox" in result.content  # the text check is best effort; it says what is not


async def test_input_naming_the_keys_is_refused(world) -> None:
    root, home = world
    d = dispatcher(root, home)
    assert_blocked(await call(d, "run_cmd", command="bash", stdin=f"cat {home}/credentials.json\n"))
    assert_blocked(await call(d, "send_input", session="s1", text="cat ~/.tether/credentials.json"))


async def test_commands_about_other_credentials_run(world) -> None:
    root, home = world
    (root / "credentials.json").write_text("{}")
    result = await call(dispatcher(root, home), "run_cmd", command="cat credentials.json")
    assert not result.is_error and "[exit code 0" in result.content


# ---------------------------------------------------------------- helpers


def test_secret_paths_and_containment(world) -> None:
    root, home = world
    assert is_secret_path(root, home, str(home / "credentials.json"))
    assert not is_secret_path(root, home, str(home / "memory.json"))
    assert not is_secret_path(root, home, "a\x00b")  # unrepresentable: reads nothing
    assert contains_home(root, home, str(home)) and contains_home(root, home, "..")
    assert not contains_home(root, home, ".") and not contains_home(root, home, str(home / "sessions"))


def test_home_spellings_cover_relative_and_absolute_forms(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    home = root / "state"
    home.mkdir(parents=True)
    spellings = home_spellings(root, home)
    assert {str(home), "state", "TETHER_HOME", ".tether"} <= spellings
    assert "." not in spellings and "" not in spellings
