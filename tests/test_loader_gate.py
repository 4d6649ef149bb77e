"""Every loader (instructions, skills, agent definitions, hooks, config) reads only what the
path and keys guards allow, and no config or state reader waits on a FIFO."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.engine.instructions import load_instructions
from tether.hooks.config import load_hooks, project_declares_hooks
from tether.host.git_guard import linked_git_dirs
from tether.safety.permissions import load_rules
from tether.safety.sandbox_paths import git_paths
from tether.safety.trusted_folders import TrustStore
from tether.skills.catalog import discover_skills
from tether.store.agent_defs import load_definitions
from tether.store.config import load_settings
from tether.store.keys import ConnectionStore, KeyStore
from tether.store.loader_gate import LoaderGate
from tether.store.memory import MemoryCorrupt, MemoryStore
from tether.store.session import SessionCorrupt, SessionStore

KEY = "sk-test-0123456789abcdef"
MARK = "LOADED-TEXT-MARK"
SESSION_ID = "20240101-000000-abcd"
HANG_GUARD = 60.0
"""Seconds a load may take before the test calls it a hang: a failure, never a timing."""

Loaded = tuple[list[str], list[str]]
"""What a loader took (names or texts) and the notes it gave."""


def make_project(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (home / "credentials.json").write_text(json.dumps({"version": 1, "keys": {"openai": KEY}}))
    return root, home


def instructions(root: Path, home: Path) -> Loaded:
    found = load_instructions(root, home, trusted=True)
    return [f.text for f in found.files], found.problems


def skills(root: Path, home: Path) -> Loaded:
    catalog = discover_skills(root, home, trusted=True, user_home=home.parent / "user")
    return [s.name for s in catalog.skills], catalog.problems


def agents(root: Path, home: Path) -> Loaded:
    found, warnings = load_definitions(root, home, trusted=True)
    return list(found), warnings


def hooks(root: Path, home: Path) -> Loaded:
    found = load_hooks(None, home, root, trusted=True)
    return [h.command for h in found.hooks], found.warnings


SKILL_TEXT = f"---\nname: evil\ndescription: Does a thing.\n---\n{MARK}\n"
AGENT_TEXT = f"---\nname: evil\ndescription: helps\n---\n{MARK}\n"
HOOKS_TEXT = json.dumps({"hooks": {"Stop": [{"hooks": [{"command": f"echo {MARK}"}]}]}})

LOADERS: dict[str, tuple[str, str, Callable[[Path, Path], Loaded]]] = {
    # kind: (its file in a project, a valid content, the load)
    "instructions": ("AGENTS.md", MARK, instructions),
    "skill": ("skills/evil/SKILL.md", SKILL_TEXT, skills),
    "agent definition": (".tether/agents/evil.md", AGENT_TEXT, agents),
    "hooks": (".tether/settings.json", HOOKS_TEXT, hooks),
}
USER_FILES = {  # the same kinds at the user's level, under TETHER_HOME
    "instructions": "AGENTS.md", "skill": "skills/evil/SKILL.md",
    "agent definition": "agents/evil.md", "hooks": "settings.json",
}


def place(path: Path, content: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


def link(path: Path, target: Path | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def one_note_naming(notes: list[str], path: Path, reason: str) -> str:
    [note] = [n for n in notes if str(path) in n]
    assert reason in note, note
    assert "\n" not in note
    return note


@pytest.mark.parametrize("kind", LOADERS)
def test_a_project_file_inside_the_project_is_loaded(tmp_path: Path, kind: str) -> None:
    root, home = make_project(tmp_path)
    name, content, load = LOADERS[kind]
    place(root / "docs" / "real", content)
    link(root / name, os.path.relpath(root / "docs" / "real", (root / name).parent))
    loaded, notes = load(root, home)
    assert loaded and MARK in loaded[0] or loaded == ["evil"], (loaded, notes)
    assert notes == []


@pytest.mark.parametrize("target", ["outside", "keys", "environ"])
@pytest.mark.parametrize("kind", LOADERS)
def test_a_project_file_that_is_a_link_out_is_skipped_with_a_note(
    tmp_path: Path, kind: str, target: str
) -> None:
    root, home = make_project(tmp_path)
    name, content, load = LOADERS[kind]
    destination = {"outside": place(tmp_path / "elsewhere" / "file", content),
                   "keys": home / "credentials.json", "environ": Path("/proc/self/environ")}
    reason = "saved keys" if target == "keys" else "outside the project"
    link(root / name, destination[target])
    loaded, notes = load(root, home)
    assert loaded == []
    note = one_note_naming(notes, root / name, reason)
    assert KEY not in note and MARK not in note


@pytest.mark.parametrize("kind", LOADERS)
def test_a_hard_link_to_the_keys_file_is_refused_by_its_identity(tmp_path: Path, kind: str) -> None:
    root, home = make_project(tmp_path)
    name, _, load = LOADERS[kind]
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    os.link(home / "credentials.json", root / name)
    loaded, notes = load(root, home)
    assert loaded == []
    one_note_naming(notes, root / name, "saved keys")


@pytest.mark.parametrize("kind", LOADERS)
def test_a_chain_of_links_ending_outside_is_skipped(tmp_path: Path, kind: str) -> None:
    root, home = make_project(tmp_path)
    name, content, load = LOADERS[kind]
    outside = place(tmp_path / "elsewhere" / "file", content)
    hop = link(root / "hop1", link(root / "hop2", outside))
    link(root / name, hop)
    loaded, notes = load(root, home)
    assert loaded == []
    one_note_naming(notes, root / name, f"(a link to {outside})")


@pytest.mark.parametrize("kind", LOADERS)
def test_a_user_file_may_be_a_link_to_a_file_of_the_user(tmp_path: Path, kind: str) -> None:
    root, home = make_project(tmp_path)
    _, content, load = LOADERS[kind]
    dotfile = place(tmp_path / "dotfiles" / "file", content)
    link(home / USER_FILES[kind], dotfile)
    loaded, notes = load(root, home)
    assert loaded and MARK in loaded[0] or loaded == ["evil"], (loaded, notes)
    assert notes == []


@pytest.mark.parametrize("target", ["keys", "environ"])
@pytest.mark.parametrize("kind", LOADERS)
def test_a_user_file_never_reads_the_keys_or_a_system_file(
    tmp_path: Path, kind: str, target: str
) -> None:
    root, home = make_project(tmp_path)
    _, _, load = LOADERS[kind]
    path = home / USER_FILES[kind]
    if target == "keys":
        link(path, home / "credentials.json")
    else:
        link(path, "/proc/self/environ")
    loaded, notes = load(root, home)
    assert loaded == []
    one_note_naming(notes, path, "saved keys" if target == "keys" else "system file under /proc")


@pytest.mark.parametrize(("folder", "load"), [("skills", skills), (".tether/agents", agents)])
def test_a_project_folder_that_is_a_link_out_is_skipped_with_one_note(
    tmp_path: Path, folder: str, load: Callable[[Path, Path], Loaded]
) -> None:
    root, home = make_project(tmp_path)
    outside = tmp_path / "elsewhere"
    place(outside / "evil" / "SKILL.md", SKILL_TEXT)
    place(outside / "evil.md", AGENT_TEXT)
    place(outside / "other.md", AGENT_TEXT.replace("evil", "other"))
    link(root / folder, outside)
    loaded, notes = load(root, home)
    assert loaded == []
    one_note_naming(notes, root / folder, "outside the project")


def test_a_dot_dot_in_an_instructions_name_cannot_leave_the_project(tmp_path: Path) -> None:
    root, home = make_project(tmp_path)
    place(tmp_path / "outside.md", MARK)
    found = load_instructions(root, home, trusted=True, fallbacks=("../outside.md",))
    assert found.files == []
    one_note_naming(found.problems, root / "../outside.md", "outside the project")


def test_a_skill_file_swapped_for_a_link_after_discovery_is_not_read(tmp_path: Path) -> None:
    root, home = make_project(tmp_path)
    skill_file = place(root / "skills" / "evil" / "SKILL.md", SKILL_TEXT)
    [skill] = discover_skills(root, home, trusted=True, user_home=tmp_path / "user").skills
    skill_file.unlink()
    link(skill_file, home / "credentials.json")
    with pytest.raises(OSError, match="saved keys"):
        skill.body()


def test_a_skill_script_that_links_out_of_the_project_is_not_a_tool(tmp_path: Path) -> None:
    from tether.skills.book import SkillBook

    root, home = make_project(tmp_path)
    place(root / "skills" / "evil" / "SKILL.md", SKILL_TEXT)
    place(root / "skills" / "evil" / "scripts" / "inside.py", "print('hi')\n")
    place(tmp_path / "elsewhere" / "run.py", "print('hi')\n")
    link(root / "skills" / "evil" / "scripts" / "outside.py", tmp_path / "elsewhere" / "run.py")
    catalog = discover_skills(root, home, trusted=True, user_home=tmp_path / "user")
    book = SkillBook(catalog, root, run_command=lambda params, ctx: None)
    tools, problems = book.script_tools(catalog.skills[0])
    assert [t.name for t in tools] == ["evil__inside"]
    one_note_naming(problems, root / "skills" / "evil" / "scripts" / "outside.py",
                    "outside the project")


def test_the_user_config_file_never_reads_the_keys_or_a_system_file(tmp_path: Path) -> None:
    _, home = make_project(tmp_path)
    link(home / "config.toml", "/proc/self/environ")
    settings, warnings = load_settings({}, {}, home)
    one_note_naming(warnings, home / "config.toml", "system file under /proc")
    (home / "config.toml").unlink()
    place(tmp_path / "dotfiles" / "config.toml", 'model = "from-the-dotfile"\n')
    link(home / "config.toml", tmp_path / "dotfiles" / "config.toml")
    settings, warnings = load_settings({}, {}, home)
    assert settings.model == "from-the-dotfile" and warnings == []


def test_the_gate_checks_the_file_it_opened_not_only_the_path(tmp_path: Path) -> None:
    root, home = make_project(tmp_path)
    gate = LoaderGate(home, project=root)
    inside = place(root / "AGENTS.md", MARK)
    assert gate.read(inside) == MARK.encode()
    with gate.open(inside) as handle:  # what the kernel opened is checked again
        assert handle.read() == MARK.encode()


# -- FIFOs: refused, never waited on


def without_hanging(load: Callable[[], Any], fifo: Path) -> Any:
    """`load()`'s result; a load still blocked after HANG_GUARD fails the test (and the FIFO
    is then opened for writing so the blocked reader ends)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = load()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(HANG_GUARD)
        pytest.fail(f"reading {fifo} waited for a writer")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def notes_of(loaded: Loaded) -> str:
    return "\n".join(loaded[1])


