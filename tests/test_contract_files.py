"""What each of a lesson's four files may hold (issue 46, item 4; ``docs/lessons.md``, "The four files"), read
from the source with ``ast`` (nothing is imported or run: this is the fast tier).

- ``page.py``: layout. No ``st.query_params``, no widget bound with ``bind=``, no ``check_link``, no write to
  ``st.session_state`` (``st.session_state[k] = …``, ``st.session_state.k = …``, ``del``, ``.update``,
  ``.setdefault``, ``.pop``, ``.clear``): the shell's helpers do those.
- ``draw.py``: top level holds only imports, the docstring, constants (assignments whose calls are one-line shell
  cache bindings ``cached(n)(model.f)``, ``resource(n)(model.f)``, ``figure(n)(charts.f)``, ``translator(…)`` or
  built-in containers), ``@section`` functions, ``@cached(n)`` bindings whose body is
  one ``return`` of one call (an adapter from the page's key to ``model.py``'s arguments) and drawing helpers: an
  undecorated function that draws (calls ``st.…`` or a section or another drawing helper of the file) and is called
  by a section or a helper of the file (never only by the page). No class, no other decorator.
- ``model.py`` and ``charts.py``: no Streamlit, directly or through the modules they import (followed through
  ``explorer``'s own modules). The door to the real model, :mod:`explorer.shell.llm`, uses Streamlit's resource
  cache for the loaded model: ``model.py`` may import it, and the walk stops there (what the door does with
  Streamlit is the door's business; ``tests/test_imports.py`` checks the door itself).
- ``model.py``, ``charts.py`` (the computation modules) import no ``page`` or ``draw`` module.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.test_imports import import_graph, modules

ROOT = Path(__file__).resolve().parents[1]
LESSONS_DIR = ROOT / "explorer" / "lessons"
LESSONS = sorted(p.name for p in LESSONS_DIR.iterdir() if (p / "page.py").exists())


DOOR = "explorer.shell.llm"
SESSION_STATE_WRITES = {"update", "setdefault", "pop", "clear", "popitem", "__setitem__", "__delitem__"}
CONSTANT_CALLS = {"translator", "N_", "tuple", "frozenset", "dict", "set", "list", "range"}


# --- page.py -------------------------------------------------------------------------------------------------


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state" and ast.unparse(node.value) == "st"


def page_problems(source: str) -> list[str]:
    """What a ``page.py`` holds that the shell's helpers should do (``line: what``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "query_params":
            out.append(f"{node.lineno}: st.query_params (links are the shell's: controls.draw)")
        elif isinstance(node, (ast.Name, ast.Attribute)) and getattr(node, "id", getattr(node, "attr", "")) \
                == "check_link":
            out.append(f"{node.lineno}: check_link (declare the control instead)")
        elif isinstance(node, ast.Call) and any(k.arg == "bind" for k in node.keywords):
            out.append(f"{node.lineno}: a widget bound with bind= (declare the control instead)")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, (ast.Subscript, ast.Attribute)) and _is_session_state(t.value):
                    out.append(f"{node.lineno}: writes st.session_state")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in SESSION_STATE_WRITES and _is_session_state(node.func.value):
            out.append(f"{node.lineno}: st.session_state.{node.func.attr}(…)")
    return out


# --- draw.py -------------------------------------------------------------------------------------------------


def _decorator_name(node: ast.expr) -> str:
    """``section`` for ``@section`` / ``@cache.section``; ``cached`` for ``@cached(3)``; else the source."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr if node.attr in ("section", *CACHE_BINDINGS) else ast.unparse(node)
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def _called_names(func: ast.AST) -> set[str]:
    """Plain names called in ``func``'s body (``helper(…)``), and names passed on as arguments (``numbers=table``)."""
    out = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                out.add(node.func.id)
            out |= {a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)}
    return out


def _calls_streamlit(func: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and ast.unparse(n.func).split(".")[0] == "st" for n in ast.walk(func))


def _body_without_docstring(func: ast.FunctionDef) -> list[ast.stmt]:
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


