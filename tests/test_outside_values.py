"""read_file's note of the constants a Python file takes from other project modules."""

from __future__ import annotations

import os
from pathlib import Path

from tether.core.toolspec import ToolContext
from tether.tools.files import read_file
from tether.tools.params import ReadFileParams


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def read(root: Path, name: str, **ctx: object) -> str:
    return read_file(ReadFileParams(filepath=name), ToolContext(root=root, **ctx)).text  # type: ignore[arg-type]


CLIENT = (
    "from . import policy\n\n"
    "def upload(send):\n"
    "    for attempt in range(policy.MAX_UPLOAD_RETRIES + 1):\n"
    "        send(policy.backoff(attempt) * 2)\n"
)
POLICY = "MAX_DOWNLOAD_RETRIES = 4\nMAX_UPLOAD_RETRIES = 11\n\ndef backoff(n):\n    return 1.5 ** n\n"


def test_a_constant_of_a_sibling_module_is_shown_with_its_value_and_line(tmp_path: Path) -> None:
    write(tmp_path, {"up/__init__.py": "", "up/client.py": CLIENT, "up/policy.py": POLICY})
    text = read(tmp_path, "up/client.py")
    assert "[values this file reads from other files:" in text
    assert "policy.MAX_UPLOAD_RETRIES = 11  (up/policy.py line 2)" in text
    assert "MAX_DOWNLOAD_RETRIES" not in text  # not used by this file
    assert "backoff" not in text.split("[values")[1]  # functions are not constants


def test_names_imported_from_a_module_and_absolute_imports_from_src(tmp_path: Path) -> None:
    write(tmp_path, {
        "src/app/__init__.py": "",
        "src/app/limits.py": "TIMEOUT: float = 2.5\nNAME = '" + "x" * 100 + "'\n",
        "src/app/main.py": "from app.limits import TIMEOUT, NAME\nimport app.limits as lim\n"
                           "print(TIMEOUT, NAME, lim.TIMEOUT)\n",
    })
    text = read(tmp_path, "src/app/main.py")
    assert "  TIMEOUT = 2.5  (src/app/limits.py line 1)" in text
    assert "  lim.TIMEOUT = 2.5" in text
    assert "NAME =" not in text  # a value too long to show whole is left out


def test_no_note_without_outside_constants(tmp_path: Path) -> None:
    write(tmp_path, {
        "a.py": "import os\nLIMIT = 3\nprint(os.SEEK_END, LIMIT)\n",  # stdlib and own constants
        "broken.py": "from . import policy\nprint(policy.X\n",
        "notes.txt": "policy.MAX = 1\n",
        "twice.py": "X = 1\nX = 2\n",
        "b.py": "import twice\nprint(twice.X)\n",  # bound twice: which value holds is not simple
    })
    for name in ("a.py", "broken.py", "notes.txt", "b.py"):
        assert "[values" not in read(tmp_path, name), name


def test_a_module_outside_the_project_or_denied_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, {"secret.py": "TOKEN = 'abc'\n"})
    project = tmp_path / "project"
    write(project, {"pkg/__init__.py": "", "pkg/use.py": "from . import secret, conf\n"
                    "print(secret.TOKEN, conf.PORT)\n", "pkg/conf.py": "PORT = 8080\n"})
    os.symlink(outside / "secret.py", project / "pkg" / "secret.py")
    text = read(project, "pkg/use.py")
    assert "conf.PORT = 8080" in text
    assert "TOKEN" not in text.split("[values")[1]
    denied = read(project, "pkg/use.py", may_read=lambda path: path.name != "conf.py")
    assert "[values" not in denied


def test_at_most_a_few_values_are_shown(tmp_path: Path) -> None:
    count = 8
    write(tmp_path, {
        "k.py": "".join(f"K{i} = {i}\n" for i in range(count)),
        "use.py": "import k\nprint(" + ", ".join(f"k.K{i}" for i in range(count)) + ")\n",
    })
    note = read(tmp_path, "use.py").split("[values")[1]
    assert note.count(" = ") == 6
    assert "k.K0 = 0" in note and "k.K6" not in note


def search(root: Path, pattern: str, path: str = ".") -> str:
    from tether.tools.file_search import search_in_file
    from tether.tools.params import SearchInFileParams

    return search_in_file(SearchInFileParams(pattern=pattern, path=path), ToolContext(root=root)).text


def test_a_search_shows_the_values_its_matching_lines_read_from_other_modules(tmp_path: Path) -> None:
    write(tmp_path, {"up/__init__.py": "", "up/client.py": CLIENT, "up/policy.py": POLICY})
    text = search(tmp_path, "attempt", "up/client.py")
    assert text.endswith("[values the matching lines read from other files:\n"
                         "  policy.MAX_UPLOAD_RETRIES = 11  (up/policy.py line 2)]")
    assert "up/client.py:4:" in text


def test_only_the_matching_lines_count_and_a_line_already_shown_is_not_repeated(tmp_path: Path) -> None:
    write(tmp_path, {"up/__init__.py": "", "up/client.py": CLIENT, "up/policy.py": POLICY})
    assert "[values" not in search(tmp_path, "def upload", "up/client.py")  # line 3 reads nothing
    both = search(tmp_path, "retr")  # policy.py:2 is among the matches: no note for it
    assert "up/policy.py:2: MAX_UPLOAD_RETRIES = 11" in both
    assert "[values" not in both


def test_a_search_never_looks_up_values_past_a_deny_rule(tmp_path: Path) -> None:
    write(tmp_path, {"up/__init__.py": "", "up/client.py": CLIENT, "up/policy.py": POLICY})
    ctx = ToolContext(root=tmp_path, may_read=lambda p: p.name != "policy.py")  # type: ignore[call-arg]
    from tether.tools.file_search import search_in_file
    from tether.tools.params import SearchInFileParams

    text = search_in_file(SearchInFileParams(pattern="attempt", path="up/client.py"), ctx).text
    assert "MAX_UPLOAD_RETRIES = 11" not in text
