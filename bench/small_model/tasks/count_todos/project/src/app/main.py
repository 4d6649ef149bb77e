import sys

from app.handlers import orders, users


def main(argv):
    # TODO: real argument parsing
    if not argv:
        print("usage: main.py orders|users")
        return 2
    handler = {"orders": orders.handle, "users": users.handle}.get(argv[0])
    if handler is None:  # TODO: suggest the closest command
        print(f"unknown command {argv[0]}")
        return 2
    return handler(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