CACHE_BINDINGS = {"cached", "figure", "resource"}
"""The shell's caches (:mod:`explorer.shell.cache`) a ``draw.py`` binds in one line: ``cached(n)(model.f)`` a
computation, ``resource(n)(model.f)`` one shared and never copied, ``figure(n)(charts.f)`` a figure the page draws as
a widget."""


def _is_cache_binding(call: ast.expr) -> bool:
    """``cached(n)(model.f)`` or ``figure(n)(charts.f)``: a shell cache bound to a function of another module in one
    line."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Call) \
        and _decorator_name(call.func) in CACHE_BINDINGS and len(call.args) == 1 \
        and isinstance(call.args[0], (ast.Name, ast.Attribute))


def _constant_problem(value: ast.expr) -> str | None:
    if _is_cache_binding(value):
        return None
    for node in ast.walk(value):
        if isinstance(node, ast.Lambda):
            return "a lambda (a computation: model.py)"
        if isinstance(node, ast.Call) and not _is_cache_binding(node):
            name = node.func.id if isinstance(node.func, ast.Name) else ""
            if isinstance(node.func, ast.Call) and _is_cache_binding(node.func):
                continue
            if name not in CONSTANT_CALLS and not (isinstance(node.func, ast.Call)
                                                   and _decorator_name(node.func) == "cached"):
                return f"a computed value ({ast.unparse(node.func)}(…): a constant of model.py)"
    return None


def draw_problems(source: str) -> list[str]:
    """What a ``draw.py`` holds besides sections, cache bindings, constants and drawing helpers (``line: what``)."""
    tree = ast.parse(source)
    out = []
    funcs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    kind = {}
    for name, f in funcs.items():
        decorators = [_decorator_name(d) for d in f.decorator_list]
        if decorators == ["section"]:
            kind[name] = "section"
        elif decorators == ["cached"]:
            kind[name] = "cached"
            body = _body_without_docstring(f)
            if not (len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call)
                    and not any(isinstance(n, (ast.Call, ast.Lambda, ast.comprehension))
                                for a in [*body[0].value.args, *(k.value for k in body[0].value.keywords)]
                                for n in ast.walk(a))):
                out.append(f"{f.lineno}: @cached {name}() is more than one call (bind model.{name} in one line)")
        elif decorators:
            hint = f" (bind charts.{name} in one line: {name} = figure(n)(charts.{name}))" \
                if decorators == ["figure"] else " (only @section, @cached)"
            out.append(f"{f.lineno}: {name}() decorated with {', '.join(decorators)}{hint}")
            kind[name] = "other"
        else:
            kind[name] = "helper"
    # a helper draws if it calls st.* or a section, or a helper that draws
    draws = {name for name, k in kind.items() if k == "section"}
    draws |= {name for name, k in kind.items() if k == "helper" and _calls_streamlit(funcs[name])}
    calls = {name: _called_names(f) for name, f in funcs.items()}
    changed = True
    while changed:
        changed = False
        for name, k in kind.items():
            if k == "helper" and name not in draws and calls[name] & draws:
                draws.add(name)
                changed = True
    callers = {name: {other for other in funcs if other != name and name in calls[other]} for name in funcs}
    for name, k in kind.items():
        if k != "helper":
            continue
        if name not in draws:
            out.append(f"{funcs[name].lineno}: {name}() draws nothing (a computation or claim: model.py)")
        elif not callers[name] & {n for n, kk in kind.items() if kk in ("section", "helper")}:
            out.append(f"{funcs[name].lineno}: {name}() is called by no section (the page's part: a section)")
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out.append(f"{node.lineno}: class {node.name} (a data class: model.py)")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if problem := _constant_problem(node.value):
                out.append(f"{node.lineno}: {ast.unparse(target)} = {problem}")
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        elif not isinstance(node, (ast.Assign, ast.AnnAssign)):
            out.append(f"{node.lineno}: top-level {type(node).__name__} (only definitions and constants)")
    return out


# --- model.py and charts.py ----------------------------------------------------------------------------------


@functools.cache
def _imports_streamlit(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(n.split(".")[0] == "streamlit" for n in names):
            return True
    return False


def streamlit_path(start: str, graph: dict[str, set[str]], paths: dict[str, Path]) -> list[str] | None:
    """The chain of ``explorer`` modules from ``start`` to one importing Streamlit (``None``: there is none); the
    walk does not enter :data:`DOOR`."""
    seen, stack = {start}, [[start]]
    while stack:
        chain = stack.pop()
        if _imports_streamlit(paths[chain[-1]]):
            return chain
        for nxt in sorted(graph.get(chain[-1], ())):
            if nxt not in seen and nxt != DOOR and nxt.startswith("explorer"):
                seen.add(nxt)
                stack.append([*chain, nxt])
    return None


def computation_problems(lesson: str, graph: dict[str, set[str]], paths: dict[str, Path]) -> list[str]:
    out = []
    for part in ("model", "charts"):
        name = f"explorer.lessons.{lesson}.{part}"
        if name not in paths:
            continue
        if chain := streamlit_path(name, graph, paths):
            out.append(f"{part}.py imports Streamlit: {' -> '.join(chain)} -> streamlit")
        for target in graph[name]:
            if target.endswith((".page", ".draw")) and target.startswith("explorer.lessons."):
                out.append(f"{part}.py imports {target}")
    return out


def lesson_problems(lesson: str, graph: dict[str, set[str]] | None = None,
                    paths: dict[str, Path] | None = None) -> list[str]:
    """Every rule ``lesson`` breaks, as ``file:line: what``."""
    graph = graph if graph is not None else import_graph(packages=("explorer",))
    paths = paths if paths is not None else modules(packages=("explorer",))
    folder = LESSONS_DIR / lesson
    out = [f"page.py:{p}" for p in page_problems((folder / "page.py").read_text(encoding="utf-8"))]
    if (folder / "draw.py").exists():
        out += [f"draw.py:{p}" for p in draw_problems((folder / "draw.py").read_text(encoding="utf-8"))]
    return out + computation_problems(lesson, graph, paths)


@pytest.fixture(scope="module")
def graph_and_paths():
    """``explorer``'s own import graph (``attention`` cannot import Streamlit: ``tests/test_imports.py``)."""
    return import_graph(packages=("explorer",)), modules(packages=("explorer",))


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_files_hold_what_their_names_say(lesson, graph_and_paths):
    problems = lesson_problems(lesson, *graph_and_paths)
    assert not problems, f"{lesson} breaks the contents rules (docs/lessons.md):\n" + "\n".join(problems)


