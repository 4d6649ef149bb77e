"""thumbs/resize.py: the code is the same (its syntax tree without docstrings), thumbnail_size's
docstring gives max_side the default 320 and not 256, and every other docstring line that states
a default still states it as before."""

import ast
import re

from checklib import fail, original_text, passed, require_unchanged, text

FILE = "thumbs/resize.py"


def parse(source: str, what: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        fail(f"{what} no longer parses: {exc}")


def without_docstrings(tree: ast.Module) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree)


def docstrings(tree: ast.Module) -> dict[str, str]:
    found = {"<module>": ast.get_docstring(tree) or ""}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = ast.get_docstring(node) or ""
    return found


docs = docstrings(parse(text(FILE), FILE))
old_docs = docstrings(parse(original_text(FILE), "the original"))
if without_docstrings(parse(text(FILE), FILE)) != without_docstrings(parse(original_text(FILE), "")):
    fail(f"the code of {FILE} changed; only a docstring was to be fixed")
max_side = [line for line in docs.get("thumbnail_size", "").splitlines()
            if line.strip().startswith("max_side") and "default" in line.lower()]
if not max_side or not all(re.search(r"\b320\b", line) for line in max_side):
    fail(f"thumbnail_size's docstring should give max_side the default 320: {max_side}")
if re.search(r"\b256\b", docs.get("thumbnail_size", "")):
    fail("thumbnail_size's docstring still says 256")
for name, old in old_docs.items():
    for line in old.splitlines():
        if "default" in line and not line.strip().startswith("max_side") \
                and line.strip() not in docs.get(name, ""):
            fail(f"{name}'s docstring no longer says {line.strip()!r}, which was right")
require_unchanged("thumbs/__init__.py")
passed()
