"""A script the request runs with arguments, written so that it reads none, is told so in the
write's result (the real write_file, then the real script run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call, say
from test_profile import menu_loop

from tether.core.loop import Conversation
from tether.core.script_args import requested_usage
from tether.tools.files import FILE_TOOLS

REQUEST = "write a script total.py that prints the sum of one column of a CSV file, used like: python total.py FILE COLUMN"
FIXED = ("import csv\n\ntotal = 0\nwith open('data/sales.csv') as f:\n"
         "    for row in csv.DictReader(f):\n        total += float(row['amount'])\nprint(total)\n")
READS = ("import csv\nimport sys\n\ntotal = 0\nwith open(sys.argv[1]) as f:\n"
         "    for row in csv.DictReader(f):\n        total += float(row[sys.argv[2]])\nprint(total)\n")


async def write_script(root: Path, content: str, request: str = REQUEST, path: str = "total.py") -> str:
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "sales.csv").write_text("amount,qty\n1.5,2\n2.5,1\n")
    provider = ScriptedProvider([call(("write_file", {"filepath": path, "content": content})), say("Done."), say("Done.")])
    tools = [t for t in FILE_TOOLS if t.name in ("write_file", "read_file")]
    loop, _ = menu_loop(provider, root, tools=tools, nudges=True)
    await loop.run_turn(Conversation(), request)
    return provider.requests[1].messages[-1].tool_results[0].content


async def test_a_script_with_fixed_values_is_told_it_ignores_the_arguments(tmp_path: Path) -> None:
    result = await write_script(tmp_path, FIXED)
    assert "Warning: total.py reads no command-line arguments (sys.argv or argparse), but the request " \
           "gives it some (python total.py FILE COLUMN)" in result
    # what the warning says is so: other arguments change nothing
    run = subprocess.run([sys.executable, "total.py", "other.csv", "qty"], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    assert run.stdout == "4.0\n"


async def test_a_script_that_reads_its_arguments_gets_no_warning(tmp_path: Path) -> None:
    result = await write_script(tmp_path, READS)
    assert "Warning" not in result
    run = subprocess.run([sys.executable, "total.py", "data/sales.csv", "qty"], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert run.stdout == "3.0\n"


async def test_only_the_named_script_and_only_when_the_request_gives_arguments(tmp_path: Path) -> None:
    assert "Warning" not in await write_script(tmp_path, FIXED, path="helper.py")
    assert "Warning" not in await write_script(tmp_path, FIXED, request="write total.py that sums data/sales.csv")
    said = "Add a c2f.py next to the other helper scripts: it takes Celsius temperatures as arguments"
    (tmp_path / "scripts").mkdir()
    assert "reads no command-line arguments" in await write_script(
        tmp_path, "print(100 * 9 / 5 + 32)\n", request=said, path="scripts/c2f.py")


@pytest.mark.parametrize(("request_text", "usage"), [
    (REQUEST, ("total.py", "python total.py FILE COLUMN")),
    ("make c2f.py <celsius> print fahrenheit", ("c2f.py", "c2f.py <celsius>")),
    ("run report.py and tell me the total", None),
    ("fix the argument parsing in a.py and b.py", None),  # two scripts: which one is unclear
])
def test_the_usage_a_request_shows(request_text: str, usage: tuple[str, str] | None) -> None:
    assert requested_usage(request_text) == usage


async def test_a_new_version_of_the_script_it_wrote_shown_in_prose_gets_its_write(tmp_path: Path) -> None:
    """script_csv_total (s9-n): told total.py reads no arguments, the model showed the fixed
    script in a code block and answered; the write of that version is offered."""
    from tether.core.shown_code import VERSION_SHOWN

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text("amount,qty\n1.5,2\n2.5,1\n")
    prose = f"Here's the corrected version of `total.py`:\n\n```python\n{READS}```\n"
    provider = ScriptedProvider([call(("write_file", {"filepath": "total.py", "content": FIXED})),
                                 say(prose), say("Done.")])
    tools = [t for t in FILE_TOOLS if t.name in ("write_file", "read_file")]
    loop, _ = menu_loop(provider, tmp_path, tools=tools, nudges=True)
    await loop.run_turn(Conversation(), REQUEST)
    nudge = provider.requests[2].messages[-1].text
    assert nudge.startswith(VERSION_SHOWN.split("{")[0] + "total.py")
    assert "sys.argv[1]" in nudge and '"name": "write_file"' in nudge