def test_every_lesson_is_checked():
    """Every lesson folder with a ``page.py`` is one of the thirteen, and each is checked above (no exemption)."""
    assert len(LESSONS) == 13
    assert set(LESSONS) >= {"block", "causes", "kv_cache", "real_model", "sinks", "training"}


# --- the checks catch what they are for (synthetic files) ------------------------------------------------------

GOOD_DRAW = '''
"""Sections."""
import streamlit as st
from explorer.lessons.x import model
from explorer.shell.cache import cached, figure, resource, section
from explorer.shell.i18n import translator

_, _n = translator(__name__)
TABLE_MAX = 20_000
KEYS = ("a", "b")
scenario = cached(max_entries=3)(model.scenario)
grid = figure(max_entries=4)(charts.grid)
state = resource(max_entries=4)(model.state)


@cached(max_entries=2)
def run(key):
    """Adapter."""
    return model.run(key.settings, key.n)


def _caption(text):
    st.caption(text)


@section
def intro(key):
    _caption(model.claim(run(key)))
'''


def test_a_good_draw_passes():
    assert draw_problems(GOOD_DRAW) == []


@pytest.mark.parametrize(("addition", "expected"), [
    ("\n\nclass Result:\n    x: int\n", "class Result"),
    ("\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n", "mean() draws nothing"),
    ("\n\ndef lonely():\n    st.write('x')\n", "lonely() is called by no section"),
    ("\n\n@cached(max_entries=1)\ndef heavy(n):\n    x = model.a(n)\n    return model.b(x)\n", "more than one call"),
    ("\n\n@cached(max_entries=1)\ndef nested(n):\n    return model.b(model.a(n))\n", "more than one call"),
    ("\n\n@st.cache_resource\ndef res():\n    return 1\n", "decorated with st.cache_resource"),
    ("\n\n@figure(max_entries=2)\ndef grid2(v):\n    return charts.grid(v)\n", "bind charts.grid2 in one line"),
    ("\n\nRES = st.cache_resource(max_entries=2)(model.load)\n", "RES = a computed value"),
    ("\n\nLOCK = threading.Lock()\n", "LOCK = a computed value"),
    ("\n\nSOURCE = inspect.getsource(model.run)\n", "SOURCE = a computed value"),
    ("\n\nPICK = lambda x: x\n", "a lambda"),
    ("\n\nfor k in KEYS:\n    pass\n", "top-level For"),
])
def test_a_broken_draw_fails(addition, expected):
    problems = draw_problems(GOOD_DRAW + addition)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(("line", "expected"), [
    ("st.query_params['x'] = '1'", "st.query_params"),
    ("v = st.slider('a', 0, 1, key='k', bind='query-params')", "bind="),
    ("v = controls.check_link('k', 0)", "check_link"),
    ("st.session_state['k'] = 1", "writes st.session_state"),
    ("st.session_state.k = 1", "writes st.session_state"),
    ("del st.session_state['k']", "writes st.session_state"),
    ("st.session_state.update(k=1)", "st.session_state.update"),
    ("st.session_state.setdefault('k', 1)", "st.session_state.setdefault"),
])
def test_a_broken_page_fails(line, expected):
    good = "import streamlit as st\nfrom explorer.lessons.x import draw\nv = st.session_state.get('k')\ndraw.intro(v)\n"
    assert page_problems(good) == []
    assert any(expected in p for p in page_problems(good + line + "\n")), page_problems(good + line)


