"""logtidy: filters and tidies application logs (lines like `2024-05-02 09:14:03 WARNING msg`)."""

import argparse
import re
import sys

LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
ALIASES = {"WARN": "WARNING", "ERR": "ERROR", "FATAL": "CRITICAL"}
LINE = re.compile(r"^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) ([A-Z]+) (.*)$")


def level(text):
    name = ALIASES.get(text.upper(), text.upper())
    if name not in LEVELS:
        raise argparse.ArgumentTypeError(f"unknown level {text!r} (one of {', '.join(LEVELS)})")
    return name


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="logtidy", description="Filter and tidy application log files.",
        epilog="Levels from least to most severe: DEBUG, INFO, WARNING, ERROR, CRITICAL.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="log files to read")
    parser.add_argument("--min-level", type=level, metavar="LEVEL",
                        help="keep only lines of LEVEL or a more severe level")
    parser.add_argument("--only-level", type=level, metavar="LEVEL",
                        help="keep only lines of exactly this level")
    parser.add_argument("--since", metavar="HH:MM", help="drop lines logged before this time of day")
    parser.add_argument("--grep", metavar="TEXT", help="keep only lines whose message contains TEXT")
    parser.add_argument("--dedupe", action="store_true",
                        help="collapse repeats of the same message into one line with a count")
    parser.add_argument("--no-timestamps", action="store_true", help="drop the date and time")
    return parser.parse_args(argv)


def keep(args, when, lvl, message):
    if args.min_level and LEVELS.index(lvl) < LEVELS.index(args.min_level):
        return False
    if args.only_level and lvl != args.only_level:
        return False
    if args.since and when[:5] < args.since:
        return False
    return not args.grep or args.grep in message


def main(argv=None):
    args = parse_args(argv)
    out, last, repeats = [], None, 0
    for name in args.files:
        with open(name, encoding="utf-8") as stream:
            for raw in stream:
                match = LINE.match(raw.rstrip("\n"))
                if not match:
                    continue
                day, when, lvl, message = match.groups()
                lvl = ALIASES.get(lvl, lvl)
                if lvl not in LEVELS or not keep(args, when, lvl, message):
                    continue
                if args.dedupe and last is not None and (lvl, message) == last:
                    repeats += 1
                    continue
                if repeats:
                    out[-1] += f" (x{repeats + 1})"
                repeats = 0
                last = (lvl, message)
                out.append(f"{lvl} {message}" if args.no_timestamps else f"{day} {when} {lvl} {message}")
    if repeats:
        out[-1] += f" (x{repeats + 1})"
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


sys.exit(main())
