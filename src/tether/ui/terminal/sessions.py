"""The app's conversation and its saved session: which one is current, saving, titles, switching."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from tether.core.conversation import Conversation
from tether.core.messages import Message, TextDelta
from tether.providers.base import RequestOptions
from tether.runtime import Runtime
from tether.store.session import (
    SessionCorrupt,
    SessionRecord,
    SessionStore,
    SessionSummary,
    clean_title,
    continued_record,
    title_prompt,
)

from .asking import Say

TITLE_TIMEOUT = 20.0


class Sessions:
    """The current conversation and the record it is saved as. `runtime` gives the runtime
    in use now (a /connect replaces it): its model names the session and writes the title."""

    def __init__(self, store: SessionStore, root: Path, runtime: Callable[[], Runtime],
                 say: Say, record: SessionRecord) -> None:
        self.store = store
        self.root = root
        self.runtime = runtime
        self.say = say
        self.record = record
        self.conv = record.to_conversation()
        runtime().resume_skills(self.conv)

    @classmethod
    def opened(cls, store: SessionStore, root: Path, runtime: Callable[[], Runtime], say: Say,
               resume: str | None = None, continue_last: bool = False) -> Sessions:
        """The session the app starts with: `resume` by title or id (LookupError,
        SessionCorrupt), else with `continue_last` the folder's latest, else a new one."""
        record = continued_record(store, root, lambda text: say(text, "warning"), resume,
                                  continue_last)
        return cls.with_record(store, root, runtime, say, record)

    @classmethod
    def with_record(cls, store: SessionStore, root: Path, runtime: Callable[[], Runtime],
                    say: Say, record: SessionRecord | None) -> Sessions:
        """The app's sessions, starting with `record` (from `continued_record`), or with a
        new one when there is none to continue."""
        if record is None:
            record = store.new(root, runtime().settings.provider, runtime().model)
        return cls(store, root, runtime, say, record)

    def _fresh_record(self) -> SessionRecord:
        runtime = self.runtime()
        return self.store.new(self.root, runtime.settings.provider, runtime.model)

    # ------------------------------------------------------------ which one is current

    def start_new(self) -> None:
        """A new conversation; the old one stays saved as it was."""
        self.conv = Conversation()
        self.record = self._fresh_record()

    def switch_to(self, record: SessionRecord) -> None:
        self.record = record
        self.conv = record.to_conversation()
        self.runtime().resume_skills(self.conv)

    def find(self, title_or_id: str) -> SessionRecord:
        """A saved session of this folder; LookupError or SessionCorrupt when there is none."""
        return self.store.load(title_or_id, self.root)

    def listing(self) -> list[SessionSummary]:
        return self.store.list(self.root)

    def rename(self, title: str) -> None:
        """A title the user chose: it is never replaced by an automatic one."""
        self.record.title, self.record.autotitle = title, False

    def export(self, fmt: str, path: Path) -> Path:
        """Write the conversation as json or md to `path` (the caller chose it and asked
        about overwriting); OSError when it cannot be written."""
        self.record.update_from(self.conv)
        return self.store.export(self.record, fmt, path)  # type: ignore[arg-type]

    # ------------------------------------------------------------ saving

    async def save(self) -> None:
        """Save after an exchange; the first one with an answer also gets a title (unless
        automatic titles are off). A failure is one error line; the conversation stays."""
        runtime = self.runtime()
        self.record.update_from(self.conv)
        self.record.model = runtime.model
        self.record.provider = runtime.settings.provider
        if not self.record.messages:
            return
        if self.record.autotitle and not self.record.title:
            self.record.title = await self.make_title()
        try:
            self.store.save(self.record)
        except (SessionCorrupt, OSError) as exc:
            self.say(f"Session not saved: {exc}", "error")

    async def make_title(self) -> str:
        users = [m.text for m in self.conv.messages if m.role == "user" and m.text]
        answers = [m.text for m in self.conv.messages if m.role == "assistant" and m.text]
        if not users or not answers:
            return ""
        request = [Message.user(title_prompt(users[0], answers[-1]))]
        options = RequestOptions(self.runtime().model, max_tokens=40)
        try:
            return clean_title(await asyncio.wait_for(self._collect(request, options), TITLE_TIMEOUT))
        except Exception:  # a title is a nicety: any failure leaves the session untitled
            return ""

    async def _collect(self, request: list[Message], options: RequestOptions) -> str:
        text = ""
        async for event in self.runtime().provider.stream(request, None, options):
            if isinstance(event, TextDelta):
                text += event.text
        return text
