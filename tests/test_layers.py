"""The layer contract: the packages below the user interface never reach it.

The import graph is read from the source (ast), not from `sys.modules`, so an import
inside a function or under TYPE_CHECKING counts as much as one at the top: each is
a dependency on the module it names. Importing a module also runs its parent
packages' `__init__.py`, so a module depends on its parents too.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from pathlib import Path

import pytest

import tether

# The layers below the user interface, and what none of them may reach.
LOWER_LAYERS = ("host", "core", "engine", "protocol", "tools", "safety", "store", "providers", "mcp", "skills", "hooks")
UI_MODULES = ("tether.ui", "prompt_toolkit", "rich")
# A provider encodes and decodes messages; running tools is the loop's business.
PROVIDER_FORBIDDEN = ("tether.tools", "tether.engine.dispatch")

# The layers from the top down, each with what it may import: ARCHITECTURE.md's "Layers" table,
# row for row (a test compares the two). A layer imports only layers below it (later in the
# list), and of those only the ones its row names: the layers are an order, nothing runs upward.
LAYER_ORDER: list[tuple[str, set[str]]] = [
    ("__main__", {"cli"}),
    ("cli", {"core", "engine", "host", "providers", "runtime", "safety", "store", "ui"}),
    ("ui", {"core", "engine", "hooks", "host", "mcp", "providers", "runtime", "safety", "skills", "store", "tools"}),
    ("runtime", {"assist", "core", "engine", "hooks", "mcp", "providers", "safety", "skills", "store", "tools"}),
    ("assist", {"core", "engine", "host", "tools"}),
    ("hooks", {"core", "engine", "host", "safety", "store"}),
    ("engine", {"core", "host", "protocol", "providers", "safety", "store", "tools"}),
    ("mcp", {"core", "host", "safety", "store"}),
    ("skills", {"core", "host", "safety", "store", "tools"}),
    ("tools", {"core", "host", "safety", "store"}),
    ("providers", {"core", "host", "protocol", "safety", "store"}),
    ("store", {"core", "host", "safety"}),
    ("safety", {"core", "host"}),
    ("protocol", {"core"}),
    ("core", {"host"}),
    ("host", set()),
]
LAYERS: dict[str, set[str]] = dict(LAYER_ORDER)


def modules_of(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under `root`, by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_names(module: str, path: Path, known: set[str]) -> set[str]:
    """The dotted names one module imports, relative imports resolved."""
    is_package = path.name == "__init__.py"
    here = module.split(".") if is_package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            # `from pkg import mod` imports the module pkg.mod.
            names.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known)
    return names


def parents(name: str) -> list[str]:
    """The packages that run before a module: a.b.c needs a and a.b."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the names it depends on: its imports and its parent packages."""
    modules = modules_of(root, package)
    known = set(modules)
    graph = {}
    for module, path in modules.items():
        deps = imported_names(module, path, known) | set(parents(module))
        graph[module] = {d for d in deps if d and d != module}
    return graph


