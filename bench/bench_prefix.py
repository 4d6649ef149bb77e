"""How much of a request a local server's prompt cache can reuse, per profile and protocol.

Three figures each: the tokens the first requests of two different projects share (another
root, another day, another AGENTS.md, other files, so another project map); the tokens
two consecutive requests of one session share (the model's call and its result are all
that the second adds); and, for the text protocol, the tokens the second request shares with
what the server holds after the first: its prompt and the reply as the model wrote it (a
small model writes its call without the `<tool_call>` tags the prompt shows, and the
history adds them, so the server reads the reply again: the gap between the second and the
third figure). A server reuses its cache
for the shared prefix only, so the rest is prefill computed again.

Each request is a real tether runtime's request body, sent to the local fake
OpenAI-compatible server, turned into the prompt text by the model server's own chat
template (POST /apply-template, which places native tool schemas where the model's
template does) and counted by its tokenizer (POST /tokenize) when a llama.cpp server
answers at --server (default http://127.0.0.1:8089); otherwise the figures are characters
of the bodies' messages in order, and a rough count of tokens (characters / 4).

`--against SRC` computes the same on another checkout's source folder (main's, say) and
prints both side by side.
Run: python bench/bench_prefix.py [--server URL] [--against SRC]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

REQUEST = "Read the main file of this project and tell me what it prints."
CASES = [(profile, protocol) for profile in ("full", "small") for protocol in ("native", "text")]
DAYS = {"alpha": datetime.date(2031, 3, 4), "beta": datetime.date(2031, 3, 5)}
KEYS = {"OPENAI_API_KEY": "sk-bench"}


# ---------------------------------------------------------------- the request bodies


def project(scratch: Path, name: str) -> Path:
    root = scratch / name
    (root / "src").mkdir(parents=True)
    (root / "AGENTS.md").write_text(f"Instructions of {name}: use tabs, keep functions short.\n")
    (root / "src" / f"{name}_main.py").write_text("print('hi')\n")
    (root / f"{name}_notes.md").write_text("notes\n")
    return root


def on_day(day: datetime.date) -> None:
    """Make tether's prompt module see `day` as today (the runtime's own day, where it has one,
    is set too)."""
    import tether.engine.prompts as prompts

    shim = types.SimpleNamespace(date=types.SimpleNamespace(today=lambda: day))
    prompts.datetime = shim  # type: ignore[attr-defined]


async def session(root: Path, home: Path, profile: str, protocol: str) -> list[dict[str, Any]]:
    """The request bodies of one turn: a read of the project's main file, then the answer."""
    from fakeserver import FakeServer, Reply

    from tether.engine.loop import Conversation
    from tether.runtime import RunOptions, build_runtime
    from tether.store.config import load_settings
    from tether.ui.headless import HeadlessUI

    first = Reply(text=written_call(root.name)) if protocol == "text" else \
        Reply(tool_calls=[("read_file", {"filepath": f"src/{root.name}_main.py"})])
    with FakeServer([first, Reply(text="It prints hi.")]) as server:
        settings, _ = load_settings({"provider": "openai", "openai_base_url": server.url + "/v1",
                                     "model": "fake", "sandbox": "off", "profile": profile,
                                     "protocol": protocol}, {}, home)
        runtime = build_runtime(settings, RunOptions(root=root, home=home, trusted=True, auto=True),
                                HeadlessUI("json", out=open(os.devnull, "w"), err=open(os.devnull, "w")),  # noqa: SIM115
                                KEYS)
        if hasattr(runtime, "today"):
            runtime.today = DAYS[root.name]
        try:
            await runtime.start()
            runtime.git.enabled = False
            await runtime.loop.run_turn(Conversation(), REQUEST)
        finally:
            await runtime.aclose()
        return [body for path, body in server.requests if path.endswith("/chat/completions")]


def written_call(name: str) -> str:
    """The text-protocol call as a small model writes it: JSON alone, without the tags."""
    return f'{{"name": "read_file", "arguments": {{"filepath": "src/{name}_main.py"}}}}'


def all_bodies() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per case, per project, the bodies of its session (with the tether this process imports)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for profile, protocol in CASES:
            case = out[f"{profile}/{protocol}"] = {}
            for name, day in DAYS.items():
                home = scratch / f"home-{profile}-{protocol}-{name}"
                on_day(day)
                root = project(scratch / f"{profile}-{protocol}", name)
                case[name] = asyncio.run(session(root, home, profile, protocol))
    return out


