"""The bell or desktop notification when long work ends or a question waits (setting notify,
off by default), and the colour theme (setting theme) that NO_COLOR and light terminals
are respected by: unit tests of the choices, and the chat in a pty."""

from __future__ import annotations

import os
from pathlib import Path

from fakeserver import FakeServer, Reply
from ptyapp import PtyApp, app_env, openai_args

from tether.ui.terminal.notify import Notifier, desktop_command
from tether.ui.terminal.theme import PALETTES, chosen_palette, light_background

BEL = "\x07"


# ---------------------------------------------------------------- the choices


def test_no_color_wins_and_auto_reads_the_terminals_background() -> None:
    assert chosen_palette("dark", {"NO_COLOR": "1"}).name == "none"
    assert chosen_palette("light", {}).name == "light"
    assert chosen_palette("none", {}).colours is False
    assert chosen_palette("auto", {"COLORFGBG": "0;15"}).name == "light"
    assert chosen_palette("auto", {"COLORFGBG": "15;default;0"}).name == "dark"
    assert chosen_palette("auto", {}) is PALETTES["dark"]  # the terminal does not say
    assert light_background("0;7") and not light_background("") and not light_background("x;y")


class Recorded:
    def __init__(self) -> None:
        self.bells = 0
        self.ran: list[list[str]] = []
        self.now = 100.0

    def notifier(self, mode: str, after: float = 10.0, program: str | None = "notify-send") -> Notifier:
        return Notifier(mode, after, bell=self.ring, run=self.ran.append, clock=lambda: self.now,
                        desktop=lambda message: desktop_command(
                            message, lambda name: program if name == program else None, "linux"))

    def ring(self) -> None:
        self.bells += 1


def test_a_long_turn_rings_a_short_one_does_not_and_off_is_silent() -> None:
    seen = Recorded()
    bell = seen.notifier("bell")
    bell.turn_started()
    seen.now += 3
    bell.turn_ended()
    assert seen.bells == 0
    bell.turn_started()
    seen.now += 12
    bell.turn_ended()
    assert seen.bells == 1 and not seen.ran
    off = seen.notifier("off")
    off.turn_started()
    seen.now += 60
    off.turn_ended()
    off.question_opened()
    assert seen.bells == 1


def test_a_question_during_a_turn_notifies_and_one_outside_a_turn_does_not() -> None:
    seen = Recorded()
    desktop = seen.notifier("desktop")
    desktop.question_opened()  # a slash command's question: the user is right there
    assert seen.bells == 0
    desktop.turn_started()
    desktop.question_opened()
    assert seen.bells == 1
    assert seen.ran == [["notify-send", "tether", "A question waits for your answer."]]


def test_desktop_without_a_program_is_the_bell_alone() -> None:
    seen = Recorded()
    quiet = seen.notifier("desktop", after=0, program=None)
    quiet.turn_started()
    quiet.turn_ended()
    assert seen.bells == 1 and not seen.ran
    assert desktop_command('say "hi"', lambda name: "/usr/bin/osascript", "darwin") == [
        "osascript", "-e", 'display notification "say \\"hi\\"" with title "tether"']


# ---------------------------------------------------------------- the chat


def config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def fake_notify_send(tmp_path: Path) -> tuple[Path, Path]:
    """A notify-send on a PATH of its own that records its arguments; (bin folder, record)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    record = tmp_path / "notified.txt"
    script = folder / "notify-send"
    script.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> "{record}"\necho >> "{record}"\n')
    script.chmod(0o755)
    return folder, record


def test_the_chat_rings_and_notifies_when_a_question_waits_and_the_turn_ends(
        project: Path, home: Path, tmp_path: Path) -> None:
    folder, record = fake_notify_send(tmp_path)
    config(home, 'notify = "desktop"\nnotify_after = 0\n')
    env = app_env(home, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}")
    replies = [Reply(tool_calls=[("write_file", {"filepath": "a.md", "content": "x\n"})]),
               Reply(text="Wrote it."), Reply(text="Title")]
    with FakeServer(replies) as server, PtyApp(openai_args(server.url), cwd=project, env=env) as app:
        app.wait_for_prompt()
        app.line("write a note")
        app.wait_for_cursor_on("Allow?")
        app.send("y")
        app.wait_for_text("Wrote it.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        written = app.output_since_mark()
    assert written.count(BEL) >= 2  # the question, then the end of the turn
    lines = record.read_text().splitlines()
    assert "tether|A question waits for your answer.|" in lines[0]
    assert lines[1].startswith("tether|The answer is ready (")


def test_by_default_the_chat_rings_nothing(project: Path, home: Path) -> None:
    with FakeServer([Reply(text="Quiet."), Reply(text="Title")]) as server, \
            PtyApp(openai_args(server.url), cwd=project, env=app_env(home)) as app:
        app.wait_for_prompt()
        app.line("hello")
        app.wait_for_text("Quiet.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        assert BEL not in app.output_since_mark()


def coloured_output(project: Path, home: Path, **env: str) -> str:
    """What the chat writes for a turn with a tool call, escape sequences kept."""
    (project / "a.txt").write_text("alpha\n")
    replies = [Reply(tool_calls=[("read_file", {"filepath": "a.txt"})]), Reply(text="Alpha."),
               Reply(text="Title")]
    with FakeServer(replies) as server, \
            PtyApp(openai_args(server.url), cwd=project, env=app_env(home, **env)) as app:
        app.wait_for_prompt()
        app.mark()
        start = len(app._written)
        app.line("read it")
        app.wait_for_text("Alpha.")
        app.wait_for_prompt()
        app.ctrl_d()
        assert app.wait_exit() == 0
        return app._written[start:]


def test_no_color_and_the_light_theme_change_the_colours(project: Path, home: Path,
                                                         tmp_path: Path) -> None:
    dark = coloured_output(project, home)
    assert "\x1b[36m" in dark  # the tool line in cyan
    plain = coloured_output(project, tmp_path / "home2", NO_COLOR="1")
    assert not any(f"\x1b[{n}m" in plain or f";{n}m" in plain for n in range(31, 38))
    config(tmp_path / "home3", 'theme = "light"\n')
    light = coloured_output(project, tmp_path / "home3")
    assert "\x1b[34m" in light and "\x1b[36m" not in light  # blue, not cyan, on a light background
