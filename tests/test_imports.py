"""The code's import graph: no cycle in ``attention/`` or ``explorer/``, and the layers point one way.

Read from the source with ``ast`` (every ``import`` statement, also those inside functions, which
is where a cycle hides), not by importing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("attention", "explorer")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    return {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}


def _resolved(node: ast.ImportFrom, base: list[str]) -> str:
    """The absolute module an ``ImportFrom`` reads (``from ..x import y`` in ``a.b.c`` -> ``a.x``)."""
    if node.level:
        anchor = base[: len(base) - node.level + 1]
        return ".".join(anchor + ([node.module] if node.module else []))
    return node.module or ""


def package_exports(name: str, path: Path, known: set[str]) -> dict[str, str]:
    """The names a package's ``__init__`` takes from its own modules at import time, and the module each comes from
    (``from .model import LlamaModel`` in ``attention/llama/__init__.py``: ``{"LlamaModel": "attention.llama.model"}``).

    Only the ``__init__``'s top-level imports re-export; a name it defines itself is not listed.
    """
    base = name.split(".")
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            mod = _resolved(node, base)
            for a in node.names:
                sub = f"{mod}.{a.name}"
                target = sub if sub in known else mod
                if target in known and (target == name or target.startswith(name + ".")):
                    out[a.asname or a.name] = target
    return out


def imports_of(name: str, path: Path, known: set[str], exports: dict[str, dict[str, str]] | None = None) -> set[str]:
    """The project modules ``name`` imports (``from pkg import mod`` counts as importing ``pkg.mod``).

    Every ``import`` statement counts, those inside functions too (where a cycle hides), and a name taken from a
    package (``from . import LlamaModel``, ``from attention.llama import LlamaModel``) counts as importing the module
    the package's ``__init__`` takes it from (:func:`package_exports`): a module that reads a name of its own
    package depends on the module that defines it, although the package itself is initialised first.
    """
    exports = exports or {}
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _resolved(node, base)
            # "from pkg import mod" imports the module pkg.mod; "from pkg import Name" the module pkg takes Name from
            # (followed through re-exporting packages); "from mod import name" imports mod
            targets = []
            for a in node.names:
                target, seen = f"{mod}.{a.name}", set()
                if target not in known:
                    target, attr = mod, a.name
                    while attr in exports.get(target, {}) and target not in seen:
                        seen.add(target)
                        target = exports[target][attr]
                targets.append(target)
        else:
            continue
        for target in targets:
            parts = target.split(".")
            for i in range(len(parts), 0, -1):  # the deepest project module named by the import
                candidate = ".".join(parts[:i])
                if candidate in known:
                    # a module's own package (an ancestor) is always initialised first: not an edge
                    if candidate != name and not name.startswith(candidate + "."):
                        found.add(candidate)
                    break
    return found


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    mods = modules(root, packages)
    known = set(mods)
    exports = {name: package_exports(name, path, known) for name, path in mods.items() if path.name == "__init__.py"}
    # importing a.b.c runs a/__init__ and a/b/__init__ first, but those are not edges of a cycle unless they
    # import back; keep the graph to what each module's own code imports.
    return {name: imports_of(name, path, known, exports) for name, path in mods.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or ``None``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.mark.slow
def test_the_graph_is_read():
    graph = import_graph()
    assert "attention._validate" in graph["attention.core"]
    assert "attention._validate" in graph["attention.blocked"]
    assert "explorer.shell.settings" in graph["explorer.shell.controls.sidebar"]
    assert "explorer.shell.controls" in graph["explorer.lessons.multihead"]  # a lesson's manifest


@pytest.mark.slow
def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_a_cycle_through_ones_own_package_is_seen(tmp_path):
    """A method importing an analysis inside a function, the analysis taking the class from its package's
    ``__init__`` (``from . import Model``, or ``from pkg import Model``): the cycle ``model -> analysis -> model``
    that ``attention/llama`` had (``model.py`` <-> ``interventions.py``) is found."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .model import Model\nfrom . import analysis\nVERSION = 1\n")
    (pkg / "model.py").write_text("class Model:\n    def lens(self):\n        from .analysis import lens\n"
                                  "        return lens(self)\n")
    for spelling in ("from . import Model", "from pkg import Model"):
        (pkg / "analysis.py").write_text(f"{spelling}\n\ndef lens(m):\n    return m\n")
        graph = import_graph(tmp_path, ("pkg",))
        assert graph["pkg.analysis"] == {"pkg.model"}, spelling
        assert find_cycle(graph) == ["pkg.analysis", "pkg.model", "pkg.analysis"], spelling
    (pkg / "analysis.py").write_text("from . import VERSION\n")  # a name the package defines itself: no edge
    assert import_graph(tmp_path, ("pkg",))["pkg.analysis"] == set()


