"""Bytes one cache entry takes, per cached function, with every lesson at its largest settings.

Each lesson of ``explorer.lessons.LESSONS`` (the two real-model lessons left out: their model is
``st.cache_resource``, measured in "The real model") runs once in AppTest with a link at the
largest settings (64 tokens, ``d_model`` 512, ``d_k`` 128, 512 heads, 8192 samples); then the
serialized size of every ``st.cache_data`` entry is read from Streamlit's cache statistics (the
numbers ``/_stcore/metrics`` serves; read in process here) and the caches are cleared before the
next lesson. What ``max_entries`` in the lessons' ``draw.py`` files and in ``explorer/shell`` are
sized from (BENCHMARKS.md, "Memory soak").

    python bench/cache_sizes.py        # about a minute
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from streamlit.runtime.caching.cache_data_api import _data_caches  # noqa: E402 - the statistics' source

from tests.apptest_utils import app_at  # noqa: E402

SENTENCE = " ".join(f"w{i}" for i in range(64))
BIG = {"sentence": SENTENCE, "d_model": "512", "d_k": "128"}
LINKS = {
    "walkthrough": BIG,
    "lookup": {},
    "scaling": {"scale_d_k": "1024", "scale_n_keys": "32", "scale_samples": "8192"},
    "multihead": {**BIG, "n_heads": "512"},
    "causal": BIG,
    "two_sentences": {**BIG, "two_sentence": " ".join(f"v{i}" for i in range(64))},
    "quiz": BIG,
}


def main() -> None:
    largest: dict[str, tuple[float, str]] = {}
    for lesson, query in LINKS.items():
        st.cache_data.clear()
        at = app_at(lesson, query=query, timeout=900)
        assert not at.exception, [e.value for e in at.exception]
        sizes: dict[str, list[int]] = defaultdict(list)
        for stats in _data_caches.get_stats().values():
            for stat in stats:
                sizes[stat.cache_name].append(stat.byte_length)
        for name, entries in sizes.items():
            mib = max(entries) / 2**20
            if mib > largest.get(name, (0.0, ""))[0]:
                largest[name] = (mib, lesson)
    st.cache_data.clear()
    print("| cached function | largest entry (MiB) | on the page |\n|---|---|---|")
    for name, (mib, lesson) in sorted(largest.items(), key=lambda kv: -kv[1][0]):
        if mib >= 0.05:
            print(f"| `{name.removeprefix('explorer.')}` | {mib:.2f} | {lesson} |")


if __name__ == "__main__":
    main()
