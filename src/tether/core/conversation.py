"""A conversation as every layer keeps it: the history and what its turns did. The loop
(`engine/loop.py`) adds to it, sessions (`store/session.py`) save and restore it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .messages import Evidence, Message, Usage


@dataclass
class Conversation:
    """The history plus what the last turn did. Never holds the system prompt."""

    messages: list[Message] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    """Model requests completed, over the whole conversation (as `usage` counts tokens)."""
    context_tokens: int = 0
    """Input tokens of the latest request: how full the context window is."""
    loaded_tools: set[str] = field(default_factory=set)
    """Deferred tools loaded with tool_search: offered for the rest of the conversation."""