def memory_problem(path: Path) -> str:
    try:
        MemoryStore(path).list()
    except MemoryCorrupt as exc:
        return str(exc)
    return ""


def session_problem(store: SessionStore, root: Path) -> str:
    """Saving over the FIFO: the file there is read first, so nothing good is replaced."""
    record = store.new(root, "openai", "m")
    record.id = SESSION_ID
    try:
        store.save(record)
    except SessionCorrupt as exc:
        return str(exc)
    return ""


FIFO_READERS: dict[str, tuple[str, Callable[[Path, Path], str]]] = {
    # name: (where the FIFO is: "home/..." or "root/...", the read, giving its notes)
    "user settings.json": ("home/settings.json", lambda r, h: notes_of(hooks(r, h))),
    "project settings.json": ("root/.tether/settings.json", lambda r, h: notes_of(hooks(r, h))),
    "user agent": ("home/agents/a.md", lambda r, h: notes_of(agents(r, h))),
    "project agent": ("root/.tether/agents/a.md", lambda r, h: notes_of(agents(r, h))),
    "user AGENTS.md": ("home/AGENTS.md", lambda r, h: notes_of(instructions(r, h))),
    "project AGENTS.md": ("root/AGENTS.md", lambda r, h: notes_of(instructions(r, h))),
    "user skill": ("home/skills/a.md", lambda r, h: notes_of(skills(r, h))),
    "project SKILL.md": ("root/skills/a/SKILL.md", lambda r, h: notes_of(skills(r, h))),
    "config.toml": ("home/config.toml", lambda r, h: "\n".join(load_settings({}, {}, h)[1])),
    "credentials.json": ("home/credentials.json", lambda r, h: _keys_problem(h)),
    "connection.json": ("home/connection.json", lambda r, h: ConnectionStore(h).problem),
    "trusted folders": ("home/trusted.json", lambda r, h: TrustStore(h).problem),
    "user rules": ("home/permissions.json",
                   lambda r, h: "\n".join(load_rules(r, h, trusted=True)[1])),
    "project rules": ("root/.permissions.json",
                      lambda r, h: "\n".join(load_rules(r, h, trusted=True)[1])),
    "memory": ("home/memory.json", lambda r, h: memory_problem(h / "memory.json")),
    "session": (f"home/sessions/{SESSION_ID}.json",
                lambda r, h: session_problem(SessionStore(h), r)),
}


