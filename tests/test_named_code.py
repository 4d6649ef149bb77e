"""The files that hold the code a request names (assist/named_code.py), read before the
model's first reply: where a name is defined first, then where it is used."""

from __future__ import annotations

from pathlib import Path

from tether.assist.named_code import SEARCHED_AT_MOST, USERS_AT_MOST, code_files
from tether.assist.request import read_request
from tether.assist.turn import first_files


def project(root: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return sorted(files)


ACCOUNTS = {
    "accounts/models.py": "class User:\n    name: str\n",
    "accounts/store.py": "from accounts.models import User\n\ndef load_users(path):\n    return []\n",
    "accounts/views.py": "def describe(user):\n    return user.name\n",
    "report.py": "from accounts.store import load_users\nfrom accounts.views import describe\n"
                 "for u in load_users('u.csv'):\n    print(describe(u))\n",
    "users.csv": "name,age,email\nAnn,34,ann@example.com\n",
    "README.md": "Run report.py; load_users reads the CSV.\n",
}


def test_the_files_that_define_the_named_code_come_first_then_those_that_use_it(tmp_path: Path) -> None:
    files = project(tmp_path, ACCOUNTS)
    request = "users.csv has an email column: load_users fills it in, and describe() shows it."
    reading = read_request(request, files)
    assert code_files(reading.code_names, tmp_path, files) == [
        "accounts/store.py", "accounts/views.py", "report.py"]
    # the named file first, then the code; a README that says the name is no code file
    assert first_files(request, reading, tmp_path, files) == (
        "users.csv", "accounts/store.py", "accounts/views.py", "report.py")


def test_definitions_of_each_language_and_settings_keys_are_found(tmp_path: Path) -> None:
    files = project(tmp_path, {
        "web/time.js": "export function formatDuration(ms) {\n  return ms;\n}\n",
        "web/app.js": "import { formatDuration } from './time.js';\nformatDuration(5);\n",
        "bin/bump.sh": "bump_part() {\n  echo 1\n}\nbump_part\n",
        "conf/app.json": '{\n  "max_items": 5\n}\n',
        "conf/app.yaml": "retry_limit: 3\n",
        "lib/limits.py": "RETRY_LIMIT = 3\n",
        "lib/use.py": "from lib.limits import RETRY_LIMIT\nprint(RETRY_LIMIT == 3)\n",
    })
    assert code_files(["formatDuration"], tmp_path, files) == ["web/time.js", "web/app.js"]
    assert code_files(["bump_part"], tmp_path, files) == ["bin/bump.sh"]
    assert code_files(["max_items"], tmp_path, files) == ["conf/app.json"]
    assert code_files(["retry_limit"], tmp_path, files) == ["conf/app.yaml"]
    assert code_files(["RETRY_LIMIT"], tmp_path, files) == ["lib/limits.py", "lib/use.py"]


def test_a_comparison_or_a_call_is_no_definition(tmp_path: Path) -> None:
    files = project(tmp_path, {"a.py": "if total == 3:\n    pass\n", "b.py": "total = 3\n"})
    assert code_files(["total"], tmp_path, files) == ["b.py", "a.py"]


def test_a_name_many_files_use_gives_only_where_it_is_defined(tmp_path: Path) -> None:
    many = {f"pkg/use{i}.py": "from pkg.core import run_job\nrun_job()\n" for i in range(USERS_AT_MOST + 1)}
    files = project(tmp_path, {"pkg/core.py": "def run_job():\n    pass\n", **many})
    assert code_files(["run_job"], tmp_path, files) == ["pkg/core.py"]


def test_tests_count_only_when_wanted_and_options_hidden_files_and_big_trees_never(tmp_path: Path) -> None:
    files = project(tmp_path, {
        "calc.py": "def calc_total(xs):\n    return sum(xs)\n",
        "tests/test_calc.py": "from calc import calc_total\n",
        ".venv/lib/calc.py": "def calc_total():\n    pass\n",
    })
    assert code_files(["calc_total"], tmp_path, files) == ["calc.py"]
    assert code_files(["calc_total"], tmp_path, files, wants_test=True) == ["calc.py", "tests/test_calc.py"]
    assert code_files(["--dry-run"], tmp_path, files) == []
    assert code_files(["no_such_name"], tmp_path, files) == []
    big = [f"m{i}.py" for i in range(SEARCHED_AT_MOST + 1)]
    assert code_files(["calc_total"], tmp_path, ["calc.py", *big]) == []


def test_unreadable_binary_and_missing_files_are_passed_over(tmp_path: Path) -> None:
    files = project(tmp_path, {"ok.py": "def parse_line(s):\n    pass\n"})
    (tmp_path / "blob.py").write_bytes(b"def parse_line\0\xff")
    (tmp_path / "bad.py").write_bytes(b"def parse_line(s): return '\xff\xfe'\n")
    got = code_files(["parse_line"], tmp_path, [*files, "blob.py", "bad.py", "gone.py"])
    assert got == ["ok.py", "bad.py"]


def test_a_link_out_of_the_project_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def secret_key():\n    pass\n")
    root = tmp_path / "project"
    files = project(root, {"app.py": "x = 1\n"})
    (root / "linked.py").symlink_to(outside)
    assert code_files(["secret_key"], root, [*files, "linked.py"]) == []
