"""Page rerun time and Plotly payload, for every page, at defaults and at the largest settings.

A plain script that prints two tables (AppTest, no browser):

1. Rerun time at unchanged settings: the fastest of several reruns of each page (the
   least disturbed by other work on the shared vCPUs; medians drift by up to 2x between
   runs here), as a ratio to a trivial one-chart Streamlit page measured right before it,
   as a bare script and inside the app's frame (shared sidebar, link checks).
2. Cold runs (Streamlit's caches emptied), a page control moved to new values, the
   largest settings, and the total bytes of the Plotly JSON each page sends.

The page files are compiled once, as a server does (AppTest alone recompiles them on
every run).

"Largest settings" = the shared controls at their maxima (64 tokens, d_model = 512,
d_k = 128) and every page widget pushed to its maximum (sliders and number inputs
to max, select sliders and select boxes to their last option, toggles on).

Run: ``python bench/bench_pages.py`` (add ``--repeats N``).
"""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
logging.getLogger("streamlit").setLevel(logging.ERROR)
logging.getLogger("streamlit.runtime.caching").setLevel(logging.ERROR)  # "No runtime found" on cache clears

import streamlit as st  # noqa: E402
import streamlit.testing.v1.app_test as _app_test  # noqa: E402
from streamlit.runtime.scriptrunner.script_cache import ScriptCache  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from explorer.lessons import LESSONS  # noqa: E402
from tests.apptest_utils import app_at, chart_elements, chart_spec, option_value  # noqa: E402

# A server compiles each page file once and keeps the bytecode (its ScriptCache lives as
# long as the server); AppTest makes a new ScriptCache on every run, so every rerun would
# also pay the page's compile (10-35 ms here). Share one, as the server does.
_SCRIPT_CACHE = ScriptCache()
_app_test.ScriptCache = lambda: _SCRIPT_CACHE

_TRIVIAL = """
import time
import numpy as np
import plotly.graph_objects as go
import streamlit as st
{imports}
started = time.perf_counter()
{frame}
st.title("Trivial page")
st.plotly_chart(go.Figure(go.Heatmap(z=np.eye(6))), key="fig")
{after}
st.session_state["_run_seconds"] = time.perf_counter() - started
"""
TRIVIAL_PAGE = _TRIVIAL.format(imports="", frame="", after="")
# The same page inside the app's frame: the shared sidebar and the link checks the entrypoint draws.
TRIVIAL_IN_APP = _TRIVIAL.format(imports="from explorer.shell import controls", frame="controls.sidebar_controls()",
                                 after="controls.show_link_warnings()")

MAX_SHARED = {"sentence": " ".join(f"w{i}" for i in range(64)), "d_model": 512, "d_k": 128}


def pages() -> list[str]:
    return [entry.name for entry in LESSONS]


def payload(at: AppTest) -> int:
    """The bytes of every chart's Plotly JSON in the run (either door of ``charts.show_fig``)."""
    return sum(len(chart_spec(el)) for el in chart_elements(at))


def rerun_time(at: AppTest, repeats: int, *, cold: bool = False) -> float:
    """The script's own run time, the fastest of ``repeats`` reruns, in seconds.

    The script time (``_run_seconds``, measured by the entrypoint around the page) leaves
    out AppTest's own polling and widget bookkeeping. ``cold``: empty Streamlit's data
    caches before each rerun, so every computation, figure and table is made again (what
    a first visit at new settings costs); otherwise a rerun at unchanged settings, whose
    sections Streamlit replays from its cache (what every other widget's rerun costs).
    """
    script = []
    for _ in range(repeats):
        if cold:
            st.cache_data.clear()
        at.run()
        script.append(at.session_state["_run_seconds"])
    if at.exception:
        raise RuntimeError(f"exception on rerun: {at.exception[0].value}")
    return min(script)


def moved_time(at: AppTest, repeats: int) -> tuple[str, float] | None:
    """Median script time of reruns that each set one page control to a value not seen before.

    What a learner feels when using one of the page's own controls: the sections that
    depend on it are made again, the others replayed. The control is the page's first
    slider with enough distinct values, else its first select box with enough options;
    ``None`` when there is neither.
    """
    def options(widget, kind: str) -> list:
        if kind == "selectbox":
            return list(widget.options)
        if isinstance(widget.value, int | float) and not isinstance(widget.value, bool):
            step = widget.step or 1
            return [widget.min + k * step for k in range(int((widget.max - widget.min) / step) + 1)]
        return []  # a range slider

    for kind in ("slider", "selectbox"):
        for widget in getattr(at.main, kind):
            values = [v for v in options(widget, kind) if v != widget.value][:repeats]
            if len(values) < 2:
                continue
            label, times = widget.label, []
            for v in values:
                w = next(x for x in getattr(at.main, kind) if x.label == label)
                if kind == "selectbox":
                    w.select(v)
                else:
                    w.set_value(v)
                at.run()
                if at.exception:
                    raise RuntimeError(f"exception after setting {label!r} to {v}: {at.exception[0].value}")
                times.append(at.session_state["_run_seconds"])
            return label, statistics.median(times)
    return None


