"""A busy core beside a benchmark: another process that keeps one core at 100 % while the measurement runs.

Learners' servers are busy (another learner's run, another app on the same host), so every speed figure is taken
on a quiet machine *and* with a busy core beside it::

    from bench.busy import busy_core

    with busy_core():           # one process spinning on one core until the block ends
        ...measure...

The spinner is plain Python arithmetic in a process of its own (no BLAS, no shared lock): what a second learner's
Python work or another program does to the cores this server runs on.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
from collections.abc import Iterator


def _spin() -> None:  # pragma: no cover - runs in the child
    x = 0
    while True:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF


@contextlib.contextmanager
def busy_core(busy: bool = True) -> Iterator[None]:
    """One child process spinning on a core for the duration of the block (nothing when ``busy`` is false)."""
    if not busy:
        yield
        return
    child = mp.get_context("spawn").Process(target=_spin, name="bench-busy-core", daemon=True)
    child.start()
    try:
        yield
    finally:
        child.terminate()
        child.join(5)


def load_average() -> str:
    """``"load 1.23 0.98 0.50"`` (1, 5, 15 minutes), or ``"load n/a"``."""
    try:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load n/a"
