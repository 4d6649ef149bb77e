import argparse

from .core import make_greeting


def build_parser():
    parser = argparse.ArgumentParser(prog="greeter", description="Print a greeting.")
    parser.add_argument("name", help="who to greet")
    parser.add_argument("--times", type=int, default=1, help="how many times")
    parser.add_argument("--shout", action="store_true", help="in capital letters")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    for _ in range(args.times):
        print(make_greeting(args.name, shout=args.shout))
    return 0
