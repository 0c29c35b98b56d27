"""Page rerun time and Plotly payload, for every page, at defaults and at the largest settings.

A plain script that prints two tables (AppTest, no browser):

1. Rerun time: the median of several reruns of each page, as a ratio to a trivial
   one-chart Streamlit page measured in the same run.
2. Payload: total bytes of the Plotly JSON each page sends.

"Largest settings" = the shared controls at their maxima (64 tokens, d_model = 512,
d_k = 128) and every page widget pushed to its maximum (sliders and number inputs
to max, select sliders and select boxes to their last option, toggles on).

Run: ``python bench/bench_pages.py`` (add ``--repeats N``).
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
logging.getLogger("streamlit").setLevel(logging.ERROR)
logging.getLogger("streamlit.runtime.caching").setLevel(logging.ERROR)  # "No runtime found" on cache clears

import streamlit as st  # noqa: E402
import streamlit.testing.v1.app_test as _app_test  # noqa: E402
from streamlit.runtime.scriptrunner.script_cache import ScriptCache  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tests.apptest_utils import app_at  # noqa: E402

# A server compiles each page file once and keeps the bytecode (its ScriptCache lives as
# long as the server); AppTest makes a new ScriptCache on every run, so every rerun would
# also pay the page's compile (10-35 ms here). Share one, as the server does.
_SCRIPT_CACHE = ScriptCache()
_app_test.ScriptCache = lambda: _SCRIPT_CACHE

TRIVIAL_IN_APP = """
import time
import numpy as np
import plotly.graph_objects as go
import streamlit as st
from app import state
started = time.perf_counter()
state.sidebar_controls()
st.title("Trivial page")
st.plotly_chart(go.Figure(go.Heatmap(z=np.eye(6))), key="fig")
state.show_link_warnings()
st.session_state["_run_seconds"] = time.perf_counter() - started
"""

TRIVIAL_PAGE = """
import time
import numpy as np
import plotly.graph_objects as go
import streamlit as st
started = time.perf_counter()
st.title("Trivial page")
st.plotly_chart(go.Figure(go.Heatmap(z=np.eye(6))), key="fig")
st.session_state["_run_seconds"] = time.perf_counter() - started
"""

MAX_SHARED = {"sentence": " ".join(f"w{i}" for i in range(64)), "d_model": 512, "d_k": 128}


def pages() -> list[str]:
    return sorted(p.name for p in (ROOT / "app_pages").glob("*.py"))


def payload(at: AppTest) -> int:
    return sum(len(el.proto.spec) for el in at.get("plotly_chart"))


def rerun_time(at: AppTest, repeats: int, *, cold: bool = False) -> tuple[float, float]:
    """Median ``(wall time of at.run(), the script's own run time)`` over ``repeats`` reruns.

    The script time (``_run_seconds``, measured by the entrypoint around the page) leaves
    out AppTest's own polling and widget bookkeeping. ``cold``: empty Streamlit's data
    caches before each rerun, so every computation, figure and table is made again (what
    a first visit at new settings costs); otherwise a rerun at unchanged settings, whose
    sections Streamlit replays from its cache (what every other widget's rerun costs).
    """
    wall, script = [], []
    for _ in range(repeats):
        if cold:
            st.cache_data.clear()
        t = time.perf_counter()
        at.run()
        wall.append(time.perf_counter() - t)
        script.append(at.session_state["_run_seconds"])
    if at.exception:
        raise RuntimeError(f"exception on rerun: {at.exception[0].value}")
    return statistics.median(wall), statistics.median(script)


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
        for value in (_number(label), label):
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


def _number(label: str):
    try:
        x = float(label)
    except ValueError:
        return label
    return int(x) if x.is_integer() else x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pages", nargs="*", help="only these page files (default: all)")
    args = ap.parse_args()
    import numpy as np
    import plotly
    import streamlit

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, streamlit {streamlit.__version__}, plotly {plotly.__version__}, "
          f"numpy {np.__version__}")
    base_wall, base = trivial_time(TRIVIAL_PAGE, args.repeats * 4)
    in_app = trivial_time(TRIVIAL_IN_APP, args.repeats * 4)[1]
    print(f"trivial one-chart page: script {base * 1000:.2f} ms (AppTest rerun {base_wall * 1000:.1f} ms); "
          f"the same page inside the app's frame (shared sidebar, link checks): {in_app * 1000:.2f} ms\n")

    rows = []
    for page in args.pages or pages():
        at = app_at(page)
        t_def, p_def = rerun_time(at, args.repeats)[1], payload(at)
        c_def = rerun_time(at, args.repeats, cold=True)[1]
        moved = moved_time(at, args.repeats)
        at = app_at(page, session=MAX_SHARED)
        push_to_max(at)
        at.run()
        t_max, p_max = rerun_time(at, max(2, args.repeats // 2))[1], payload(at)
        c_max = rerun_time(at, max(2, args.repeats // 2), cold=True)[1]
        rows.append((page, t_def, c_def, moved, p_def, t_max, c_max, p_max))
    base_end = trivial_time(TRIVIAL_PAGE, args.repeats * 4)[1]
    print(f"trivial page again after the pages: {base_end * 1000:.2f} ms; ratios below use the mean of the two, "
          f"{(base + base_end) / 2 * 1000:.2f} ms")
    base = (base + base_end) / 2

    print("\nScript run time (entrypoint + page, median of reruns), in ms and as a multiple of the trivial page.\n"
          "- rerun: settings unchanged (what any widget that a section does not depend on costs); the sections "
          "are replayed from Streamlit's cache\n"
          "- cold: Streamlit's data caches emptied before each rerun, so everything is computed, built and "
          "serialized again (a first visit at new settings)\n"
          "- slider moved: the page's first slider moved to a new value on every rerun (the sections that "
          "depend on it are made again)\n")
    print("| page | rerun at defaults | cold at defaults | slider moved (which) | payload at defaults "
          "| rerun at max | cold at max | payload at max |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")

    def cell(t: float) -> str:
        return f"{t * 1000:.1f} ms = {t / base:.1f}×"

    for page, t_def, c_def, moved, p_def, t_max, c_max, p_max in rows:
        moved_cell = f"{cell(moved[1])} ({moved[0]})" if moved else "no slider"
        print(f"| {page} | {cell(t_def)} | {cell(c_def)} | {moved_cell} | {p_def / 1000:.1f} KB "
              f"| {cell(t_max)} | {cell(c_max)} | {p_max / 1000:.1f} KB |")
    print("\nbudget: rerun at defaults ≤ 3× trivial; payload at defaults ≤ 150 KB")


def trivial_time(source: str, repeats: int) -> tuple[float, float]:
    """``rerun_time`` of a page given as source (the trivial baselines)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, dir=ROOT / "bench") as f:
        f.write(source)
    try:
        at = AppTest.from_file(f.name, default_timeout=60)
        at.run()
        return rerun_time(at, repeats)
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    main()
