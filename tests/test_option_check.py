"""A write's or an edit's result names the argparse options a file adds that nothing reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tether.core.toolspec import ToolContext
from tether.tools.file_edit import edit_file
from tether.tools.option_check import unread_options
from tether.tools.params import EditFileParams

CLI = (
    "import argparse\n\nfrom .core import make_greeting\n\n\n"
    "def build_parser():\n"
    "    parser = argparse.ArgumentParser(prog='greeter')\n"
    "    parser.add_argument('name')\n"
    "    parser.add_argument('--times', type=int, default=1)\n"
    "    return parser\n\n\n"
    "def main(argv=None):\n"
    "    args = build_parser().parse_args(argv)\n"
    "    for _ in range(args.times):\n"
    "        print(make_greeting(args.name))\n"
    "    return 0\n"
)
TIMES_LINE = "    parser.add_argument('--times', type=int, default=1)\n"


def greeter(root: Path) -> Path:
    pkg = root / "greeter"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("from .cli import main\n\nraise SystemExit(main())\n")
    (pkg / "core.py").write_text("def make_greeting(name):\n    return f'Hello, {name}!'\n")
    (pkg / "cli.py").write_text(CLI)
    return pkg


def test_an_added_option_nothing_reads_is_named_in_the_edit_result(tmp_path: Path) -> None:
    greeter(tmp_path)
    result = edit_file(EditFileParams(
        filepath="greeter/cli.py", old_content=TIMES_LINE,
        new_content=TIMES_LINE + "    parser.add_argument('--shout', action='store_true')\n",
    ), ToolContext(root=tmp_path)).text
    assert ("Warning: greeter/cli.py adds --shout (args.shout), but no code reads it yet, so the option "
            "changes nothing.") in result
    # the program really parses it and ignores it: the warning says what running it would show
    run = subprocess.run([sys.executable, "-m", "greeter", "Ann", "--shout"], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert run.stdout == "Hello, Ann!\n"


def test_no_warning_once_the_option_is_read_here_or_beside_it(tmp_path: Path) -> None:
    pkg = greeter(tmp_path)
    used = CLI.replace(TIMES_LINE, TIMES_LINE + "    parser.add_argument('--shout', action='store_true')\n").replace(
        "print(make_greeting(args.name))", "text = make_greeting(args.name)\n        print(text.upper() if args.shout else text)")
    assert unread_options(pkg / "cli.py", used, ToolContext(root=tmp_path)) == []
    (pkg / "core.py").write_text("def loud(options):\n    return options.shout_out\n")
    beside = CLI.replace(TIMES_LINE, TIMES_LINE + "    parser.add_argument('-s', '--shout-out', action='store_true')\n")
    assert unread_options(pkg / "cli.py", beside, ToolContext(root=tmp_path)) == []


def test_dest_wholesale_reads_and_broken_files(tmp_path: Path) -> None:
    pkg = greeter(tmp_path)
    ctx = ToolContext(root=tmp_path)
    with_dest = CLI.replace(TIMES_LINE, TIMES_LINE + "    parser.add_argument('--loud', dest='volume')\n")
    assert unread_options(pkg / "cli.py", with_dest, ctx) == [("--loud", "volume")]
    wholesale = with_dest + "\nprint(vars(build_parser().parse_args()))\n"
    assert unread_options(pkg / "cli.py", wholesale, ctx) == []
    assert unread_options(pkg / "cli.py", "parser.add_argument('--x'\n", ctx) == []
    assert unread_options(pkg / "notes.txt", with_dest, ctx) == []
