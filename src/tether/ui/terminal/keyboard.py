"""Every question asked at the terminal: one key for a choice, a line for free text.

A choice (`Choices`) is answered by one key, no Enter: an approval, the trust question, an MCP
server to start, a plan, a commit, a file to replace. Esc is no. A key that answers nothing
says which keys do, under the question, and the question waits on. Free text (a reason, a
commit message of your own) is read as a line after the key that asked for it.

No question is answered by keys typed before it was drawn: each runs through
`TypedAhead.fresh`, which keeps those keys for the next message and says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.key_binding import KeyBindings, KeyPress, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from rich.console import Console
from rich.text import Text

from tether.core.textclip import clip_words

from .fit import screen_width, word_wrapped
from .shown import shown
from .typed_ahead import TypedAhead

KEPT_NOTE_CHARS = 40
"""Characters of the typed-ahead text a note quotes."""
DROPPED_NOTE = "Keys typed before the question were dropped, not taken as its answer."
"""Said instead of quoting them when the question asks for a secret."""


@dataclass(frozen=True)
class Choices:
    """A question answered by one key."""

    question: str
    """Shown with the keys that answer it, e.g. "Allow? [y]es / [n]o (Esc: no) "."""
    answers: Mapping[str, str]
    """Key name ("y", "escape", "enter") -> the word shown after the question once answered."""
    again: str
    """Shown under the question when a key that answers nothing is pressed."""
    stopped: str = "no"
    """Shown after the question when Ctrl-C or Ctrl-D ends it."""


def yes_no(question: str) -> Choices:
    """A question whose safe answer, no, is also what Enter and Esc say."""
    return Choices(f"{question} [y/N] ", {"y": "yes", "n": "no", "enter": "no", "escape": "no"},
                   "Press y or n (Enter or Esc: no).")


def key_name(press: KeyPress) -> str:
    """"enter", "escape", a character (lower case), or prompt_toolkit's name for the key."""
    if press.key in (Keys.ControlM, Keys.ControlJ):
        return "enter"
    if isinstance(press.key, Keys):
        return press.key.value
    return press.data.lower()


def kept_note(kept: str) -> str:
    """What a question says about keys typed before it: not its answer, and where they went."""
    quoted = clip_words(" ".join(kept.split()), KEPT_NOTE_CHARS)
    return f"Typed ahead, not an answer: “{quoted}” (kept for your next message)"


async def read_key(choices: Choices, typed_ahead: TypedAhead) -> str:
    """The name of the key that answers `choices`, pressed after the question was drawn (a
    prompt_toolkit app, so an arrow key's escape sequence is one key and not Esc); the question
    is erased, the caller prints the answer. KeyboardInterrupt or EOFError on Ctrl-C or Ctrl-D."""
    pressed_other = False
    keys = KeyBindings()

    @keys.add(Keys.Any)
    @keys.add("escape", eager=True)
    def _key(event: KeyPressEvent) -> None:
        nonlocal pressed_other
        name = key_name(event.key_sequence[0])
        if name in choices.answers:
            event.app.exit(result=name)
        else:
            pressed_other = True

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    @keys.add("c-d")
    def _end(event: KeyPressEvent) -> None:
        event.app.exit(exception=EOFError())

    def notes() -> str:
        kept = typed_ahead.pending()
        lines = ([kept_note(kept)] if kept else []) + (["  " + choices.again] if pressed_other else [])
        return "\n".join(lines)

    below = ConditionalContainer(Window(FormattedTextControl(notes), dont_extend_height=True),
                                 filter=Condition(lambda: bool(notes())))
    def drawn_question() -> FormattedText:  # wrapped between words, the cursor after it
        text = word_wrapped(choices.question, screen_width() - 1).rstrip(" ")
        return FormattedText([("", text + " "), ("[SetCursorPosition]", " ")])  # (not empty: dropped)

    question = Window(FormattedTextControl(drawn_question, show_cursor=True),
                      dont_extend_height=True, wrap_lines=False)
    app: Application[str] = Application(layout=Layout(HSplit([question, below])),
                                        key_bindings=keys, erase_when_done=True)
    return await typed_ahead.fresh(app, lambda pre_run: app.run_async(pre_run=pre_run,
                                                                       handle_sigint=False))


class Asker:
    """Asks the person at the terminal; what was typed ahead of a question goes to
    `typed_ahead` (the chat's next input line starts with it) and is mentioned once."""

    def __init__(self, console: Console, typed_ahead: TypedAhead | None = None,
                 on_question: Callable[[], None] = lambda: None) -> None:
        self.console = console
        self.typed_ahead = TypedAhead() if typed_ahead is None else typed_ahead
        self.on_question = on_question
        """Told as each question opens (the app's notifier)."""

    async def choose(self, choices: Choices) -> str | None:
        """The key that answered (a key of `choices.answers`), None for Ctrl-C or Ctrl-D; the
        question stays on the screen with the answer after it."""
        self.on_question()
        try:
            key: str | None = await read_key(choices, self.typed_ahead)
        except (KeyboardInterrupt, EOFError):
            key = None
        answer = Text(choices.stopped, style="tool.error") if key is None else Text(choices.answers[key])
        self.console.print(Text(choices.question, style="bold").append_text(answer))
        self.tell_kept()
        return key

    async def confirm(self, question: str) -> bool:
        """A yes/no question (`yes_no`): True only for y."""
        return await self.choose(yes_no(question)) == "y"

    async def line(self, message: str, default: str = "", secret: bool = False,
                   fresh: bool = True) -> str:
        """One line typed at a prompt of its own; KeyboardInterrupt or EOFError on Ctrl-C or
        Ctrl-D. `fresh`: keys typed before the prompt was drawn are not part of it (False for
        a line that a key answer asked for, such as a reason: what follows that key is meant).
        Keys typed ahead of a `secret` line may be the secret itself: they are dropped, never
        shown nor kept for the next message."""
        self.on_question()
        session: PromptSession[str] = PromptSession()

        def prompt(pre_run: Callable[[], None] | None = None) -> Awaitable[str]:
            return session.prompt_async(lambda: word_wrapped(message, screen_width() - 1),
                                        default=default, handle_sigint=False,
                                        is_password=secret, pre_run=pre_run)

        if not fresh:
            return await prompt()
        holder = TypedAhead() if secret else self.typed_ahead
        try:
            return await holder.fresh(session.app, prompt)
        finally:
            if secret and holder.news():
                self.console.print(shown(DROPPED_NOTE, "notice"))
            elif not secret:
                self.tell_kept()

    def tell_kept(self) -> None:
        """One line about keys typed ahead of the question just answered, if there were any."""
        kept = self.typed_ahead.news()
        if kept:
            self.console.print(shown(kept_note(kept), "notice"))
