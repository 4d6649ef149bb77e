"""Slash commands in the real app (a pty, tests/ptyapp.py): /connect to a local server that
needs no key, a large paste shown as one line, /commit's approval, and a project skill
(/skills, the model's use_skill and its script, /skill)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

CHAT = "/v1/chat/completions"
CLOSED = "http://127.0.0.1:9"
"""Where nothing listens: the default provider's server in these runs."""


SERVER_MODELS = ["fake"]
"""What the `server` fixture (conftest) lists as the server's models."""


def keyless_env(home: Path, **extra: str) -> dict[str, str]:
    env = app_env(home, OLLAMA_HOST=CLOSED, **extra)
    del env["OPENAI_API_KEY"]
    return env


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def test_connect_to_a_local_server_needs_no_key_and_is_remembered_with_its_url(
    server: FakeServer, project: Path, home: Path
) -> None:
    local = server.url + "/v1"
    with PtyApp([], cwd=project, env=keyless_env(home, OPENAI_BASE_URL=local)) as app:
        app.wait_for_prompt()
        app.line("/connect openai fake")
        app.wait_for_cursor_on("none):")
        app.line("")
        app.wait_for_text(f"Connected: openai · fake (native tools) at {local}.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
    assert "No key given" not in app.text()
    server.add(Reply(text="Hello from the local server."))
    with PtyApp([], cwd=project, env=keyless_env(home)) as app:  # no OPENAI_BASE_URL now
        app.wait_for_prompt()
        assert "openai · fake" in app.text()
        app.line("hello")
        app.wait_for_text("Hello from the local server.")
        app.wait_for_prompt()
        app.ctrl_d()
        app.wait_exit()
    assert server.bodies(CHAT)[0]["messages"][-1]["content"].endswith("# Request\nhello")


def test_a_large_paste_is_one_line_on_screen_and_whole_for_the_model(
    server: FakeServer, project: Path, home: Path
) -> None:
    pasted = "\n".join(f"pasted line {i} of the log" for i in range(1, 41))
    server.add(Reply(text="Read all forty."))
    with PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("look at this: \x1b[200~" + pasted + "\x1b[201~")
        app.wait_for_text("Read all forty.")
        app.wait_for_prompt()
        text = app.text()
        app.ctrl_d()
        app.wait_exit()
    assert "› look at this: [pasted text #1: 40 lines, " in text
    assert "pasted line 17 of the log" not in text
    sent = server.bodies(CHAT)[0]["messages"][-1]["content"]
    assert sent.endswith("# Request\nlook at this: " + pasted)


def test_commit_shows_the_drafted_message_and_commits_after_a_yes(
    server: FakeServer, project: Path, home: Path
) -> None:
    git(project, "init", "-q", "-b", "main")
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(project, "add", "calc.py")
    git(project, "commit", "-q", "-m", "first")
    (project / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    server.add(Reply(text="Swap the operands of add"))
    with PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("/diff")
        app.wait_for_text("+    return b + a")
        app.wait_for_prompt()
        app.line("/commit")
        app.wait_for_cursor_on("Commit with this message?")
        assert "Swap the operands of add" in app.text_since_line()
        assert git(project, "log", "--format=%s") == "first\n"  # nothing before the yes
        app.send("y")  # one key, no Enter
        app.wait_for_text("Committed ")
        app.wait_for_prompt()
        app.ctrl_d()
        app.wait_exit()
    assert git(project, "log", "--format=%s") == "Swap the operands of add\nfirst\n"
    assert git(project, "status", "--porcelain") == ""


def test_a_project_skill_in_the_chat_listed_loaded_by_the_model_and_by_hand(
    server: FakeServer, project: Path, home: Path
) -> None:
    from tether.safety.trusted_folders import TrustStore

    skill = project / "skills" / "greet"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Greets people by name.\n---\n"
                                    "Call greet__hello with the name.\n")
    (skill / "scripts" / "hello.py").write_text("import sys\nprint('hello', *sys.argv[1:])\n")
    TrustStore(home).trust(project)  # trusted in an earlier session
    server.add(Reply(tool_calls=[("use_skill", {"name": "greet"})]),
               Reply(tool_calls=[("greet__hello", {"args": ["Ann"]})]),
               Reply(text="Greeted Ann."), Reply(text="Greeting Ann"),  # the session's title
               Reply(text="Following it."))
    args = openai_args(server.url, "--auto", "--sandbox", "off")
    with PtyApp(args, cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("/skills")
        app.wait_for_text("Greets people by name.")
        app.wait_for_prompt()
        assert "greet (project skills, not loaded)" in app.text_since_line()
        app.line("greet Ann")
        app.wait_for_text("Greeted Ann.")
        app.wait_for_prompt()
        shown = app.text_since_line()
        assert "use_skill" in shown and "greet" in shown and "hello Ann" in shown
        app.line("/skills")
        app.wait_for_text("greet (project skills, loaded)")
        app.wait_for_prompt()
        app.line("/skill greet")
        app.wait_for_text("Skill greet loaded.")
        app.wait_for_prompt()
        app.line("and now?")
        app.wait_for_text("Following it.")
        app.wait_for_prompt()
        app.ctrl_d()
        app.wait_exit()
    bodies = [b for b in server.bodies(CHAT) if "Write a short title" not in json.dumps(b)]
    assert "Greets people by name." in bodies[0]["messages"][1]["content"]  # the project context
    assert "greet__hello" in [t["function"]["name"] for t in bodies[1]["tools"]]
    last = bodies[-1]["messages"]
    assert any("[/skill greet]" in str(m.get("content")) and "Call greet__hello" in
               str(m.get("content")) for m in last)
