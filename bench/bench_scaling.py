"""Time of the scaling page's curves over d_k = 1, 2, 4, …, 1024: first time and cached.

A plain script that prints a table. "first" = ``scenarios_scaling.curves`` computed from
scratch (a fresh seed each repeat, median of the repeats); "cached" = the same call through
the page's ``st.cache_data`` wrapper after one warm-up (median). Also the time of the
page's per-d_k ``setting`` (histograms + one weight matrix) at d_k = 1024.

Run: ``python bench/bench_scaling.py`` (add ``--repeats N``).
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from explorer.lessons.scaling import model as S  # noqa: E402

SETTINGS = [  # (n_keys, n_samples): the page's defaults first, then the largest
    (S.DEFAULTS["n_keys"], S.DEFAULTS["n_samples"]),
    (S.N_KEYS_RANGE[1], S.DEFAULTS["n_samples"]),
    (S.DEFAULTS["n_keys"], S.SAMPLE_CHOICES[-1]),
    (S.N_KEYS_RANGE[1], S.SAMPLE_CHOICES[-1]),
]


def median_time(fn, repeats: int) -> float:
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from explorer.shell import blas

    blas.apply()  # the app's BLAS threads (explorer/shell/blas.py)
    print(f"BLAS: {blas.current()}")
    for name in ("streamlit", "streamlit.runtime.caching.cache_data_api"):  # "no runtime" notice
        logging.getLogger(name).setLevel(logging.ERROR)
    cached = st.cache_data(max_entries=32, show_spinner=False)(S.curves)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# bench_scaling: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load average {load:.1f}, {args.repeats} repeats (median)")
    print(f"# curves = saturation_sweep over d_k = {', '.join(map(str, S.D_K_CHOICES))}")
    print()
    print(f"| {'n_keys':>6} | {'samples':>7} | {'curves, first (ms)':>18} | {'curves, cached (ms)':>19} "
          f"| {'setting d_k=1024 (ms)':>21} |")
    print(f"|{'-' * 8}|{'-' * 9}|{'-' * 20}|{'-' * 21}|{'-' * 23}|")
    for n_keys, n_samples in SETTINGS:
        first = median_time(lambda i, n=n_keys, m=n_samples: S.curves(n, m, 1000 + i), args.repeats)
        cached(n_keys, n_samples, 0)  # warm-up
        warm = median_time(lambda i, n=n_keys, m=n_samples: cached(n, m, 0), args.repeats)
        one = median_time(lambda i, n=n_keys, m=n_samples: S.setting(1024, n, m, 2000 + i), args.repeats)
        print(f"| {n_keys:>6} | {n_samples:>7} | {1000 * first:>18.1f} | {1000 * warm:>19.2f} | {1000 * one:>21.1f} |")


if __name__ == "__main__":
    main()
