"""get_code_skeleton and query_ast_node: outlines in every grammar of the ast extra, queries
with their errors, the standard-library fallback when the extra is missing, the path guards
shared with the file tools, and the small profile keeping the tools behind tool_search."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tether.core.messages import ToolCall
from tether.core.toolspec import ToolContext, ToolError
from tether.core.ui_protocol import SilentUI
from tether.engine.dispatch import Dispatcher
from tether.safety.approval import ApprovalPolicy
from tether.safety.permissions import Rule, RuleSet
from tether.tools import builtin_tools
from tether.tools.ast_tools import AstTools
from tether.tools.params import QueryAstParams, SkeletonParams

FIXTURES = {
    "shapes.py": '''import math


class Shape:
    """A shape."""

    def area(self, scale: float = 1.0) -> float:
        return 0.0


async def load(path: str, *, retries: int = 3) -> "Shape":
    def inner():
        return None
    return Shape()
''',
    "shapes.ts": '''export interface Shape {
  area(): number;
}

export class Circle implements Shape {
  area(): number {
    return Math.PI;
  }
}

export function makeCircle(r: number): Circle {
  return new Circle();
}
''',
    "app.js": '''class Store extends Base {
  get(key) { return key; }
}

function render(view, data) {
  return view(data);
}
''',
    "server.go": '''package main

type Server struct {
	port int
}

func (s *Server) Start(addr string) error {
	return nil
}
''',
    "point.rs": '''pub struct Point {
    x: i32,
}

pub fn distance(a: &Point, b: &Point) -> f64 {
    0.0
}
''',
    "Greeter.java": '''public class Greeter {
    public String greet(String name) {
        return name;
    }
}
''',
    "math.c": '''struct vec { int x; };

static int add(int a,
               int b) {
    return a + b;
}
''',
    "widget.cpp": '''class Widget : public Base {
 public:
  void draw(int x) const {
    paint(x);
  }
};
''',
}

EXPECTED_OUTLINES = {
    "shapes.py": [
        "class Shape  [L4-8]",
        "  def area(self, scale: float = 1.0) -> float  [L7-8]",
        'async def load(path: str, *, retries: int = 3) -> "Shape"  [L11-14]',
        "  def inner()  [L12-13]",
    ],
    "shapes.ts": [
        "interface Shape  [L1-3]",
        "  area(): number  [L2-2]",
        "class Circle implements Shape  [L5-9]",
        "  area(): number  [L6-8]",
        "function makeCircle(r: number): Circle  [L11-13]",
    ],
    "app.js": ["class Store extends Base  [L1-3]", "  get(key)  [L2-2]", "function render(view, data)  [L5-7]"],
    "server.go": ["Server struct  [L3-5]", "func (s *Server) Start(addr string) error  [L7-9]"],
    "point.rs": ["pub struct Point  [L1-3]", "pub fn distance(a: &Point, b: &Point) -> f64  [L5-7]"],
    "Greeter.java": ["public class Greeter  [L1-5]", "  public String greet(String name)  [L2-4]"],
    "math.c": ["struct vec  [L1-1]", "static int add(int a, int b)  [L3-6]"],
    "widget.cpp": ["class Widget : public Base  [L1-6]", "  void draw(int x) const  [L3-5]"],
}


def needs_tree_sitter() -> None:
    pytest.importorskip("tree_sitter", reason="the ast extra (installed by the test extra)")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in FIXTURES.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.fixture
def without_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ast extra as if it were not installed: importing tree_sitter fails."""
    monkeypatch.setitem(sys.modules, "tree_sitter", None)


def skeleton(root: Path, name: str, tools: AstTools | None = None) -> str:
    return (tools or AstTools()).skeleton(SkeletonParams(filepath=name), ToolContext(root=root)).text


def query(root: Path, name: str, text: str, tools: AstTools | None = None) -> str:
    params = QueryAstParams(filepath=name, query=text)
    return (tools or AstTools()).query(params, ToolContext(root=root)).text


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_grammar_outlines_its_file(project: Path, name: str) -> None:
    needs_tree_sitter()
    lines = skeleton(project, name).splitlines()
    assert lines[1:] == EXPECTED_OUTLINES[name]
    assert "return" not in "\n".join(lines)  # signatures only, never bodies


def test_query_shows_each_capture_with_its_lines_and_text(project: Path) -> None:
    needs_tree_sitter()
    text = query(project, "shapes.py", "(function_definition name: (identifier) @fn)")
    assert text.splitlines() == [
        "3 captures in shapes.py:",
        "@fn L7-7 (identifier):", "    area",
        "@fn L11-11 (identifier):", "    load",
        "@fn L12-12 (identifier):", "    inner",
    ]


