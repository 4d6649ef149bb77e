"""Saved API keys and the last connection (provider, model, base URL), both under TETHER_HOME.

`credentials.json` is written atomically and is 0600 from the moment it
exists. A key is looked up in the environment first, then in that file. A
file that cannot be read is reported and left alone: nothing is saved over it
until the user fixes or removes it, so a key written by hand is never lost.
Keys are never shown: `Secret` keeps one out of reprs, logs and JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from ..host import (
    LoadedFile,
    atomic_write_json,
    dangling_link,
    read_file_bytes,
    read_json_file,
    reason_of,
    write_json_state,
)
from ..safety.secret_files import CREDENTIALS_FILE

CONNECTION_FILE = "connection.json"
FORMAT_VERSION = 1

API_KEY_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""The environment variables that may hold each provider's key, in the order they are read."""


class KeyStoreError(Exception):
    """The credentials file cannot be used; the message names it and says what to do."""


class Secret:
    """A key that prints as asterisks; `reveal()` is the only way to the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)


def clean_key(key: str) -> str:
    """A pasted key without its surrounding whitespace; ValueError (never naming it) if unusable."""
    key = key.strip()
    if not key:
        raise ValueError("the key is empty")
    if any(ch.isspace() for ch in key) or not key.isprintable():
        raise ValueError("the key contains spaces or control characters; paste it again")
    return key


class KeyStore:
    """API keys saved per provider in `home/credentials.json`."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / CREDENTIALS_FILE
        self.problem: str | None = None
        """Why the file could not be read at the last look, or None."""

    def __repr__(self) -> str:
        return f"KeyStore({str(self.path)!r})"

    def get(self, provider: str) -> str | None:
        secret = self._load().get(provider)
        return secret.reveal() if secret else None

    def providers(self) -> list[str]:
        """The providers with a saved key."""
        return sorted(self._load())

    def set(self, provider: str, key: str) -> None:
        """Save `key` for `provider`. Raises KeyStoreError if the file is unusable,
        ValueError if the key is."""
        keys = self._load_for_update()
        keys[provider] = Secret(clean_key(key))
        self._save(keys)

    def delete(self, provider: str) -> bool:
        """Forget the key of `provider`; False if none was saved."""
        keys = self._load_for_update()
        if provider not in keys:
            return False
        del keys[provider]
        self._save(keys)
        return True

    # -- file

    def _load(self) -> dict[str, Secret]:
        self.problem = None
        try:
            text = read_file_bytes(self.path).decode("utf-8")
        except FileNotFoundError:
            if dangling_link(self.path):
                return self._unreadable("is a symbolic link to a file that does not exist")
            return {}
        except OSError as exc:  # a FIFO or a device too: refused, not waited on
            return self._unreadable(reason_of(exc))
        except UnicodeDecodeError:
            return self._unreadable("is not UTF-8 text")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return self._unreadable(f"is not valid JSON (line {exc.lineno})")
        keys = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(keys, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in keys.items()
        ):
            return self._unreadable('does not hold a "keys" object of provider names and keys')
        return {name: Secret(value) for name, value in keys.items() if value}

    def _unreadable(self, reason: str) -> dict[str, Secret]:
        self.problem = f"{self.path} {reason}; saved keys are ignored until it is fixed or removed."
        return {}

    def _load_for_update(self) -> dict[str, Secret]:
        keys = self._load()
        if self.problem:
            raise KeyStoreError(f"{self.problem} Nothing was saved.")
        return keys

    def _save(self, keys: dict[str, Secret]) -> None:
        data = {"version": FORMAT_VERSION, "keys": {n: s.reveal() for n, s in sorted(keys.items())}}
        try:
            atomic_write_json(self.path, data, secret=True)
        except OSError as exc:
            raise KeyStoreError(f"cannot write {self.path} ({exc.strerror or exc}).") from None


def key_variables(provider: str) -> tuple[str, ...]:
    """The environment variables that may hold `provider`'s key (none for a keyless one)."""
    return API_KEY_ENV.get(provider, ())


def resolve_key(
    provider: str, env: Mapping[str, str], store: KeyStore | None
) -> tuple[str | None, str]:
    """The key to use and where it came from: "env NAME", "saved" or "missing"."""
    for variable in key_variables(provider):
        value = (env.get(variable) or "").strip()
        if value:
            return value, f"env {variable}"
    saved = store.get(provider) if store is not None else None
    if saved:
        return saved, "saved"
    return None, "missing"


class LastConnection(NamedTuple):
    """What /connect chose last: the provider, its model and (for a server of one's own) the
    base URL it was reached at ("" for the provider's own)."""

    provider: str
    model: str
    base_url: str = ""


class ConnectionStore:
    """The provider, model and base URL used last, in `home/connection.json`. Never a key:
    keys live in the key store alone, and a URL that carries credentials is not kept."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / CONNECTION_FILE

    def remember(self, provider: str, model: str, base_url: str = "") -> None:
        """Raises StateFileError, writing nothing, when the file there cannot be read;
        ValueError for a base URL that holds credentials (a user:password part or a query)."""
        entry = {"provider": provider, "model": model}
        if base_url:
            refuse_credentials_in_url(base_url)
            entry["base_url"] = base_url
        write_json_state(self.path, entry, self._load())

    def last(self) -> LastConnection | None:
        """The last connection, or None when nothing usable was saved."""
        data = self._load().data
        if data is None:
            return None
        return LastConnection(data["provider"], data.get("model", ""), data.get("base_url", ""))

    @property
    def problem(self) -> str:
        """Why the saved connection cannot be read ("" when it can, or there is none)."""
        return self._load().problem

    def _load(self) -> LoadedFile:
        return read_json_file(self.path, _connection_shape)


def refuse_credentials_in_url(url: str) -> None:
    """ValueError when `url` carries what may be a secret: a user or password, or a query."""
    parts = urlsplit(url)
    if parts.username or parts.password or parts.query:
        raise ValueError("the base URL holds credentials (a user, password or query part); "
                         "keys are saved with /connect's key question only")


def _connection_shape(data: Any) -> str:
    if not isinstance(data, dict):
        return "does not hold an object"
    provider, model = data.get("provider"), data.get("model", "")
    if not isinstance(provider, str) or not provider or not isinstance(model, str):
        return 'does not hold a "provider" and a "model" name'
    if not isinstance(data.get("base_url", ""), str):
        return 'holds a "base_url" that is not text'
    return ""
