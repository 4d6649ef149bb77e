"""bump.sh, run with bash, prints the bumped version for versions it has never seen (lower parts
reset to 0), and a part other than major/minor/patch exits 1 with a message on stderr."""

from checklib import fail, passed, require_unchanged, run, text

text("bump.sh")
CASES = [("1.4.2", "patch", "1.4.3"), ("1.4.9", "minor", "1.5.0"), ("0.9.12", "major", "1.0.0"),
         ("2.0.0", "patch", "2.0.1"), ("10.19.7", "minor", "10.20.0"), ("3.7.1", "major", "4.0.0")]
for version, part, expected in CASES:
    done = run(["bash", "bump.sh", version, part])
    if done.returncode != 0 or done.stdout.strip() != expected:
        fail(f"bash bump.sh {version} {part} should print {expected}, it printed "
             f"{done.stdout.strip()[:120]!r} (exit {done.returncode}; stderr {done.stderr.strip()[-200:]!r})")
for part in ("huge", "build"):
    done = run(["bash", "bump.sh", "1.4.2", part])
    if done.returncode != 1:
        fail(f"bash bump.sh 1.4.2 {part} should exit with status 1, it exited {done.returncode}")
    if not done.stderr.strip():
        fail(f"bash bump.sh 1.4.2 {part} should say what is wrong on stderr; it printed nothing there")
    if done.stdout.strip():
        fail(f"bash bump.sh 1.4.2 {part} printed {done.stdout.strip()[:120]!r} on stdout; an error "
             "prints no version")
require_unchanged("VERSION")
passed()
