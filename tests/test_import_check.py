"""A write's or an edit's result names imported names the project's modules do not define."""

from __future__ import annotations

from pathlib import Path

from tether.core.toolspec import ToolContext
from tether.tools.file_edit import edit_file
from tether.tools.files import write_file
from tether.tools.import_check import missing_imports
from tether.tools.params import EditFileParams, WriteFileParams


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


STRINGS = "import re\n\ndef title_case(text):\n    return text.title()\n\nLIMIT = 3\n"


def test_an_edit_that_imports_a_name_the_module_lacks_says_so(tmp_path: Path) -> None:
    write(tmp_path, {"textkit/__init__.py": "", "textkit/strings.py": STRINGS,
                     "tests/test_strings.py": "from textkit.strings import title_case\n"})
    result = edit_file(EditFileParams(
        filepath="tests/test_strings.py", old_content="from textkit.strings import title_case\n",
        new_content="from textkit.strings import title_case, slugify\n",
    ), ToolContext(root=tmp_path)).text
    assert "Warning: tests/test_strings.py imports names its project modules do not define yet" in result
    assert "line 1: slugify from textkit/strings.py (not defined there)" in result
    assert "title_case from" not in result


def test_a_write_with_every_import_defined_has_no_warning(tmp_path: Path) -> None:
    write(tmp_path, {"textkit/__init__.py": "", "textkit/strings.py": STRINGS,
                     "textkit/sub/__init__.py": "", "textkit/sub/x.py": ""})
    content = ("import os\nfrom json import loads\nfrom textkit.strings import title_case, LIMIT, re\n"
               "from textkit import strings, sub\nfrom textkit.sub import x\nfrom .helpers import nothing\n")
    result = write_file(WriteFileParams(filepath="app.py", content=content), ToolContext(root=tmp_path)).text
    assert "Warning" not in result  # stdlib, names, submodules; `.helpers` is no project module


def test_relative_imports_and_names_bound_in_top_level_blocks(tmp_path: Path) -> None:
    module = ("try:\n    import tomllib\nexcept ImportError:\n    tomllib = None\n"
              "if True:\n    def fast():\n        pass\nA, (B, C) = 1, (2, 3)\nfor I in range(2):\n    pass\n")
    write(tmp_path, {"pkg/__init__.py": "", "pkg/base.py": module})
    user = "from .base import tomllib, fast, A, B, C, I, slow\n"
    found = missing_imports(tmp_path / "pkg" / "user.py", user, ToolContext(root=tmp_path))
    assert found == [(1, "slow", "pkg/base.py")]


def test_a_module_that_makes_names_at_run_time_is_trusted(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "from os.path import *\n", "b.py": "def __getattr__(name):\n    return 1\n",
                     "c.py": "def broken(:\n"})
    text = "from a import anything\nfrom b import whatever\nfrom c import broken, other\n"
    assert missing_imports(tmp_path / "main.py", text, ToolContext(root=tmp_path)) == []


def test_only_python_files_and_never_past_a_deny_rule(tmp_path: Path) -> None:
    write(tmp_path, {"secret.py": "X = 1\n"})
    text = "from secret import Y\n"
    ctx = ToolContext(root=tmp_path, may_read=lambda p: p.name != "secret.py")  # type: ignore[call-arg]
    assert missing_imports(tmp_path / "main.py", text, ctx) == []
    assert missing_imports(tmp_path / "notes.txt", text, ToolContext(root=tmp_path)) == []
    assert missing_imports(tmp_path / "main.py", "from secret import (\n", ToolContext(root=tmp_path)) == []
    assert missing_imports(tmp_path / "main.py", text, ToolContext(root=tmp_path)) == [(1, "Y", "secret.py")]


def test_a_module_importing_from_itself_is_not_checked(tmp_path: Path) -> None:
    write(tmp_path, {"solo.py": "X = 1\n"})
    assert missing_imports(tmp_path / "solo.py", "from solo import Z\n", ToolContext(root=tmp_path)) == []