def push_to_max(at: AppTest) -> None:
    """Every page widget (not the sidebar's) to its largest setting."""
    main = at.main
    for s in main.slider:
        s.set_value(s.max if not isinstance(s.value, tuple) else (s.min, s.max))
    for s in main.select_slider:  # options come back as labels: try the label as a number, then as is
        label = s.options[-1]
        for value in (option_value(label), label):
            try:
                s.set_value(value)
                s._widget_state  # noqa: B018 - raises if the value is not one of the options
                break
            except (ValueError, TypeError):
                continue
    for n in main.number_input:
        if n.max is not None:
            n.set_value(n.max)
    for t in main.toggle:
        t.set_value(True)
    for s in main.selectbox:
        if s.options:
            s.select(s.options[-1])



def element_count(at: AppTest) -> int:
    """Elements and containers in the page's main area (widgets included)."""
    def walk(node) -> int:
        children = getattr(node, "children", {}).values()
        return sum(1 + walk(child) for child in children)

    return walk(at.main)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--pages", nargs="*", help="only these lessons (default: all)")
    args = ap.parse_args()
    import numpy as np
    import plotly
    import streamlit

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, streamlit {streamlit.__version__}, plotly {plotly.__version__}, "
          f"numpy {np.__version__}")
    bare, in_app = Baseline(TRIVIAL_PAGE), Baseline(TRIVIAL_IN_APP)

    rows = []
    for page in args.pages or pages():
        # The baselines are measured right before each page: the machine's speed drifts (shared vCPUs).
        b_bare, b_app = bare.measure(args.repeats * 4), in_app.measure(args.repeats * 4)
        at = app_at(page)
        t_def, p_def, n_el = rerun_time(at, args.repeats * 2), payload(at), element_count(at)
        c_def = rerun_time(at, args.repeats, cold=True)
        moved = moved_time(at, args.repeats)
        at = app_at(page, session=MAX_SHARED)
        push_to_max(at)
        at.run()
        t_max, p_max = rerun_time(at, max(2, args.repeats // 2)), payload(at)
        c_max = rerun_time(at, max(2, args.repeats // 2), cold=True)
        rows.append((page, b_bare, b_app, n_el, t_def, c_def, moved, p_def, t_max, c_max, p_max))

    print("\nScript run time (entrypoint + page, fastest of the reruns). Trivial page: a title and one 6x6 heat map, "
          "as a bare script, and the same page inside the app's frame (the shared sidebar and link checks every "
          "page of the app draws); both measured right before each page.\n")
    print("| page | elements | rerun at defaults | trivial page | × trivial | trivial page in the app's frame "
          "| × trivial in frame | payload at defaults |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for page, b_bare, b_app, n_el, t_def, _, _, p_def, *_ in rows:
        print(f"| {page} | {n_el} | {t_def * 1000:.1f} ms | {b_bare * 1000:.2f} ms | {t_def / b_bare:.1f}× "
              f"| {b_app * 1000:.2f} ms | {t_def / b_app:.1f}× | {p_def / 1000:.1f} KB |")

    print("\n- cold: Streamlit's data caches emptied before each rerun, so everything is computed, built and "
          "serialized again (a first visit at new settings)\n"
          "- control moved: the page's first slider (or select box) set to a new value on every rerun, median "
          "(the sections that depend on it are made again, the others replayed; a slider that snaps to allowed "
          "values can land on one already cached)\n"
          "- max: 64 tokens, d_model = 512, d_k = 128 and every page widget at its maximum\n")
    print("| page | cold at defaults | control moved (which) | rerun at max | cold at max | payload at max |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for page, b_bare, _, _, _, c_def, moved, _, t_max, c_max, p_max in rows:
        def cell(t: float, base: float = b_bare) -> str:
            return f"{t * 1000:.1f} ms = {t / base:.0f}×"

        moved_cell = f"{cell(moved[1])} ({moved[0]})" if moved else "no slider or select box"
        print(f"| {page} | {cell(c_def)} | {moved_cell} | {cell(t_max)} | {cell(c_max)} | {p_max / 1000:.1f} KB |")
    print("\nbudget: rerun at defaults ≤ 3× trivial; payload at defaults ≤ 150 KB")


class Baseline:
    """A trivial page (given as source) kept running in AppTest, re-measured on demand."""

    def __init__(self, source: str) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:  # AppTest reads it on every run
            f.write(source)
        atexit.register(os.unlink, f.name)
        self.at = AppTest.from_file(f.name, default_timeout=60)
        self.at.run()
        rerun_time(self.at, 10)  # warm up (the first runs import and fill caches)

    def measure(self, repeats: int) -> float:
        """Fastest script time of ``repeats`` reruns."""
        return rerun_time(self.at, repeats)


if __name__ == "__main__":
    main()