def cycle_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the package it needs loaded first, for finding cycles.

    An import of a.b.c needs a.b.c and the packages above it. The importer's own parent
    packages are left out: they are already loading when it runs, so Python never waits on
    them (a package's `__init__` importing its own modules is not a cycle). An explicit
    import of one's own package (`from . import x`) still counts.
    """
    modules = modules_of(root, package)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        own_parents = set(parents(module))
        deps: set[str] = set()
        for name in imported_names(module, path, known):
            deps.add(name)
            deps.update(p for p in parents(name) if p not in own_parents)
        graph[module] = {d for d in deps if d in known and d != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_chains(graph: dict[str, set[str]], start: str) -> dict[str, list[str]]:
    """Everything `start` reaches, each with one import chain that reaches it."""
    chains = {start: [start]}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for dep in sorted(graph.get(current, ())):
            if dep not in chains:
                chains[dep] = [*chains[current], dep]
                if dep in graph:
                    queue.append(dep)
    return chains


def under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(
    graph: dict[str, set[str]], package: str, layers: tuple[str, ...], forbidden: tuple[str, ...]
) -> dict[str, list[str]]:
    """Each module in `layers` that reaches a forbidden name, with one chain that does."""
    layer_prefixes = tuple(f"{package}.{layer}" for layer in layers)
    found = {}
    for module in sorted(graph):
        if not under(module, layer_prefixes):
            continue
        for name, chain in import_chains(graph, module).items():
            if under(name, forbidden):
                found[module] = chain
                break
    return found


def shown(found: dict[str, list[str]]) -> str:
    return "\n".join(" -> ".join(chain) for chain in found.values())


SRC = Path(tether.__file__).parent
GRAPH = import_graph(SRC, "tether")
CYCLE_GRAPH = cycle_graph(SRC, "tether")


def test_the_graph_sees_the_package() -> None:
    assert "tether.engine.loop" in GRAPH
    assert "tether.engine.dispatch" in GRAPH["tether.engine.loop"]
    assert "tether.ui.terminal.render" in import_chains(GRAPH, "tether.cli")
    assert any(under(name, ("rich",)) for name in import_chains(GRAPH, "tether.ui.terminal.render"))


def test_no_lower_layer_reaches_the_user_interface() -> None:
    found = violations(GRAPH, "tether", LOWER_LAYERS, UI_MODULES)
    assert not found, "these import chains reach the user interface:\n" + shown(found)


def test_providers_never_reach_tools_or_dispatch() -> None:
    found = violations(GRAPH, "tether", ("providers",), PROVIDER_FORBIDDEN)
    assert not found, "these import chains lead a provider to tools:\n" + shown(found)


def layer_of(name: str, package: str) -> str | None:
    """The layer a dotted name belongs to: the first name under the package (None: the package itself)."""
    parts = name.split(".")
    return parts[1] if parts[0] == package and len(parts) > 1 else None


def layer_imports(root: Path, package: str) -> dict[tuple[str, str], list[str]]:
    """(layer, layer it imports) -> the imports that make that edge ("module -> name")."""
    modules = modules_of(root, package)
    known = set(modules)
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in modules.items():
        source = layer_of(module, package)
        for name in sorted(imported_names(module, path, known)):
            target = layer_of(name, package)
            if source is not None and target is not None and target != source:
                edges.setdefault((source, target), []).append(f"{module} -> {name}")
    return edges


def undeclared(edges: dict[tuple[str, str], list[str]], layers: dict[str, set[str]]) -> list[str]:
    """The imports the table does not allow (a layer missing from it allows nothing)."""
    return [
        example
        for (source, target), examples in sorted(edges.items())
        if target not in layers.get(source, set())
        for example in examples
    ]


def unused(edges: dict[tuple[str, str], list[str]], layers: dict[str, set[str]]) -> list[str]:
    """The table's allowances no import uses: a table that allows more than the code does
    stops saying what the code does."""
    return [f"{source} -> {target}" for source, targets in sorted(layers.items())
            for target in sorted(targets) if (source, target) not in edges]


def architecture_layers(text: str) -> list[tuple[str, set[str]]]:
    """ARCHITECTURE.md's "Layers" table, row by row from the top: (layer, what it may import)."""
    section = text.split("### Layers", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([\w]+)` \| (.*?) \|$", section, re.M)
    return [(layer, set(re.findall(r"`(\w+)`", allowed))) for layer, allowed in rows]


def upward(order: list[tuple[str, set[str]]]) -> list[str]:
    """The allowances of a ranked table that do not point to a layer further down."""
    below = {layer: {name for name, _ in order[i + 1:]} for i, (layer, _) in enumerate(order)}
    return [f"{layer} -> {target}" for layer, allowed in order for target in sorted(allowed)
            if target not in below[layer]]


def layer_cycles(edges: dict[tuple[str, str], list[str]]) -> list[list[str]]:
    """The groups of layers that import one another, around a circle or both ways."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
    return cycles(graph)


LAYER_EDGES = layer_imports(SRC, "tether")


def test_every_import_between_layers_is_in_the_table() -> None:
    found = undeclared(LAYER_EDGES, LAYERS)
    assert not found, "imports the layer table does not allow (ARCHITECTURE.md, Layers):\n" + "\n".join(found)


def test_the_table_allows_nothing_the_code_does_not_do() -> None:
    found = unused(LAYER_EDGES, LAYERS)
    assert not found, "the layer table allows imports nothing makes (remove them):\n" + "\n".join(found)


def test_the_architecture_table_is_the_tested_table() -> None:
    text = (SRC.parents[1] / "ARCHITECTURE.md").read_text()
    assert architecture_layers(text) == LAYER_ORDER


def test_the_layers_are_an_order() -> None:
    """Each layer may import only layers below it: the table is a ranking, not a web."""
    assert len(LAYERS) == len(LAYER_ORDER), "a layer is listed twice"
    found = upward(LAYER_ORDER)
    assert not found, "the layer table lets these layers import upward:\n" + "\n".join(found)


def test_no_two_layers_import_each_other() -> None:
    """Read from the code alone, whatever the table says: no layer reaches back to one that
    reaches it, directly or around a circle of layers."""
    found = layer_cycles(LAYER_EDGES)
    assert not found, "these layers import one another:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_only_the_runtime_reaches_the_assist_package() -> None:
    """assist/ sits above engine/: the layers below never reach it (the loop sees it only
    through engine/turn_assist's seam), and only the runtime's wiring imports it."""
    found = violations(GRAPH, "tether", LOWER_LAYERS, ("tether.assist",))
    assert not found, "these import chains reach the assist package:\n" + shown(found)
    importers = {m for m, deps in GRAPH.items() if any(under(d, ("tether.assist",)) for d in deps)}
    assert {m for m in importers if not m.startswith("tether.assist")} == {"tether.runtime"}


def test_every_module_lives_in_a_layer() -> None:
    """A new module at the top beside the entry points would sit outside every contract."""
    top_level = {m for m in GRAPH if m.count(".") == 1 and (SRC / f"{m.split('.')[1]}.py").exists()}
    assert top_level == {"tether.__main__", "tether.cli", "tether.runtime"}


def test_no_import_cycles() -> None:
    """Modules that import each other cannot be understood, tested or moved one at a time."""
    found = cycles(CYCLE_GRAPH)
    assert not found, "these modules import each other:\n" + "\n".join(" <-> ".join(c) for c in found)


# The checker itself, on a package small enough to know every answer.


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


CLEAN = {
    "__init__.py": "",
    "core/__init__.py": "",
    "core/loop.py": "from .messages import Message\n",
    "core/messages.py": "class Message: ...\n",
    "ui/__init__.py": "",
    "ui/screen.py": "import rich\nfrom ..core.loop import Message\n",
}


def pkg_violations(root: Path, files: dict[str, str]) -> dict[str, list[str]]:
    graph = import_graph(write_package(root, files), "pkg")
    return violations(graph, "pkg", ("core",), ("pkg.ui", "rich"))


def test_checker_passes_a_package_whose_ui_sits_on_top(tmp_path: Path) -> None:
    graph = import_graph(write_package(tmp_path, CLEAN), "pkg")
    assert "pkg.core.loop" in import_chains(graph, "pkg.ui.screen")
    assert violations(graph, "pkg", ("core",), ("pkg.ui", "rich")) == {}


@pytest.mark.parametrize(
    ("planted", "reached"),
    [
        ("from ..ui.screen import x\n", "pkg.ui.screen"),
        ("from ..ui import screen\n", "pkg.ui"),
        ("from pkg.ui import screen\n", "pkg.ui"),
        ("import rich.console\n", "rich.console"),
        ("def later():\n    import pkg.ui.screen\n", "pkg.ui.screen"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..ui.screen import S\n", "pkg.ui.screen"),
    ],
)
def test_checker_finds_a_planted_violation(tmp_path: Path, planted: str, reached: str) -> None:
    found = pkg_violations(tmp_path, {**CLEAN, "core/messages.py": planted})
    assert found == {
        "pkg.core.loop": ["pkg.core.loop", "pkg.core.messages", reached],
        "pkg.core.messages": ["pkg.core.messages", reached],
    }


def test_checker_follows_a_chain_through_another_layer(tmp_path: Path) -> None:
    files = {
        **CLEAN,
        "store/__init__.py": "",
        "store/keys.py": "from ..util import helper\n",
        "util.py": "from .ui.screen import x\n",
        "core/messages.py": "from ..store.keys import k\n",
    }
    found = pkg_violations(tmp_path, files)
    chain = ["pkg.core.messages", "pkg.store.keys", "pkg.util", "pkg.ui.screen"]
    assert found["pkg.core.messages"] == chain


def test_checker_counts_a_parent_package_init(tmp_path: Path) -> None:
    """Importing pkg.tools.x runs pkg/tools/__init__.py, and so what that imports."""
    files = {
        **CLEAN,
        "tools/__init__.py": "from ..ui import screen\n",
        "tools/x.py": "",
        "core/messages.py": "from ..tools.x import y\n",
    }
    found = pkg_violations(tmp_path, files)
    assert found["pkg.core.messages"] == ["pkg.core.messages", "pkg.tools.x", "pkg.tools", "pkg.ui"]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # a module and its package's face, the face importing the module: not a cycle
        ({"__init__.py": "from .a import x\n", "a.py": "x = 1\n"}, []),
        # two modules importing each other, one inside a function
        ({"__init__.py": "", "a.py": "from .b import y\n", "b.py": "def f():\n    from .a import x\n"},
         [["pkg.a", "pkg.b"]]),
        # under TYPE_CHECKING
        ({"__init__.py": "", "a.py": "from .b import y\n",
          "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n"},
         [["pkg.a", "pkg.b"]]),
        # through another package's face: importing pkg.t.m runs pkg/t/__init__.py
        ({"__init__.py": "", "s.py": "from .t.m import y\n", "t/__init__.py": "from ..s import x\n",
          "t/m.py": ""}, [["pkg.s", "pkg.t"]]),
        # a module importing its own package's face, which imports it back
        ({"__init__.py": "from .a import x\n", "a.py": "from . import y\n"}, [["pkg", "pkg.a"]]),
    ],
)
def test_checker_finds_cycles(tmp_path: Path, files: dict[str, str], expected: list[list[str]]) -> None:
    assert cycles(cycle_graph(write_package(tmp_path, files), "pkg")) == expected


def test_layer_checker_finds_an_import_the_table_does_not_allow(tmp_path: Path) -> None:
    files = {**CLEAN, "core/messages.py": "def later():\n    from ..ui import screen\n"}
    edges = layer_imports(write_package(tmp_path, files), "pkg")
    layers = {"ui": {"core"}, "core": set()}
    assert undeclared(edges, layers) == ["pkg.core.messages -> pkg.ui", "pkg.core.messages -> pkg.ui.screen"]
    assert unused(edges, {**layers, "core": {"ui", "store"}}) == ["core -> store"]
    assert undeclared(edges, {"ui": {"core"}, "core": {"ui"}}) == []


def test_the_architecture_table_is_read_row_by_row() -> None:
    text = "### Layers\n\n| layer | may import |\n| --- | --- |\n| `a` | `b`, `c` |\n| `b` |  |\n\n## Next\n| `z` | `y` |\n"
    assert architecture_layers(text) == [("a", {"b", "c"}), ("b", set())]


def test_the_order_checker_finds_an_allowance_that_runs_upward() -> None:
    assert upward([("ui", {"core"}), ("core", set())]) == []
    assert upward([("ui", {"core"}), ("core", {"ui", "store"}), ("store", set())]) == ["core -> ui"]
    assert upward([("a", {"a"})]) == ["a -> a"]


def test_the_layer_cycle_checker_reads_the_code_edges(tmp_path: Path) -> None:
    files = {**CLEAN, "store/__init__.py": "", "store/keys.py": "from ..core.messages import Message\n"}
    edges = layer_imports(write_package(tmp_path, files), "pkg")
    assert layer_cycles(edges) == []
    files["core/messages.py"] = "def later():\n    from ..store import keys\n"
    edges = layer_imports(write_package(tmp_path / "again", files), "pkg")
    assert layer_cycles(edges) == [["core", "store"]]


# Package faces: a package that declares one (`__all__` in its `__init__.py`) is used from
# outside only through it, so what it offers is one list and its modules can move inside it.


def faces(root: Path, package: str) -> dict[str, set[str]]:
    """Each package that declares a face, with the names its `__all__` lists."""
    found = {}
    for module, path in modules_of(root, package).items():
        if path.name != "__init__.py":
            continue
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                found[module] = set(ast.literal_eval(node.value))
    return found


def past_the_face(root: Path, package: str) -> list[str]:
    """Imports from outside a faced package that reach into its modules, or that ask its face
    for a name it does not list."""
    modules = modules_of(root, package)
    known = set(modules)
    faced = faces(root, package)
    found = []
    for module, path in modules.items():
        outside = [face for face in faced if not under(module, (face,))]
        for name in sorted(imported_names(module, path, known)):
            found += [f"{module} -> {name} (import it from {face})"
                      for face in outside if name.startswith(face + ".")]
        for node in ast.walk(ast.parse(path.read_text())):
            source = resolved_from(module, path, node) if isinstance(node, ast.ImportFrom) else ""
            if source in outside:
                found += [f"{module} -> {source}.{a.name} (not in {source}.__all__)"
                          for a in node.names if a.name not in faced[source]]
    return found


def resolved_from(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The dotted name one `from ... import` statement reads from."""
    if not node.level:
        return node.module or ""
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = here[: len(here) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


FACED = ("tether.host", "tether.protocol", "tether.assist")


def test_the_packages_with_a_face() -> None:
    """The bottom layer, the text protocol and the assist package declare a face. The engine
    does not: the UI and the wiring load its modules one by one, late, for start-up speed."""
    assert set(faces(SRC, "tether")) >= set(FACED)


def test_a_faced_package_is_used_only_through_its_face() -> None:
    found = past_the_face(SRC, "tether")
    assert not found, "these imports go past a package's face:\n" + "\n".join(found)


def test_the_face_checker_finds_an_import_past_the_face(tmp_path: Path) -> None:
    files = {
        **CLEAN,
        "core/__init__.py": "from .messages import Message\n\n__all__ = ['Message']\n",
        "ui/screen.py": "from ..core import Message\n",
    }
    assert past_the_face(write_package(tmp_path, files), "pkg") == []
    files["ui/screen.py"] = "from ..core.messages import Message\nfrom ..core import Other\n"
    assert past_the_face(write_package(tmp_path / "again", files), "pkg") == [
        "pkg.ui.screen -> pkg.core.messages (import it from pkg.core)",
        "pkg.ui.screen -> pkg.core.Other (not in pkg.core.__all__)",
    ]
