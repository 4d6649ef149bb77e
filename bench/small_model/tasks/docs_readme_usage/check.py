"""README.md has a '## Usage' section that says `python -m dupes`, names each of the four
options with the default the code gives (--min-size 4096, --hash sha1) and no option the program
lacks; every line the README had is still there, in order; the code is untouched."""

import re

from checklib import fail, original_text, passed, require_unchanged, text

OPTIONS = {"--min-size": ("4096", r"\d+"), "--hash": ("sha1", r"md5|sha1|sha256"),
           "--json": None, "--delete": None}
OPTION = re.compile(r"--[a-z][a-z0-9-]*")
CHOICES = re.compile(r"\b(?:md5|sha1|sha256)\b(?:\s*(?:,|\||/|or)\s*\b(?:md5|sha1|sha256)\b)+", re.I)

readme = text("README.md").splitlines()
kept = iter(readme)
lost = [line for line in original_text("README.md").splitlines() if line.strip() and line not in kept]
if lost:
    fail(f"README.md lost or reordered lines it had: {lost[:3]}")

starts = [i for i, line in enumerate(readme) if re.fullmatch(r"##\s+usage\s*", line.strip(), re.I)]
if len(starts) != 1:
    fail(f"README.md should have one '## Usage' heading, it has {len(starts)}")
section = []
for line in readme[starts[0] + 1:]:
    if re.match(r"#{1,2}\s", line):
        break
    section.append(line)
body = "\n".join(section)
if not re.search(r"\bpython3? -m dupes\b", body):
    fail("the Usage section does not show how to run it (python -m dupes)")
unknown = sorted(set(OPTION.findall(body)) - set(OPTIONS) - {"--help"})
if unknown:
    fail(f"the Usage section names options the program does not have: {unknown}")
missing = [o for o in OPTIONS if not re.search(re.escape(o) + r"(?![a-z0-9-])", body)]
if missing:
    fail(f"the Usage section leaves out {missing}")


def chunks_of(option: str) -> list[str]:
    """Each line that names `option` and no other option, with the lines that follow it up to a
    blank line or a line naming an option: where a list or a table gives its default."""
    found = []
    for i, line in enumerate(section):
        if set(OPTION.findall(line)) - {"--help"} != {option}:
            continue
        chunk = [line]
        for after in section[i + 1:]:
            if not after.strip() or OPTION.search(after):
                break
            chunk.append(after)
        found.append(" ".join(chunk))
    return found


def stated(chunk: str, option: str, values: str) -> set[str]:
    """The default a chunk states: the value after 'default', else (a table row) the values it
    names outside a list of choices."""
    rest = chunk.replace(option, " ")
    after = re.search(r"default(?:s| value)?(?:\s+is)?\W*(" + values + r")\b", rest, re.I)
    if after:
        return {after.group(1).lower()}
    if re.search(r"default", rest, re.I):
        return set()
    return {v.lower() for v in re.findall(r"\b(?:" + values + r")\b", CHOICES.sub(" ", rest), re.I)}


for option, spec in OPTIONS.items():
    if spec is None:
        continue
    value, values = spec
    said = [stated(c, option, values) for c in chunks_of(option)]
    wrong = sorted(set().union(*said) - {value})
    if wrong:
        fail(f"the Usage section gives {option} the default {wrong[0]}; the code's default is {value}")
    if {value} not in said:
        fail(f"the Usage section does not give {option}'s default ({value})")
require_unchanged("dupes/cli.py", "dupes/finder.py", "pyproject.toml")
passed()
