"""@ completion of project files in the chat's input line (one file list with the tools)."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from tether.ui.terminal.prompt import ProjectFiles, TetherCompleter


def completions(root: Path, text: str) -> list[str]:
    completer = TetherCompleter(lambda: [("/help", "show help")], ProjectFiles(root))
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


def test_an_at_word_completes_project_files_and_skips_tool_folders(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("hi\n")
    (tmp_path / "node_modules" / "lib").mkdir(parents=True)
    (tmp_path / "node_modules" / "lib" / "calc.js").write_text("1\n")
    assert completions(tmp_path, "look at @cal") == ["@src/calc.py"]
    assert sorted(completions(tmp_path, "@")) == ["@README.md", "@src/calc.py"]
    assert completions(tmp_path, "no mention here") == []


def test_a_slash_at_the_start_completes_commands_not_files(tmp_path: Path) -> None:
    (tmp_path / "help.txt").write_text("x\n")
    assert completions(tmp_path, "/he") == ["/help"]


def test_the_docs_topics_complete_after_slash_help(tmp_path: Path) -> None:
    assert completions(tmp_path, "/help sa") == ["safety"]
    assert completions(tmp_path, "/help sm") == ["small-models"]
    assert "chat" in completions(tmp_path, "/help ")
    assert completions(tmp_path, "/help safety x") == []
