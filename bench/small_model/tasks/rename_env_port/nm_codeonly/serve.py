"""A tiny file server for the docs folder."""

import http.server
import os
import sys
from functools import partial


def port():
    return int(os.environ.get("SERVER_PORT", "8000"))


def main():
    if "--print-port" in sys.argv:
        print(port())
        return
    handler = partial(http.server.SimpleHTTPRequestHandler, directory="docs")
    http.server.ThreadingHTTPServer(("127.0.0.1", port()), handler).serve_forever()


if __name__ == "__main__":
    main()
