"""A change that leaves a data file (JSON, TOML, YAML, INI) unparsable says so in its result."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.core.toolspec import ToolContext
from tether.tools.data_syntax import data_syntax_note
from tether.tools.file_edit import edit_file
from tether.tools.files import write_file
from tether.tools.params import EditFileParams, WriteFileParams

VALID_AND_BROKEN = [
    ("settings.json", '{"port": 8080,\n "debug": false}\n', '{"port": 8080\n "debug": false}\n',
     "is not valid JSON now: Expecting ',' delimiter (line 2, column 2)"),
    ("pyproject.toml", '[tool]\nname = "x"\n', '[tool]\nname = "x\n',
     "is not valid TOML now:"),
    ("config.yaml", "server:\n  port: 80\n  host: a\n", "server:\n  port: 80\n host: a\n",
     "is not valid YAML now:"),
    ("deploy.yml", "a: 1\n", "a: [1\n", "is not valid YAML now:"),
    ("setup.cfg", "[metadata]\nname = x\n", "[metadata]\nname = x\nname = y\n",
     "is not valid INI now:"),
    ("app.ini", "[db]\nhost = h\n", "host = h\n", "is not valid INI now:"),
]


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(root=tmp_path)


@pytest.mark.parametrize(("name", "valid", "broken", "said"), VALID_AND_BROKEN)
def test_an_edit_that_breaks_a_data_file_says_how_and_where(
    ctx: ToolContext, tmp_path: Path, name: str, valid: str, broken: str, said: str
) -> None:
    (tmp_path / name).write_text(valid)
    out = edit_file(EditFileParams(filepath=name, old_content=valid, new_content=broken), ctx)
    assert (tmp_path / name).read_text() == broken, "written all the same: the user may want it"
    assert f"Warning: {name} {said}" in out.text
    assert out.text.rstrip().endswith("A program that reads it will fail; fix it with edit_file.")


@pytest.mark.parametrize(("name", "valid", "broken", "said"), VALID_AND_BROKEN)
def test_a_valid_change_gets_no_warning(
    ctx: ToolContext, tmp_path: Path, name: str, valid: str, broken: str, said: str
) -> None:
    (tmp_path / name).write_text(broken)
    out = write_file(WriteFileParams(filepath=name, content=valid), ctx)
    assert "Warning" not in out.text


def test_a_new_data_file_that_does_not_parse_is_warned_about(ctx: ToolContext) -> None:
    out = write_file(WriteFileParams(filepath="data.json", content="{'a': 1}\n"), ctx)
    assert out.text.startswith("Created data.json (1 lines).\nWarning: data.json is not valid JSON now: "
                               "Expecting property name enclosed in double quotes (line 1, column 2).")


def test_a_file_that_never_parsed_earns_no_warning(ctx: ToolContext, tmp_path: Path) -> None:
    """A tsconfig.json with comments was never strict JSON: an edit of it is not blamed."""
    text = '{\n  // the target\n  "target": "es2019"\n}\n'
    (tmp_path / "tsconfig.json").write_text(text)
    out = edit_file(EditFileParams(filepath="tsconfig.json", old_content="es2019", new_content="es2022"), ctx)
    assert "Warning" not in out.text


def test_other_suffixes_and_huge_files_are_not_parsed(tmp_path: Path) -> None:
    assert data_syntax_note(tmp_path / "notes.txt", "{", "notes.txt", None) == ""
    assert data_syntax_note(tmp_path / "big.json", "[" * 1_000_001, "big.json", None) == ""


def test_yaml_tags_of_any_application_are_valid_and_nothing_runs(tmp_path: Path) -> None:
    """YAML is composed, never constructed: a CloudFormation `!Ref` or a python tag is valid
    syntax, and no object is built from it."""
    for text in ("bucket: !Ref Name\n", "x: !!python/object/apply:os.system ['exit 3']\n"):
        assert data_syntax_note(tmp_path / "a.yaml", text, "a.yaml", None) == ""


@pytest.mark.parametrize("name", ["deep.json", "deep.yaml", "deep.toml"])
def test_nesting_past_the_recursion_limit_is_a_warning_not_a_crash(tmp_path: Path, name: str) -> None:
    deep = "x = " + "[" * 50_000 + "]" * 50_000 if name.endswith("toml") else "[" * 50_000 + "]" * 50_000
    note = data_syntax_note(tmp_path / name, deep, name, None)
    assert note.startswith(f"\nWarning: {name} is not valid ")
    assert "nested too deeply to read" in note or "exceeded maximum nesting depth" in note  # libyaml's own limit


def test_many_yaml_documents_in_one_file_parse(tmp_path: Path) -> None:
    assert data_syntax_note(tmp_path / "k8s.yaml", "a: 1\n---\nb: 2\n", "k8s.yaml", None) == ""


@pytest.mark.parametrize(("name", "text"), [
    ("ids.json", '{"id": ' + "9" * 5000 + "}\n"),  # valid JSON past Python's int-digit limit
    ("data.json", '\ufeff{"a": 1}\n'),  # a byte-order mark is the encoding's, not the JSON's
    ("haproxy.cfg", "global\n    daemon\ndefaults\n    mode http\n"),  # a program's own format
    ("grub.cfg", "set timeout=5\nmenuentry 'x' {\n}\n"),
    ("my.ini", "[mysqld]\nskip-name-resolve\nport = 3306\n"),  # a key with no value
    ("templates/deploy.yaml", "{{- if .Values.on }}\nkind: Pod\n{{- end }}\n"),  # a Helm chart
    ("cookiecutter.json", '{"n": {{ cookiecutter.n | tojson }}}\n'),
])
def test_valid_files_of_their_program_get_no_warning_and_nothing_crashes(tmp_path: Path, name: str, text: str) -> None:
    assert data_syntax_note(tmp_path / name, text, name, None) == ""


def test_a_file_with_a_byte_order_mark_is_still_checked(tmp_path: Path) -> None:
    note = data_syntax_note(tmp_path / "a.json", '\ufeff{"a": 1,}\n', "a.json", '\ufeff{"a": 1}\n')
    assert "is not valid JSON now: " in note


def test_a_nul_byte_in_yaml_is_named(tmp_path: Path) -> None:
    note = data_syntax_note(tmp_path / "a.yaml", "a: \x00\n", "a.yaml", "a: 1\n")
    assert "is not valid YAML now: unacceptable character #x0000" in note


def test_an_ini_file_that_lost_its_first_section_is_still_warned_about(tmp_path: Path) -> None:
    note = data_syntax_note(tmp_path / "app.ini", "host = h\n", "app.ini", "; db\n[db]\nhost = h\n")
    assert "is not valid INI now: File contains no section headers." in note


def test_a_workflow_with_expressions_is_still_checked(tmp_path: Path) -> None:
    """`${{ secrets.TOKEN }}` is GitHub's, read inside YAML scalars: no template, so a broken
    indent in a workflow is still said."""
    before = "jobs:\n  build:\n    env:\n      TOKEN: ${{ secrets.TOKEN }}\n    runs-on: x\n"
    after = "jobs:\n  build:\n    env:\n      TOKEN: ${{ secrets.TOKEN }}\n   runs-on: x\n"
    assert data_syntax_note(tmp_path / "ci.yml", before, "ci.yml", before) == ""
    assert "is not valid YAML now" in data_syntax_note(tmp_path / "ci.yml", after, "ci.yml", before)
