"""The code a failing test points at, named after the test run that failed.

A small model that runs a failing test and reads "assert 3 == 2.5 ... where 3 = median([4, 1,
3, 2])" runs the same test again, or rewrites the test, instead of opening the module that
defines median (the same test run again and again, then the test file shown back in prose). The run's result names the function the failure calls and the project file it comes
from (found from the test file's imports), and shows that function as it is now, to be copied
into an edit's old_content (a long one gets the read_file call for its file instead, when this
turn has not read it). Once per file a turn; nothing is run for the model.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..tools._paths import display_path, is_inside_root
from ..tools.outside_values import absolute_module, module_file, package_dir
from .messages import Evidence
from .python_tree import parsed_python
from .reply_shapes import file_text, is_test_path, leaves_tests
from .toolspec import ToolContext, ToolError

if TYPE_CHECKING:
    from .turn_watch import TurnWatch

FAILING_UNREAD = (
    "\n\nThe failing test calls {name} from {module}, which you have not read yet{keep}. "
    "To read it, reply with only:\n{call}"
)
FAILING_READ = (
    "\n\nThe failing test calls {name}, which is defined in {module}: fix {name} there with "
    "edit_file{keep}, then run the test again."
)
FAILING_SHOWN = (
    "\n\nThe failing test calls {name}, defined in {module}{keep}. It is now (lines {first}-{last}):\n"
    "{source}\nFix it: reply with only an edit_file call for {module}, with this function, copied "
    "exactly, as old_content and the fixed function as new_content. Then run the test again."
)
SHOWN_LINES = 40
"""A function longer than this is not shown: the read_file call is offered instead."""
KEEP_TEST = " (the fix goes there, not in the test)"
TEST_FILES_READ = 3
TEST_BYTES = 64 * 1024
_TEST_IN_OUTPUT = re.compile(r"""(?:^(?:FAILED|ERROR) |^|File ")([\w./\\-]+\.py)(?:::|:\d+:|", line)""", re.M)


def failing_test_note(watch: TurnWatch, evidence: Evidence, ctx: ToolContext) -> str:
    """The note for a failed test run: the function the failure calls and its file ("" when
    the run was no failing test, or the file was named this turn already)."""
    ran = evidence.command
    if evidence.call.name != "run_cmd" or ran is None or not ran.failed or watch.asks_question():
        return ""
    output = evidence.result
    for test in _tests_named(output, ctx):
        found = _called_function(test, output, ctx)
        if found is None or not ctx.may_read(found[1]):
            continue
        name, module = found
        shown = display_path(module, ctx.root)
        if not watch.once(f"failing:{shown}"):
            return ""
        keep = KEEP_TEST if leaves_tests(watch.request) else ""
        source = function_source(module, name)
        if source is not None:
            return FAILING_SHOWN.format(name=name, module=shown, keep=keep, first=source[0],
                                        last=source[1], source=source[2])
        if module in watch.read_paths or watch.show_call is None or "read_file" not in watch.tools:
            return FAILING_READ.format(name=name, module=shown, keep=keep)
        call = watch.offer("read_file", {"filepath": shown})
        return FAILING_UNREAD.format(name=name, module=shown, keep=keep, call=call)
    return ""


def function_source(module: Path, name: str) -> tuple[int, int, str] | None:
    """(first line, last line, source) of the top-level function `name` in `module`, when it is
    at most SHOWN_LINES long; None otherwise. Shown in the note, it saves the read, and the model
    copies old_content from it (instead of writing the read file back whole, unchanged, or
    with a function missing)."""
    text = file_text(module, TEST_BYTES)
    tree = parsed_python(text)
    if text is None or tree is None:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            last = node.end_lineno or node.lineno
            if last - first + 1 > SHOWN_LINES:
                return None
            return first, last, "".join(text.splitlines(keepends=True)[first - 1 : last]).rstrip("\n")
    return None


def _tests_named(output: str, ctx: ToolContext) -> list[Path]:
    """The test files the output names (pytest's FAILED lines and tracebacks, unittest's File
    lines), resolved inside the project, first named first."""
    found: list[Path] = []
    for match in _TEST_IN_OUTPUT.finditer(output):
        name = match.group(1)
        if not is_test_path(name):
            continue
        try:
            path = ctx.resolve(name).resolve()
        except (OSError, RuntimeError, ValueError, ToolError):
            continue
        if path not in found and is_inside_root(path, ctx.root) and ctx.may_read(path):
            found.append(path)
        if len(found) == TEST_FILES_READ:
            break
    return found


def _called_function(test: Path, output: str, ctx: ToolContext) -> tuple[str, Path] | None:
    """(name, module file) of the project function the test imports that the output shows
    called first ("where 3 = median([4, 1, 3, 2])"); None when there is none."""
    tree = parsed_python(file_text(test, TEST_BYTES))
    if tree is None:
        return None
    best: tuple[int, str, Path] | None = None
    for name, module in imported_project_names(tree, test, ctx.root):
        called = re.search(rf"(?<![\w.]){re.escape(name)}\(", output)
        if called is not None and (best is None or called.start() < best[0]):
            best = (called.start(), name, module)
    return None if best is None else (best[1], best[2])


def imported_project_names(tree: ast.Module, test: Path, root: Path) -> list[tuple[str, Path]]:
    """(name, module file) for each name the test imports from a project module that is not a
    test itself (`import pkg.mod` gives the module under its dotted name)."""
    names: list[tuple[str, Path]] = []
    for node in ast.walk(tree):
        found: list[tuple[str, Path | None]]
        if isinstance(node, ast.ImportFrom):
            base = package_dir(test, node.module, node.level, root)
            module = module_file(base) if base is not None else None
            found = [(alias.asname or alias.name, module) for alias in node.names] if module else []
        elif isinstance(node, ast.Import):
            found = [(alias.asname or alias.name, absolute_module(alias.name, root)) for alias in node.names]
        else:
            continue
        names.extend((name, m.resolve()) for name, m in found
                     if m is not None and not is_test_path(str(m)) and is_inside_root(m.resolve(), root))
    return names
