"""How many threads NumPy's BLAS (OpenBLAS) may use in the app's process: one, unless the operator says otherwise.

The server runs every learner's script in a thread of its own, in one process. By default OpenBLAS splits every
matmul over all the machine's cores, and when another core is busy (another learner's run, another process) its
threads wait for each other. Measured on this project's 2-core machine (``BENCHMARKS.md``, "BLAS threads"):
SmolLM2-135M's forward pass over 32 tokens took 0.15-0.19 s on one OpenBLAS thread and a median of 3.3-3.4 s on the
default two beside a busy core.

The entrypoint calls :func:`apply_once` on every run; every benchmark in ``bench/`` calls :func:`apply`, so the app
runs the way its benchmarks measure. The count is process-wide and set through the core's own OpenBLAS handle
(:func:`attention.blocked.set_blas_threads`): NumPy has loaded its OpenBLAS long before the script runs, so the
``OPENBLAS_NUM_THREADS`` variable would be read too late. The operator decides with :data:`THREADS_ENV`
(:func:`wanted`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping

from attention.blocked import blas_threads, set_blas_threads

THREADS_ENV = "ATTENTION_BLAS_THREADS"
"""The operator's setting: a whole number of threads (1 or more), or ``default`` for the BLAS library's own."""
DEFAULT_THREADS = 1
"""Threads per BLAS call when the operator sets nothing (what serves several learners at once best; measured)."""
LIBRARY_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""The BLAS libraries' own variables: one of them set means the operator chose already."""


def wanted(environ: Mapping[str, str] | None = None) -> int | None:
    """The thread count the environment asks for: :data:`THREADS_ENV`'s number, ``None`` to leave the library as it
    is (``default``, or one of :data:`LIBRARY_VARIABLES` set), else :data:`DEFAULT_THREADS`.

    Raises:
        ValueError: :data:`THREADS_ENV` is neither ``default`` nor a whole number of at least 1 (the message names
            the variable and its value).
    """
    env = os.environ if environ is None else environ
    raw = env.get(THREADS_ENV, "").strip()
    if raw.lower() == "default":
        return None
    if raw:
        if not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
            raise ValueError(f"{THREADS_ENV} must be a whole number of threads (1 or more) or 'default', got {raw!r}")
        return int(raw)
    if any(env.get(name, "").strip() for name in LIBRARY_VARIABLES):
        return None
    return DEFAULT_THREADS


def apply(environ: Mapping[str, str] | None = None) -> int | None:
    """Set NumPy's BLAS to :func:`wanted` threads for the whole process; returns the count set, or ``None`` when the
    library is left as it is (asked to, or not an OpenBLAS the core can reach).

    Raises:
        ValueError: as :func:`wanted`.
    """
    n = wanted(environ)
    return n if n is not None and set_blas_threads(n) else None


_once_lock = threading.Lock()
_once_done = False


def apply_once() -> None:
    """:func:`apply`, the first time it is called in the process (the entrypoint calls it on every run; later calls
    cost nothing). A bad :data:`THREADS_ENV` is logged and :data:`DEFAULT_THREADS` used: the operator's typo must
    not stop the learners' pages."""
    global _once_done
    if _once_done:
        return
    with _once_lock:
        if _once_done:
            return
        try:
            apply()
        except ValueError as exc:
            logging.getLogger(__name__).warning("%s; using %d BLAS thread(s)", exc, DEFAULT_THREADS)
            apply({THREADS_ENV: str(DEFAULT_THREADS)})
        _once_done = True


def current() -> str:
    """The BLAS setting of this process, for a benchmark's header: ``"OpenBLAS on 1 thread(s) (ATTENTION_BLAS_THREADS
    unset: the app's default)"``."""
    n = blas_threads()
    how = os.environ.get(THREADS_ENV) or next((f"{v}={os.environ[v]}" for v in LIBRARY_VARIABLES
                                               if os.environ.get(v)), None)
    source = f"{THREADS_ENV}={how}" if how and "=" not in how else (how or f"{THREADS_ENV} unset: the app's default")
    return f"OpenBLAS on {n} thread(s) ({source})" if n is not None else "BLAS not reachable (library default)"
