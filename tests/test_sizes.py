"""Size limits: every module can be read at one sitting, every class held in one's head.

Measured from the source: a module's lines, and a class from its `class` line to its
last line (ast's end_lineno - lineno + 1), nested classes included in their parent.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tether

SRC = Path(tether.__file__).parent
MODULE_LIMIT = 600
CLASS_LIMIT = 260


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def class_lengths(path: Path) -> dict[str, int]:
    """Each class in the module by (dotted, for nested ones) name, with its length in lines."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = prefix + child.name
                assert child.end_lineno is not None
                lengths[name] = child.end_lineno - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(), str(path)), "")
    return lengths


def relative(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def test_the_sources_are_found() -> None:
    found = {relative(p) for p in modules()}
    assert {"core/loop.py", "protocol/parse.py", "ui/terminal/app.py"} <= found


def test_no_module_is_over_the_limit() -> None:
    sizes = {relative(p): len(p.read_text().splitlines()) for p in modules()}
    over = [f"{name}: {lines} lines" for name, lines in sorted(sizes.items()) if lines > MODULE_LIMIT]
    assert not over, f"modules over {MODULE_LIMIT} lines (split them by job):\n" + "\n".join(over)


def test_no_class_is_over_the_limit() -> None:
    over = [
        f"{relative(path)}: {name}, {length} lines"
        for path in modules()
        for name, length in class_lengths(path).items()
        if length > CLASS_LIMIT
    ]
    assert not over, f"classes over {CLASS_LIMIT} lines (split them by job):\n" + "\n".join(over)


def test_class_lengths_are_measured_from_class_line_to_last_line(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "x = 1\n"
        "class Outer:\n"
        "    class Inner:\n"
        "        a = 1\n"
        "\n"
        "    def f(self) -> None:\n"
        "        pass\n"
        "def g() -> None:\n"
        "    class Local:\n"
        "        pass\n"
    )
    assert class_lengths(sample) == {"Outer": 6, "Outer.Inner": 2, "Local": 2}
