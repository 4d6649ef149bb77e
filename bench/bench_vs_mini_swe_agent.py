"""mini-swe-agent's CPU per tool round trip, measured the way bench_loop.py measures tether's.

mini-swe-agent (its `DefaultAgent` with the litellm model, native tool calls or the text
format, and the local environment, as its default and text-based configurations set them
up) runs in a virtual environment of its own against a local OpenAI-compatible server that
always asks for one command reading a small file; the server runs in its own process, with
zero latency. The agent's process CPU is marked at the end of every command, so a step runs
from one command's end to the next: the model request, parsing, running the command (its
child process's own CPU is not counted; tether's read_file runs in its process) and the
history. Returns each step's CPU in milliseconds.

    python -m venv /tmp/msa-venv && /tmp/msa-venv/bin/pip install mini-swe-agent
Run: python bench/bench_vs_mini_swe_agent.py [steps] [rounds] [mini-swe-agent python]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DEFAULT_PYTHON = "/tmp/msa-venv/bin/python"
COMMAND = "cat data.txt"

AGENT = r"""
import json, sys, time
from pathlib import Path
import yaml
import minisweagent
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment

url, steps, protocol, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
if protocol == "text":
    from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel as Model
    config = "mini_textbased.yaml"
else:
    from minisweagent.models.litellm_model import LitellmModel as Model
    config = "default.yaml"
agent_config = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / config).read_text())["agent"]
marks = []

class MarkingEnvironment(LocalEnvironment):
    def execute(self, *args, **kwargs):
        out = super().execute(*args, **kwargs)
        marks.append(time.process_time())
        return out

model = Model(model_name="openai/bench", cost_tracking="ignore_errors",
              model_kwargs={"api_base": url + "/v1", "api_key": "x"})
agent = DefaultAgent(model, MarkingEnvironment(cwd=folder),
                     **{**agent_config, "step_limit": steps + 1, "cost_limit": 0})
agent.run("Read data.txt again and again.")
print(json.dumps([(b - a) * 1000 for a, b in zip(marks, marks[1:])]))
"""


def completion(protocol: str, count: int) -> dict[str, object]:
    """A whole (not streamed) chat completion asking for the one command."""
    if protocol == "text":
        message: dict[str, object] = {"role": "assistant",
                                       "content": f"THOUGHT: read it.\n\n```mswea_bash_command\n{COMMAND}\n```"}
        finish = "stop"
    else:
        call = {"id": f"call_{count}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": COMMAND})}}
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {"id": f"c{count}", "object": "chat.completion", "created": 0, "model": "bench",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def serve(urls: multiprocessing.Queue, stop: multiprocessing.Event, protocol: str) -> None:
    served = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            served[0] += 1
            body = json.dumps(completion(protocol, served[0])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    urls.put(f"http://127.0.0.1:{server.server_address[1]}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop.wait()
    server.shutdown()


def steps_of(python: str, steps: int, protocol: str) -> list[float]:
    """One run's CPU per step (ms), the agent in `python`'s environment."""
    urls: multiprocessing.Queue = multiprocessing.Queue()
    stop = multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(urls, stop, protocol), daemon=True)
    server.start()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MSWEA_COST_TRACKING": "ignore_errors",
           "MSWEA_SILENT_STARTUP": "1", "LITELLM_TELEMETRY": "False"}
    env.pop("PYTHONPATH", None)
    try:
        url = urls.get(timeout=30)
        with tempfile.TemporaryDirectory() as folder:
            (Path(folder) / "data.txt").write_text("".join(f"line {i} of the data file\n" for i in range(40)))
            done = subprocess.run([python, "-c", AGENT, url, str(steps), protocol, folder], env=env,
                                  capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        stop.set()
        server.join(5)


def main() -> None:
    from bench_loop import median_of_rounds, windows

    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    python = sys.argv[3] if len(sys.argv) > 3 else DEFAULT_PYTHON
    for protocol in ("native", "text"):
        runs = [steps_of(python, steps, protocol) for _ in range(rounds)]
        figures = {label: median_of_rounds(runs, picked) for label, picked in windows(len(runs[0]))}
        shown = "  ".join(f"{label} {value:6.2f} ms" for label, value in figures.items())
        print(f"mini-swe-agent, {protocol:<6} {shown}")


if __name__ == "__main__":
    main()
