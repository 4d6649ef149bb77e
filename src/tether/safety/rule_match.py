"""How a rule's pattern matches: `*` and `?` over commands and paths, and a path in
every spelling a rule must see (normalized as written, and as the kernel resolves it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..host import resolved_forms

WILDCARDS = "*?"


def pattern_matches(pattern: str, value: str) -> bool:
    """`*` and `?` wildcards over the whole value; a pattern without wildcards
    matches itself and itself followed by a space and anything."""
    if any(ch in pattern for ch in WILDCARDS):
        return _glob_match(pattern, value)
    return value == pattern or value.startswith(pattern + " ")


def path_pattern_matches(pattern: str, value: str) -> bool:
    """Paths match the whole value only: `write_file(README.md)` must not also cover
    `README.md evil.sh`, as the command-style prefix form would."""
    if any(ch in pattern for ch in WILDCARDS):
        return _glob_match(pattern, value)
    return value == pattern


def _glob_match(pattern: str, value: str) -> bool:
    """Only `*` (any run, `/` included) and `?` are special: fnmatch's `[seq]` would
    turn a `[` in a command into a pattern. Matched by backtracking to the last
    `*` only, so a hostile pattern costs at most len(pattern) * len(value) steps
    (a regex of `*a*a*a*...` can take exponential time, and project deny rules
    are read even from folders nobody trusts)."""
    p = v = 0
    star, resume = -1, 0
    while v < len(value):
        if p < len(pattern) and pattern[p] == "*":
            star, resume = p, v
            p += 1
        elif p < len(pattern) and pattern[p] in ("?", value[v]):
            p += 1
            v += 1
        elif star >= 0:
            p, resume = star + 1, resume + 1
            v = resume
        else:
            return False
    return all(ch == "*" for ch in pattern[p:])


@dataclass
class _PathViews:
    lexical: list[str]
    """The path normalized (`..` and `.` folded), relative to the root and absolute."""
    real: list[list[str]] | None
    """The path as the kernel resolves it (symlinks followed where met, before any `..`),
    once with the last symlink followed and once without when those differ, each in its
    spellings (absolute, relative to the root); None when there is no root to resolve against."""
    every: list[str]
    """Every spelling, the path as given included: what deny rules look at."""


def _path_views(value: str, root: Path | None) -> _PathViews:
    expanded = os.path.expanduser(value) if value else value
    norm = os.path.normpath(expanded) if expanded else ""
    lexical = [norm]
    real: list[list[str]] | None = None
    if root is not None and norm:
        root_abs = os.path.abspath(root)
        absolute = os.path.normpath(os.path.join(root_abs, norm))
        lexical += [absolute, *_inside(absolute, root_abs)]
        root_real = resolved_forms(root_abs, "/")[0]
        real = [_spellings(form, root_abs, root_real) for form in resolved_forms(value, root_abs)]
    spelled = [spelling for group in real or [] for spelling in group]
    every = list(dict.fromkeys([value, expanded, *lexical, *spelled]))
    return _PathViews(lexical, real, every)


def _spellings(resolved: str, root_abs: str, root_real: str) -> list[str]:
    """A resolved path absolute, and relative to the root when inside it (also under the
    root as the user spelled it)."""
    relative = _inside(resolved, root_real)
    under_root = [os.path.normpath(os.path.join(root_abs, r)) for r in relative]
    return list(dict.fromkeys([resolved, *relative, *under_root]))


def _inside(path: str, root: str) -> list[str]:
    """`path` relative to `root` as a one-item list, or [] when it lies outside."""
    if path == root:
        return ["."]
    prefix = root if root.endswith(os.sep) else root + os.sep
    return [path[len(prefix) :]] if path.startswith(prefix) else []


def _path_matcher(pattern: str | None) -> Callable[[str], bool]:
    """A rule's pattern as written and normalized (`./src/*` is `src/*`); None covers all."""
    if pattern is None:
        return lambda value: True
    patterns = {pattern, os.path.normpath(os.path.expanduser(pattern))}
    return lambda value: any(path_pattern_matches(p, value) for p in patterns)


def _path_rule_allows(pattern: str | None, views: _PathViews) -> bool:
    """Allowed only if the normalized path matches and the path the kernel reaches (with
    and without following a last symlink) does too: a link inside src/ may point anywhere,
    and `src/lnk/../x` is not in src/ when lnk leads out. The path as given is not
    consulted: `src/../x` must not pass for `src/*`."""
    covers = _path_matcher(pattern)
    lexical = any(covers(v) for v in views.lexical)
    real = views.real or []
    return lexical and all(any(covers(v) for v in group) for group in real)