DOOR = "explorer.shell.llm"
"""The one module of ``explorer`` that imports :mod:`attention.llama` (the lessons' door to the real model)..."""
CATALOGUE = "explorer.shell.models"
"""...and the door's catalogue of the files it may load (reads their GGUF headers with the core's reader)."""


def llama_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of :mod:`attention.llama` or a module under it in ``source``: ``import
    attention.llama[.x]``, ``from attention.llama[.x] import …``, ``from attention import llama``, at any depth (a
    function's own imports included)."""
    found = []
    if "llama" not in source:  # no import of it can be there: skip the parse (the fast tier's time)
        return found
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names
                      if a.name == "attention.llama" or a.name.startswith("attention.llama.")]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            mod = node.module or ""
            if mod == "attention.llama" or mod.startswith("attention.llama."):
                found.append((node.lineno, mod))
            elif mod == "attention":
                found += [(node.lineno, f"attention.{a.name}") for a in node.names if a.name == "llama"]
    return found


def test_llama_imports_are_read():
    source = ("import attention.llama\nimport attention.llama.model as m\nfrom attention import llama, core\n"
              "from attention.llama import interventions as iv\nfrom attention.core import softmax\n"
              "def f():\n    from attention.llama.variants import kv_variant\n")
    assert llama_imports(source) == [(1, "attention.llama"), (2, "attention.llama.model"), (3, "attention.llama"),
                                     (4, "attention.llama"), (7, "attention.llama.variants")]


def test_one_door_to_the_real_model():
    """Only :data:`DOOR` imports :mod:`attention.llama`: every lesson (and every other shell module) reaches the real
    model through it (issue 46, "One door")."""
    wrong = [f"{path.relative_to(ROOT)}:{line}: {mod}" for name, path in modules().items()
             if name.startswith("explorer.") and name not in (DOOR, CATALOGUE)
             for line, mod in llama_imports(path.read_text(encoding="utf-8"))]
    assert not wrong, "attention.llama imported outside the door (use explorer.shell.llm):\n" + "\n".join(wrong)
    assert llama_imports(modules()[DOOR].read_text(encoding="utf-8")), "the door does not import attention.llama"


@pytest.mark.parametrize("name", sorted(m for m in modules() if m.startswith("attention")))
def test_core_imports_no_app_code(name):
    """The NumPy core never imports the app (nor Streamlit, Plotly or pandas)."""
    source = modules()[name].read_text(encoding="utf-8")
    imported = {n.split(".")[0] for node in ast.walk(ast.parse(source))
                for n in ([a.name for a in node.names] if isinstance(node, ast.Import)
                          else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])}
    assert not imported & {"explorer", "streamlit", "plotly", "pandas"}, (name, imported)


@pytest.mark.slow
def test_lessons_do_not_import_each_other_except_for_links():
    """A lesson's files are its own: another lesson's package (its manifest, for ``controls.link``) or its ``model``
    (its numbers: the quiz's ``scale_story``, lookup's ``parse_cell``) may be imported, nothing else."""
    graph = import_graph()
    for name, targets in graph.items():
        if not name.startswith("explorer.lessons."):
            continue
        lesson = name.split(".")[2] if name.count(".") >= 2 else None
        for target in targets:
            if target.startswith("explorer.lessons.") and target.count(".") >= 3:
                other = target.split(".")[2]
                assert other == lesson or target == f"explorer.lessons.{other}.model", (name, target)


CHARTS = "explorer.shell.charts"