def bodies_of(source: str) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """`all_bodies` in a fresh interpreter importing tether from `source`."""
    env = {**os.environ, "PYTHONPATH": source, "TETHER_PROFILE": ""}
    out = subprocess.run([sys.executable, __file__, "--bodies"], env=env, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


# ---------------------------------------------------------------- counting


class Counter:
    """Tokens of a request as the model server's template and tokenizer make them, or
    characters when no server answers."""

    def __init__(self, server: str) -> None:
        self.server = server.rstrip("/")
        self.client = httpx.Client(timeout=60)
        self.real = self._answers()

    def _answers(self) -> bool:
        try:
            return self.client.post(f"{self.server}/tokenize", json={"content": "hi"}).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def unit(self) -> str:
        return "tokens (the server's template and tokenizer)" if self.real else "characters"

    def pieces(self, body: dict[str, Any]) -> list[Any]:
        """The request as the model reads it (the reply's start included): token ids, or
        characters of a plain rendering (the menu, then each message after its role)."""
        if not self.real:
            turns = "".join(f"<|{m['role']}|>{m.get('content') or ''}<|end|>" for m in body["messages"])
            return list(json.dumps(body.get("tools")) + turns + "<|assistant|>")
        fields = {key: body[key] for key in ("messages", "tools") if key in body}
        prompt = self.client.post(f"{self.server}/apply-template", json=fields).json()["prompt"]
        return self.tokens(prompt)

    def tokens(self, text: str) -> list[Any]:
        """`text` alone, as the model wrote it: token ids, or characters."""
        if not self.real:
            return list(text)
        return self.client.post(f"{self.server}/tokenize", json={"content": text}).json()["tokens"]


def shared(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


Figures = tuple[int, int, int, int, int | None]


def figures(bodies: dict[str, dict[str, list[dict[str, Any]]]], counter: Counter) -> dict[str, Figures]:
    """Per case: (shared by the two projects' first requests, the first's size, shared by a
    session's two requests, the second's size, and for the text protocol the second's tokens
    shared with the first and the reply as written, after which the server computes anew)."""
    out: dict[str, Figures] = {}
    for case, runs in bodies.items():
        one, two = (counter.pieces(body) for body in (runs["alpha"][0], runs["beta"][0]))
        later = counter.pieces(runs["alpha"][1])
        cached = shared(one + counter.tokens(written_call("alpha")), later) if case.endswith("/text") else None
        out[case] = (shared(one, two), len(one), shared(one, later), len(later), cached)
    return out


def show(title: str, found: dict[str, Figures]) -> None:
    print(title)
    print(f"  {'profile/protocol':<16} {'two projects, first requests':>30} {'one session, requests 1 and 2':>32}"
          f" {'request 2 with request 1 and its reply':>40}")
    for case, (projects, first, session_shared, second, cached) in found.items():
        with_reply = f"{cached:>14,} of {second:>6,} ({cached / second:4.0%})" if cached is not None else "n/a"
        print(f"  {case:<16} {projects:>12,} of {first:>6,} ({projects / first:4.0%})"
              f" {session_shared:>14,} of {second:>6,} ({session_shared / second:4.0%}) {with_reply:>40}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="http://127.0.0.1:8089", help="a llama.cpp server")
    parser.add_argument("--against", metavar="SRC", help="another checkout's src folder")
    parser.add_argument("--bodies", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bodies:
        print(json.dumps(all_bodies()))
        return
    counter = Counter(args.server)
    here = str(Path(__file__).resolve().parents[1] / "src")
    sources = [here] + ([args.against] if args.against else [])
    print(f"Shared request prefix, in {counter.unit}")
    if not counter.real:
        print("  (no model server answered: about 4 characters a token)")
    results = {}
    for source in sources:
        results[source] = figures(bodies_of(source), counter)
        show(f"tether from {source}", results[source])
    if args.against:
        print("side by side: shared by two projects' first requests / by a session's requests"
              " / by request 2 with request 1 and its reply")
        for case in results[here]:
            mine, theirs = results[here][case], results[args.against][case]
            print(f"  {case:<16} this {mine[0]:>6,} / {mine[2]:>6,} / {mine[4] or 0:>6,}"
                  f"   against {theirs[0]:>6,} / {theirs[2]:>6,} / {theirs[4] or 0:>6,}")


if __name__ == "__main__":
    main()
