"""A logging proxy between tether and a local model server, to read what the model really saw.

tether's stream-json holds the model's text and each call's summary, but not the tool results
or the harness's notes. This proxy forwards every request to the server unchanged (streamed
answers stream through) and appends one JSON line per request to a log: the messages sent and
the reply text the model produced. Bound to 127.0.0.1 only.

    python bench/small_model/logproxy.py --listen 9189 --upstream http://127.0.0.1:9089 --log run.jsonl
    python bench/small_model/logproxy.py --show run.jsonl [--task WORDS]   # the last request of each turn

Point the benchmark at it: `run.py --base-url http://127.0.0.1:9189/v1 ...`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def reply_text(raw: bytes) -> str:
    """The text of a streamed (SSE) or whole chat-completions reply."""
    text = raw.decode("utf-8", "replace")
    if "data:" not in text:
        try:
            return json.loads(text)["choices"][0]["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError):
            return text
    pieces: list[str] = []
    for line in text.splitlines():
        if not line.startswith("data:") or line.strip() == "data: [DONE]":
            continue
        try:
            delta = json.loads(line[5:])["choices"][0].get("delta") or {}
        except (ValueError, KeyError, IndexError, TypeError):
            continue
        pieces.append(delta.get("content") or "")
    return "".join(pieces)


class Proxy(BaseHTTPRequestHandler):
    upstream = urlsplit("http://127.0.0.1:8089")
    log_path = Path("proxy.jsonl")
    lock = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return

    def do_GET(self) -> None:
        self._forward(b"")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._forward(body)

    def _forward(self, body: bytes) -> None:
        started = time.time()
        conn = http.client.HTTPConnection(self.upstream.hostname, self.upstream.port, timeout=3600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        conn.request(self.command, self.path, body=body or None, headers=headers)
        response = conn.getresponse()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_HEADERS:
                self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        raw = bytearray()
        while chunk := response.read1(65536):
            raw += chunk
            try:
                self.wfile.write(chunk)
                self.wfile.flush()
            except OSError:
                break
        conn.close()
        if self.command == "POST":
            self._log(body, bytes(raw), started)

    def _log(self, body: bytes, raw: bytes, started: float) -> None:
        try:
            sent = json.loads(body)
        except ValueError:
            sent = {"raw": body.decode("utf-8", "replace")}
        entry = {"t": started, "s": round(time.time() - started, 1), "path": self.path,
                 "request": sent, "reply": reply_text(raw)}
        with self.lock, self.log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")


def show(log: Path, task_words: str) -> None:
    """Print the last request of each turn (it holds the whole history) and its reply."""
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
    turns: dict[str, dict] = {}
    for entry in entries:
        messages = entry["request"].get("messages") or []
        first_user = next((m.get("content") for m in messages if m.get("role") == "user"), "")
        turns[str(first_user)] = entry  # later requests of a turn replace earlier ones
    for request, entry in turns.items():
        if task_words and task_words.lower() not in request.lower():
            continue
        print("=" * 100)
        for m in entry["request"]["messages"][1:]:
            print(f"--- {m['role']}")
            print(m.get("content"))
        print("--- assistant (final)")
        print(entry["reply"])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--listen", type=int, default=9189)
    p.add_argument("--upstream", default="http://127.0.0.1:8089")
    p.add_argument("--log", type=Path, default=Path("proxy.jsonl"))
    p.add_argument("--show", type=Path, help="print a log's turns instead of serving")
    p.add_argument("--task", default="", help="with --show: only turns whose request has these words")
    args = p.parse_args()
    if args.show:
        show(args.show, args.task)
        return
    Proxy.upstream = urlsplit(args.upstream)
    Proxy.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.listen), Proxy)
    print(f"proxy 127.0.0.1:{args.listen} -> {args.upstream}, log {args.log}", file=sys.stderr)
    server.serve_forever()


if __name__ == "__main__":
    main()
