"""Exit 1 when a settings file asks for fewer than one worker."""

import sys

from app import config


def main(path):
    settings = config.load_cfg(path)
    if settings["workers"] < 1:
        print(f"{path}: workers must be at least 1")
        return 1
    print(f"{path}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
