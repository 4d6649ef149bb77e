"""The request read once (assist/request.py): its kinds, and the files, commands and tests it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.assist.request import read_request

PROJECT = ("src/app.py", "tests/test_app.py", "pkg/strings.py", "report.py", "foo_test.py",
           "web/ui.spec.ts", "README.md", "a/config.json", "b/config.json")


@pytest.mark.parametrize("text, question, change, run, new_file", [
    ("How many times does the uploader retry?", True, False, False, False),
    ("which port does src/app.py listen on by default?", True, False, False, False),
    ("Where is the code that decides whether a coupon expired? Give me the file.", True, False, False, False),
    ("Can you fix the parser so the tests pass?", False, True, False, False),
    ("run report.py and tell me the total", False, False, True, False),
    ("what does `python report.py` print when run?", True, False, True, False),
    ("write a script total.py that sums numbers.csv", False, True, False, True),
    ("count the TODO lines and write the number to todo.txt", False, True, False, True),
    ("corrige `src/app.py` pour que tests/test_app.py passe", False, False, False, False),
    # a change a program of the project makes: the model runs it instead of editing
    ('Use report.py to add an entry "rent" and to mark "food" as paid.', False, False, True, False),
    ("please use the `src/app.py` script to create a user ann", False, False, True, False),
    ("Use report.py to add an entry, then fix the typo in README.md.", False, True, True, False),
    ("Use dataclasses to refactor src/app.py", False, True, False, False),  # no program of the project
    ("use pkg/strings.py to fix the bug in src/app.py", False, True, False, False),  # a library's use
])
def test_the_kinds_of_a_request(text: str, question: bool, change: bool, run: bool, new_file: bool) -> None:
    reading = read_request(text, PROJECT)
    assert (reading.question, reading.change, reading.run, reading.new_file) == (question, change, run, new_file)


@pytest.mark.parametrize("text, files, new_files", [
    ("fix the bug in strings.py", ("pkg/strings.py",), ()),  # found by its base name
    ("fix `src/app.py`", ("src/app.py",), ()),  # in backticks
    ("fix .\\src\\app.py and ./report.py", ("src/app.py", "report.py"), ()),  # \ and ./ read as paths
    ("change config.json", (), ("config.json",)),  # two such files: none is the one
    ("change a/config.json", ("a/config.json",), ()),
    ("write a script total.py that sums numbers.csv", (), ("total.py", "numbers.csv")),
    ("e.g. see https://example.com/a.py or mail bob@x.py; v2.x is out", (), ()),
    ("ändere `src/app.py`, damit tests/test_app.py durchläuft", ("src/app.py", "tests/test_app.py"), ()),
    ("src/app.py の バグを直して", ("src/app.py",), ()),
    ("look at ../outside.py", (), ()),  # above the project: named by no project path
])
def test_the_files_a_request_names(text: str, files: tuple[str, ...], new_files: tuple[str, ...]) -> None:
    reading = read_request(text, PROJECT)
    assert (reading.files, reading.new_files) == (files, new_files)


@pytest.mark.parametrize("text, commands, test_files, test_commands", [
    ("make tests/test_app.py pass", (), ("tests/test_app.py",), ()),
    ("the tests in foo_test.py fail, fix it", (), ("foo_test.py",), ()),
    ("fix web/ui.spec.ts", (), ("web/ui.spec.ts",), ()),
    ("make `pytest -k bar` pass", ("pytest -k bar",), (), ("pytest -k bar",)),
    ("run pytest -k bar and fix what fails", ("pytest -k bar",), (), ("pytest -k bar",)),
    ("run `npm test`", ("npm test",), (), ("npm test",)),
    ("run `pytest`", ("pytest",), (), ("pytest",)),
    ("fix calc.py so that `python3 foo_test.py` passes", ("python3 foo_test.py",), ("foo_test.py",),
     ("python3 foo_test.py",)),
    ("run python report.py --year 2020 and fix the crash", ("python report.py --year 2020",), (), ()),
    ("run report.py and tell me the total", ("report.py",), (), ()),
    ("set `x = 1` in src/app.py and keep `def main()` as it is", (), (), ()),  # code, not commands
    ("the `pytest` docs say so", (), (), ()),  # a program's name alone, not asked to run
    ("run the tests in foo_test.py", (), ("foo_test.py",), ()),
    ("run fast and fix src/app.py", (), (), ()),  # "run" followed by no program
])
def test_the_commands_and_tests_a_request_names(
    text: str, commands: tuple[str, ...], test_files: tuple[str, ...], test_commands: tuple[str, ...]
) -> None:
    reading = read_request(text, PROJECT)
    assert (reading.commands, reading.test_files, reading.test_commands) == (commands, test_files, test_commands)


# ---------------------------------------------------------------- the words the rules weigh


@pytest.mark.parametrize(("text", "flags"), [
    ("how many lines does app.py have?", {"wants_number"}),
    ("fix the parser without changing the tests", {"keeps_tests"}),
    ("add a slugify function and a test for it", {"adds", "wants_test"}),
    ("remove the telemetry section", {"removes", "takes_away"}),
    ("rename max_items to item_limit", {"takes_away"}),
    ("what does this do", set()),
])
def test_the_words_the_rules_weigh_are_read_once(text: str, flags: set[str]) -> None:
    reading = read_request(text, ["app.py"])
    names = {"wants_number", "keeps_tests", "wants_test", "adds", "removes", "takes_away"}
    assert {name for name in names if getattr(reading, name)} == flags


def test_the_new_code_file_and_the_script_the_request_names(tmp_path: Path) -> None:
    from tether.assist.request import named_script, new_code_file

    (tmp_path / "report.py").write_text("print(1)\n")
    files = ["report.py"]
    assert new_code_file(read_request("write total.py that sums it", files), tmp_path) == "total.py"
    assert new_code_file(read_request("write total.py and more.py", files), tmp_path) is None  # two
    assert named_script(read_request("run report.py and tell me the total", files), tmp_path) == "report.py"
    assert named_script(read_request("run missing.py", files), tmp_path) is None
    assert named_script(read_request("run report.py then other.sh", files), tmp_path) is None
    (tmp_path / "total.py").write_text("")
    assert new_code_file(read_request("write total.py that sums it", files), tmp_path) is None  # it exists now


FILES = ["darts_test.py", "config.yaml", "setup.cfg", "app.py", "tests/test_app.py"]


@pytest.mark.parametrize(("text", "kept"), [
    ("Implement darts.py so that the tests in darts_test.py pass (see .docs/instructions.md). "
     "Don't change darts_test.py.", ("darts_test.py",)),
    ("Fix app.py, leave config.yaml alone", ("config.yaml",)),
    ("Bump the version without touching setup.cfg or tests/test_app.py.", ("setup.cfg", "tests/test_app.py")),
    ("Keep config.yaml unchanged and edit app.py", ("config.yaml",)),
    ("Do not change app.py, but fix config.yaml", ("app.py",)),
    ("Don't change anything yet, just tell me what app.py does", ()),
    ("edit config.yaml", ()),
    # the model of a new file is to follow, not to change
    ("Write a deploy.sh like the one in setup.cfg's docs", ()),  # a part of it, not a file
    ("Write check.py like app.py: it reads config.yaml", ("app.py",)),
    ("Add tools/new.py, similar to `app.py`, that prints the date", ("app.py",)),
    ("Fix app.py so it behaves like before", ()),
])
def test_the_files_the_request_says_to_leave_as_they_are(text: str, kept: tuple[str, ...]) -> None:
    reading = read_request(text, FILES)
    assert reading.kept_files == kept
    assert all(reading.keeps(name) and reading.keeps_by_name("./" + name) for name in kept)


@pytest.mark.parametrize(("text", "names"), [
    ("Rename the function calc_total to compute_total everywhere.", ("calc_total", "compute_total")),
    ("Rename `fetch` to `fetch_all` in app.py", ("fetch", "fetch_all")),
    ("Replace getUser() with loadUser in app.py", ("getUser", "loadUser")),
    ("remove the --dry-run option from app.py", ("--dry-run",)),
    ("Set MAX_RETRIES to 5 in config.yaml; see https://example.com/a_b", ("MAX_RETRIES",)),
    ("make the greeting friendlier", ()),
    # a rename's two names are names whatever their shape
    ("Rename the setting retries to max_retries in config.yaml", ("max_retries", "retries")),
    ("rename the function padLeft as leftPad", ("padLeft", "leftPad")),
    ("Please rename the column amount into total.", ("amount", "total")),
    ("Rename app.py to main.py", ()),  # a file's rename names no code
])
def test_the_names_of_code_a_request_names(text: str, names: tuple[str, ...]) -> None:
    assert read_request(text, FILES).code_names == names


@pytest.mark.parametrize(("text", "kept"), [
    ("Don't change anything except app.py.", ()),  # the one file to change
    ("Do not modify any file other than config.yaml; the bug is there.", ()),
    ("Don't touch files besides setup.cfg, or tests/test_app.py.", ()),
    ("The tests fail although I did not change app.py. Fix it.", ()),  # told, not asked
    ("Fix parse in app.py without changing app.py's public API.", ()),  # a part of it
    ("Fix the bug but don't change the signature of parse() in app.py.", ()),
    ("Don't change the tests in tests/test_app.py, fix app.py.", ("tests/test_app.py",)),
    ("Never edit the file setup.cfg or config.yaml.", ("setup.cfg", "config.yaml")),
    ("Don't touch the settings file config.yaml.", ("config.yaml",)),
    ("Don't change anything in tests/ or setup.cfg.", ("setup.cfg",)),
])
def test_a_file_is_kept_only_when_the_request_says_to_leave_it_whole(text: str, kept: tuple[str, ...]) -> None:
    assert read_request(text, FILES).kept_files == kept


@pytest.mark.parametrize(("text", "keeps"), [
    ("Refactor app.py and keep the tests passing.", False),
    ("Rename calc and keep all tests green; update tests/test_app.py for the new name.", False),
    ("I did not change the tests, yet they fail.", False),
    ("Keep the tests unchanged and fix app.py.", True),
    ("Leave the tests themselves alone.", True),
    ("Don't touch the tests.", True),
])
def test_keeping_the_tests_means_leaving_them_as_they_are(text: str, keeps: bool) -> None:
    assert read_request(text, FILES).keeps_tests is keeps
