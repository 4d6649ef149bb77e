import argparse

from .core import make_greeting


def build_parser():
    parser = argparse.ArgumentParser(prog="greeter", description="Print a greeting.")
    parser.add_argument("name", help="who to greet")
    parser.add_argument("--times", type=int, default=1, help="how many times")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    for _ in range(args.times):
        print(make_greeting(args.name))
    return 0