def charts_names_used(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every name a module's ``source`` takes from the shell's charts: ``from
    explorer.shell.charts import name``, ``charts.name`` after ``from explorer.shell import charts`` (or ``import
    explorer.shell.charts as c``), and ``<submodule …>`` for any import of one of the package's modules."""
    tree = ast.parse(source)
    aliases: set[str] = set()
    used: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            if node.module == CHARTS:
                used += [(node.lineno, a.name) for a in node.names if a.name != "*"]
            elif (node.module or "").startswith(CHARTS + "."):
                used.append((node.lineno, f"<submodule {node.module}>"))
            elif node.module == "explorer.shell":
                aliases |= {a.asname or a.name for a in node.names if a.name == "charts"}
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(CHARTS + "."):
                    used.append((node.lineno, f"<submodule {a.name}>"))
                elif a.name == CHARTS and a.asname:
                    aliases.add(a.asname)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        named = isinstance(node.value, ast.Name) and node.value.id in aliases  # charts.name, c.name
        dotted = isinstance(node.value, ast.Attribute) and node.value.attr == "charts" \
            and ast.unparse(node.value) == CHARTS  # explorer.shell.charts.name
        if named or dotted:
            used.append((node.lineno, node.attr))
    return used


def charts_all() -> set[str]:
    """The names in ``explorer.shell.charts.__all__``, read from the package's ``__init__`` (not imported)."""
    tree = ast.parse((ROOT / "explorer" / "shell" / "charts" / "__init__.py").read_text(encoding="utf-8"))
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    return set(ast.literal_eval(value))


def lesson_files() -> list[Path]:
    return sorted((ROOT / "explorer" / "lessons").rglob("*.py"))


def test_charts_names_used_are_read():
    """The check below sees each way a lesson reaches the charts (and would see a private name)."""
    source = ("from explorer.shell import charts\nfrom explorer.shell.charts import heatmap, GAP_MAX\n"
              "from explorer.shell.charts.geometry import label_px\nimport explorer.shell.charts.colors\n"
              "import explorer.shell.charts as c\nx = charts.COLOR_SCALES, charts._fmt_matrix, c.AXIS_PAD_PX\n"
              "y = explorer.shell.charts.WIDE_CELL_TEXT_PX\n")
    assert {name for _, name in charts_names_used(source)} == {
        "heatmap", "GAP_MAX", "<submodule explorer.shell.charts.geometry>", "<submodule explorer.shell.charts.colors>",
        "COLOR_SCALES", "_fmt_matrix", "AXIS_PAD_PX", "WIDE_CELL_TEXT_PX"}
    causal = ROOT / "explorer" / "lessons" / "causal"
    assert {"paired_bars", "tick_positions"} <= {name for _, name in charts_names_used(
        (causal / "charts.py").read_text(encoding="utf-8"))}  # from explorer.shell.charts import …
    assert {"heatmap", "COLOR_SCALES"} <= {name for _, name in charts_names_used(
        (causal / "draw.py").read_text(encoding="utf-8"))}  # charts.heatmap(…)


@pytest.mark.slow
def test_lessons_use_only_the_public_charts_api():
    """A lesson takes from :mod:`explorer.shell.charts` only names of its ``__all__`` (the builders, the public
    geometry and colours), never a module of the package nor its inside (paddings, private helpers)."""
    public = charts_all()
    wrong = [f"{p.relative_to(ROOT)}:{line}: {name}" for p in lesson_files()
             for line, name in charts_names_used(p.read_text(encoding="utf-8")) if name not in public]
    assert not wrong, "lessons use names outside explorer.shell.charts.__all__:\n" + "\n".join(wrong)


CHART_DOOR = "explorer/shell/charts/door.py"
"""The one file of ``explorer`` that calls ``plotly_chart``: every chart goes through ``charts.show_fig``."""


def plotly_chart_calls(source: str) -> list[int]:
    """The lines of every ``….plotly_chart(…)`` call in ``source`` (``st.plotly_chart``, ``col.plotly_chart``, …),
    and of every ``plotly_chart`` read off another name (``draw = st.plotly_chart``)."""
    if "plotly_chart" not in source:  # no such attribute can be there: skip the parse (the fast tier's time)
        return []
    return sorted({node.lineno for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Attribute) and node.attr == "plotly_chart"})


def test_plotly_chart_calls_are_read():
    source = ("import streamlit as st\nst.plotly_chart(fig, key='a')\ncol, _ = st.columns(2)\n"
              "col.plotly_chart(fig)\ndraw = st.plotly_chart\nst.columns(2)[0].plotly_chart(\n    fig)\n"
              "charts.show_fig(fig, key='b')\n# st.plotly_chart(fig) in a comment\n")
    assert plotly_chart_calls(source) == [2, 4, 5, 6]


def test_every_chart_goes_through_the_door():
    """No module of ``explorer`` but :data:`CHART_DOOR` calls ``plotly_chart`` (issue 47, item 3: one door, so what
    every chart shares, its drawing in place and its export, is decided in one place)."""
    found = {str(p.relative_to(ROOT)): plotly_chart_calls(p.read_text(encoding="utf-8"))
             for p in sorted((ROOT / "explorer").rglob("*.py"))}
    assert found.pop(CHART_DOOR), "the door itself draws no chart"
    assert {path: lines for path, lines in found.items() if lines} == {}