def _keys_problem(home: Path) -> str:
    store = KeyStore(home)
    assert store.get("openai") is None
    return store.problem or ""


@pytest.mark.parametrize("reader", FIFO_READERS)
def test_a_fifo_in_a_config_or_state_file_place_is_refused_without_waiting(
    tmp_path: Path, reader: str
) -> None:
    root, home = make_project(tmp_path)
    where, read = FIFO_READERS[reader]
    fifo = (home if where.startswith("home/") else root) / where.split("/", 1)[1]
    if fifo.name == "credentials.json" or fifo.exists():
        fifo.unlink()
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    notes = without_hanging(lambda: read(root, home), fifo)
    assert "FIFO" in notes, notes


def test_a_fifo_commondir_behind_a_git_file_is_not_waited_on(tmp_path: Path) -> None:
    root = tmp_path / "project"
    gitdir = root / "evil"
    gitdir.mkdir(parents=True)
    (root / ".git").write_text("gitdir: evil\n")
    os.mkfifo(gitdir / "commondir")
    found = without_hanging(lambda: linked_git_dirs(root), gitdir / "commondir")
    assert found == [gitdir]
    protected = without_hanging(lambda: git_paths(root), gitdir / "commondir")
    assert [p.path for p in protected] == [root / ".git", gitdir]


def test_a_fifo_named_by_a_call_gets_no_preview_and_no_comparison(tmp_path: Path) -> None:
    from tether.assist.reply_shapes import file_text
    from tether.core.messages import ToolCall
    from tether.ui.terminal.preview import change_preview

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    write = ToolCall("1", "write_file", {"filepath": "pipe.py", "content": "x = 1\n"})
    edit = ToolCall("2", "edit_file", {"filepath": "pipe.py", "old_content": "x", "new_content": "y"})
    assert without_hanging(lambda: change_preview(write, tmp_path), fifo) is None
    assert without_hanging(lambda: change_preview(edit, tmp_path), fifo) is not None  # the snippet
    assert without_hanging(lambda: file_text(fifo, 3_000), fifo) is None


def test_a_fifo_as_the_project_hooks_file_declares_no_hooks(tmp_path: Path) -> None:
    root, _ = make_project(tmp_path)
    fifo = root / ".tether" / "settings.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    assert without_hanging(lambda: project_declares_hooks(root), fifo) is False