def test_long_captures_are_capped(tmp_path: Path) -> None:
    needs_tree_sitter()
    body = "\n".join(f"    x{i} = {i}" for i in range(200))
    (tmp_path / "big.py").write_text(f"def big():\n{body}\n")
    text = query(tmp_path, "big.py", "(function_definition) @whole")
    assert "@whole L1-201 (function_definition):" in text
    assert "x5 = 5" not in text and "characters in all]" in text


def test_a_bad_query_gets_a_clear_error(project: Path) -> None:
    needs_tree_sitter()
    with pytest.raises(ToolError, match="Invalid tree-sitter query for python: .*Invalid node type"):
        query(project, "shapes.py", "(no_such_node) @x")
    with pytest.raises(ToolError, match="S-expression of node types with @captures"):
        query(project, "shapes.py", "(function_definition")


def test_a_query_without_captures_says_so(project: Path) -> None:
    needs_tree_sitter()
    assert "names no @captures" in query(project, "shapes.py", "(function_definition)")


def test_a_file_without_a_grammar_is_refused_by_name(project: Path) -> None:
    (project / "notes.txt").write_text("hello\n")
    with pytest.raises(ToolError, match=r"notes.txt: no grammar for '.txt' files \(known: c, cpp,"):
        skeleton(project, "notes.txt")
    with pytest.raises(ToolError, match="no grammar"):
        query(project, "notes.txt", "(x) @y")


def test_missing_files_and_folders_get_the_file_tools_messages(project: Path) -> None:
    with pytest.raises(ToolError, match="File not found: shape.py.*shapes.py"):
        skeleton(project, "shape.py")
    (project / "pkg.py").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        skeleton(project, "pkg.py")


# ---------------------------------------------------------------- without the extra


def test_without_the_extra_python_is_outlined_by_the_standard_library(
    project: Path, without_extra: None
) -> None:
    tools = AstTools()
    assert not tools.grammars.available
    lines = skeleton(project, "shapes.py", tools).splitlines()
    assert "from Python's ast module" in lines[1] and "pip install 'tether[ast]'" in lines[1]
    assert lines[2:] == [
        "class Shape  [L4-8]",
        "  def area(self, scale: float=1.0) -> float  [L7-8]",
        "async def load(path: str, *, retries: int=3) -> 'Shape'  [L11-14]",
        "  def inner()  [L12-13]",
    ]


def test_without_the_extra_other_languages_and_queries_say_how_to_install_it(
    project: Path, without_extra: None
) -> None:
    tools = AstTools()
    with pytest.raises(ToolError, match=r"Outlining go needs tree-sitter: .*pip install 'tether\[ast\]'"):
        skeleton(project, "server.go", tools)
    with pytest.raises(ToolError, match=r"query_ast_node needs tree-sitter.*pip install 'tether\[ast\]'"):
        query(project, "shapes.py", "(identifier) @x", tools)


def test_without_the_extra_broken_python_gets_its_line(tmp_path: Path, without_extra: None) -> None:
    (tmp_path / "broken.py").write_text("def ok():\n    pass\n\ndef broken(:\n")
    with pytest.raises(ToolError, match=r"broken.py is not valid Python \(line 4"):
        skeleton(tmp_path, "broken.py")


# ---------------------------------------------------------------- guards and the menu


def guarded_dispatcher(root: Path, deny: tuple[str, ...] = ()) -> Dispatcher:
    table, _ = builtin_tools(ToolContext(root=root))
    rules = RuleSet([Rule.parse("*", "test")], [Rule.parse(r, "test") for r in deny])
    policy = ApprovalPolicy(root, rules, auto=True, home=None, tools=table)
    return Dispatcher(table, ToolContext(root=root, may_read=policy.may_read), SilentUI(), policy=policy)


async def test_deny_read_rules_apply_to_the_outline_tools(project: Path) -> None:
    d = guarded_dispatcher(project, deny=("read(shapes.ts)",))
    for name, args in (("get_code_skeleton", {"filepath": "shapes.ts"}),
                       ("query_ast_node", {"filepath": "shapes.ts", "query": "(identifier) @x"})):
        result, _ = await d.dispatch(ToolCall("c1", name, args))
        assert result.is_error and "Blocked by a permission rule" in result.content
    result, _ = await d.dispatch(ToolCall("c3", "get_code_skeleton", {"filepath": "shapes.py"}))
    assert not result.is_error and "class Shape" in result.content


def test_the_small_profile_defers_the_code_structure_tools(tmp_path: Path) -> None:
    from tether.core.profile import CORE_TOOLS
    from tether.engine.toolmenu import ToolMenu

    table, _ = builtin_tools(ToolContext(root=tmp_path))
    menu = ToolMenu(table, CORE_TOOLS)
    for name in ("get_code_skeleton", "query_ast_node", "repo_map"):
        assert name in table and not menu.is_offered(name)
    assert "repo_map" in menu.search("select:repo_map") and menu.is_offered("repo_map")
