"""tether's saved keys, out of every tool's reach: which files in TETHER_HOME hold them and
the guard that knows them however a path names them. `store.keys` reads and writes the keys;
this is the part every policy, loader and the sandbox ask, so it sits below them all."""

from __future__ import annotations

import os
from pathlib import Path

from ..host import file_identity, is_within, resolve_path, resolved_forms

CREDENTIALS_FILE = "credentials.json"
SECRET_FILES = (CREDENTIALS_FILE,)
"""Names of the files in TETHER_HOME (or below it) that no tool may read or change."""


class SecretFiles:
    """tether's saved keys, out of every tool's reach: by name inside the state directory
    (however the path is spelled, symlinks followed as the kernel follows them) and by
    identity (device and inode), so a hard link anywhere is refused too."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home)

    def __repr__(self) -> str:
        return f"SecretFiles({str(self.home)!r})"

    def _homes(self) -> set[str]:
        lexical = os.path.normpath(os.path.abspath(os.path.expanduser(self.home)))
        try:
            return {lexical, resolve_path(lexical, "/")}
        except (OSError, ValueError):
            return {lexical}

    def identities(self) -> set[tuple[int, int]]:
        """(device, inode) of every secret file there now (a save replaces the inode)."""
        found = (file_identity(str(self.home / name)) for name in SECRET_FILES)
        return {identity for identity in found if identity is not None}

    def is_secret(self, resolved: str) -> bool:
        """True for a resolved path that is a secret file, by name or by identity."""
        if self._named(resolved):
            return True
        identity = file_identity(resolved)
        return identity is not None and identity in self.identities()

    def guards(self, text: str, root: Path) -> bool:
        """True when a path a call names (as given, or as the kernel resolves it) is a
        secret file. A path the OS cannot represent reads nothing: False."""
        try:
            lexical = os.path.normpath(os.path.join(root, os.path.expanduser(text)))
            forms = resolved_forms(text, str(root))
        except ValueError:
            return False
        except OSError:  # a symlink loop: the kernel refuses it too; the checks refuse it first
            return self._named(lexical)
        return self._named(lexical) or any(self.is_secret(form) for form in forms)

    def _named(self, path: str) -> bool:
        return os.path.basename(path) in SECRET_FILES and any(
            is_within(path, home) for home in self._homes()
        )

    def holds(self, text: str, root: Path) -> bool:
        """True when the path a call names (as given, or as the kernel resolves it) is the
        state directory or lies in it. A path the OS cannot represent: True (refuse)."""
        forms = _named_forms(text, root)
        if forms is None:
            return True
        return any(is_within(form, home) for form in forms for home in self._homes())

    def held_below(self, text: str, root: Path) -> bool:
        """True when the directory a call names is the state directory or one above it."""
        forms = _named_forms(text, root)
        return forms is not None and any(
            is_within(home, form) for form in forms for home in self._homes()
        )


def _named_forms(text: str, root: Path) -> set[str] | None:
    """A path a call names, normalized as written and as the kernel resolves it; None when
    the OS cannot represent or resolve it (a NUL byte, a symlink loop)."""
    try:
        lexical = os.path.normpath(os.path.join(root, os.path.expanduser(text)))
        return {lexical, *resolved_forms(text, str(root))}
    except (ValueError, OSError):
        return None
