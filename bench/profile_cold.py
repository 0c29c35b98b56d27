"""Where a cold run's time goes: cProfile of every lesson's script run at defaults with Streamlit's caches empty.

AppTest, no browser. For each lesson: open it, then ``--repeats`` runs each after ``st.cache_data.clear()``
(everything computed, built and serialized again: a first visit at new settings), profiled on the script's
own thread. Prints, per lesson, the fastest cold run, the trivial page's (one 6x6 ``go.Heatmap``, in the app's
frame) measured the same way, their ratio (issue 20 budget: <= 5x), and the time by area (Plotly figure
building and validation, ``to_json``/JSON, pandas, NumPy/the core, Streamlit) plus the top functions by
cumulative time with ``--top N``.

    python bench/profile_cold.py                    # every lesson but the real-model ones
    python bench/profile_cold.py --pages multihead --top 30
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import logging
import os
import pstats
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
logging.getLogger("streamlit").setLevel(logging.ERROR)
logging.getLogger("streamlit.runtime.caching").setLevel(logging.ERROR)

import streamlit as st  # noqa: E402
import streamlit.testing.v1.app_test as _app_test  # noqa: E402
from streamlit.runtime.scriptrunner import script_runner as _script_runner  # noqa: E402
from streamlit.runtime.scriptrunner.script_cache import ScriptCache  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from bench.bench_pages import TRIVIAL_IN_APP  # noqa: E402
from explorer.lessons import LESSONS  # noqa: E402
from tests.apptest_utils import app_at  # noqa: E402

_SCRIPT_CACHE = ScriptCache()
_app_test.ScriptCache = lambda: _SCRIPT_CACHE

PROFILE: dict = {"on": False, "profile": None}
_original_run_script = _script_runner.ScriptRunner._run_script


def _profiled_run_script(self, rerun_data):
    if not PROFILE["on"]:
        return _original_run_script(self, rerun_data)
    prof = cProfile.Profile()
    prof.enable()
    try:
        return _original_run_script(self, rerun_data)
    finally:
        prof.disable()
        PROFILE["profile"] = prof


_script_runner.ScriptRunner._run_script = _profiled_run_script

# Areas, by the file a function lives in (self time, so nothing is counted twice).
AREAS = (
    ("plotly validation/figure", ("plotly/basedatatypes", "plotly/graph_objs", "plotly/validator", "_plotly_utils",
                                  "plotly/validators", "plotly/subplots", "plotly/express")),
    ("plotly json", ("plotly/io/_json", "plotly/utils", "json/encoder", "orjson")),
    ("pandas", ("pandas/",)),
    ("numpy/core", ("numpy/", "/attention/")),
    ("lessons/shell", ("/explorer/",)),
    ("streamlit", ("streamlit/",)),
    ("protobuf", ("google/protobuf",)),
)


def by_area(stats: pstats.Stats) -> dict[str, float]:
    out = {name: 0.0 for name, _ in AREAS} | {"other": 0.0}
    for (file, _line, _func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():
        f = file.replace("\\", "/")
        for name, needles in AREAS:
            if any(n in f for n in needles):
                out[name] += tt
                break
        else:
            out["other"] += tt
    return out


def cold(at: AppTest, repeats: int) -> tuple[float, pstats.Stats]:
    """Fastest script time of ``repeats`` cold runs, and the profile of the last one (profiled separately)."""
    times = []
    for _ in range(repeats):
        st.cache_data.clear()
        at.run()
        times.append(at.session_state["_run_seconds"])
    st.cache_data.clear()
    PROFILE["on"] = True
    try:
        at.run()
    finally:
        PROFILE["on"] = False
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return min(times), pstats.Stats(PROFILE["profile"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pages", nargs="*", help="only these lessons")
    ap.add_argument("--top", type=int, default=0, help="print the top N functions (by --sort)")
    ap.add_argument("--sort", default="cumulative", choices=("cumulative", "tottime"),
                    help="order of the --top list: cumulative or self time")
    args = ap.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(TRIVIAL_IN_APP)
    atexit.register(os.unlink, f.name)
    trivial = AppTest.from_file(f.name, default_timeout=60)
    trivial.run()
    cold(trivial, 10)
    names = args.pages or [e.name for e in LESSONS if e.name not in ("real_model", "kv_cache")]
    rows = []
    for name in names:
        t_trivial, _ = cold(trivial, args.repeats * 2)
        at = app_at(name)
        t, stats = cold(at, args.repeats)
        areas = by_area(stats)
        rows.append((name, t, t_trivial, areas))
        if args.top:
            print(f"\n=== {name}: cold {t * 1000:.1f} ms")
            stats.sort_stats(args.sort).print_stats(args.top)
    print(f"\nload average {os.getloadavg()[0]:.2f}; times are the fastest of {args.repeats} cold runs; areas are "
          "the self time of one profiled cold run (cProfile adds its own overhead)\n")
    head = " | ".join(name for name, _ in AREAS)
    print(f"| lesson | cold at defaults | trivial cold (in frame) | x trivial | {head} | other |")
    print("|---|---:|---:|---:|" + "---:|" * (len(AREAS) + 1))
    for name, t, tt, areas in rows:
        cells = " | ".join(f"{areas[a] * 1000:.0f}" for a, _ in AREAS)
        print(f"| {name} | {t * 1000:.1f} ms | {tt * 1000:.2f} ms | {t / tt:.0f}x | {cells} | "
              f"{areas['other'] * 1000:.0f} |")


if __name__ == "__main__":
    main()