def test_streamlit_is_found_through_imports_and_the_door_is_not_entered(tmp_path):
    def write(name, text):
        path = tmp_path / f"{name.replace('.', '_')}.py"
        path.write_text(text, encoding="utf-8")
        return path

    paths = {"explorer.lessons.x.model": write("m", "from explorer.shell import helper\n"),
             "explorer.shell.helper": write("h", "import streamlit as st\n"),
             "explorer.lessons.y.model": write("m2", "from explorer.shell import llm\n"),
             DOOR: write("door", "import streamlit as st\n")}
    graph = {"explorer.lessons.x.model": {"explorer.shell.helper"}, "explorer.shell.helper": set(),
             "explorer.lessons.y.model": {DOOR}, DOOR: set()}
    assert streamlit_path("explorer.lessons.x.model", graph, paths) == ["explorer.lessons.x.model",
                                                                         "explorer.shell.helper"]
    assert streamlit_path("explorer.lessons.y.model", graph, paths) is None


@pytest.mark.parametrize(("lesson", "addition", "expected"), [
    ("walkthrough", "\n\ndef mean_weight(steps):\n    return float(steps.weights.mean())\n",
     "mean_weight() draws nothing"),
    ("multihead", "\n\n@dataclass(frozen=True)\nclass Picked:\n    head: int\n", "class Picked"),
    ("causal", "\n\nfor _k in range(2):\n    pass\n", "top-level For"),
])
def test_a_converted_lessons_draw_with_a_computation_put_back_fails(lesson, addition, expected):
    """The check on a real ``draw.py`` of a converted lesson, with one thing added that belongs in model.py."""
    source = (LESSONS_DIR / lesson / "draw.py").read_text(encoding="utf-8")
    assert draw_problems(source) == []
    assert any(expected in p for p in draw_problems(source + addition)), draw_problems(source + addition)


def test_a_converted_lessons_page_writing_session_state_fails():
    source = (LESSONS_DIR / "lookup" / "page.py").read_text(encoding="utf-8")
    assert page_problems(source) == []
    broken = source.replace('controls.reset("lookup_preset")', 'st.session_state["lookup_preset"] = None')
    assert broken != source and any("writes st.session_state" in p for p in page_problems(broken))
