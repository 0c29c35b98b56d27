"""The caches every lesson uses: cached sections (:func:`section`, element replay), computations (:func:`cached`),
shared values (:func:`resource`) and widget figures (:func:`figure`), all keyed on the arguments' values.

A frozen dataclass argument (the shared :class:`~explorer.shell.settings.Settings`, a lesson's own key) is hashed
by its fields as a tuple, in half the time of Streamlit's generic path (a deep copy into a dict first). The caches
are per process by design: behind a proxy (``deploy/``) a learner, kept on one replica by its cookie, meets that
replica's entries; a replica that restarts starts cold. The only other module state is the idle sweep's bookkeeping
(``tests/test_deploy.py`` lists every piece of module state).

Memory is a budget (Streamlit Community Cloud gives an app as little as about 0.7 GB), so every cache is bounded
three ways (measured sizes: BENCHMARKS.md, "Memory soak"): by count, ``max_entries`` per function, sized from its
entry at the largest settings (a section replays at most 3.6 MiB; the multi-head scenario at 512 heads is 26 MiB);
by size, ``server.maxCacheDataSize`` in ``.streamlit/config.toml`` (one LRU byte budget over every
``st.cache_data`` entry); by time, :data:`TTL_SECONDS` after an entry was stored, and the idle sweep
(:data:`IDLE_CLEAR_SECONDS`; Streamlit expires entries only when their function is called again, so without it
an idle server would keep everything).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import inspect
import threading
import time
import types
import typing
from collections.abc import Callable, Mapping

import streamlit as st

from explorer.shell import i18n

SECTION_MAX_ENTRIES = 8  # per section function; at the largest settings an entry holds up to 3.6 MiB
TTL_SECONDS = 30 * 60  # an entry expires this long after it was stored (checked when its function is called)
IDLE_CLEAR_SECONDS = 5 * 60  # no script run for this long: the idle sweep empties every st.cache_data cache
_SWEEP_EVERY_SECONDS = 30
MALLOC_ARENA_MAX = 2
"""glibc heaps (arenas) the process keeps: by default up to 8 per core, one for nearly every session's script thread,
each keeping the memory its runs freed (see :func:`tune_malloc`)."""
MALLOC_MMAP_THRESHOLD = 1 << 20
"""Blocks from this size (1 MiB: a 64-token row of logits is 12 MiB) get pages of their own, handed back to the
system when freed; glibc's default threshold grows up to 32 MiB after the first such block is freed."""
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8  # glibc <malloc.h>
SCRIPT_THREAD_NAME = "ScriptRunner.scriptThread"  # streamlit.runtime.scriptrunner.script_runner (1.67)


def _fields(obj) -> tuple:
    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))


def _dataclasses_in(hint, found: set[type]) -> None:
    """Every dataclass type named by a type hint (``Settings``, ``Settings | LessonExample``, …), and in its fields."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint in found:
            return
        found.add(hint)
        for field_hint in typing.get_type_hints(hint).values():
            _dataclasses_in(field_hint, found)
        return
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is not None:
        for arg in typing.get_args(hint):
            _dataclasses_in(arg, found)


def key_hash_funcs(func: Callable) -> dict[type, Callable]:
    """``hash_funcs`` for ``st.cache_data``: each dataclass type in ``func``'s parameter hints hashed by its fields."""
    hints = typing.get_type_hints(func)
    hints.pop("return", None)
    found: set[type] = set()
    for hint in hints.values():
        _dataclasses_in(hint, found)
    return {t: _fields for t in found}


def model_identity(model) -> tuple:
    """What tells one loaded model from another in a cache key, instead of its arrays: its file, weights mode and
    config (:class:`attention.llama.LlamaModel`'s ``path``, ``weights_mode``, ``config``; a KV-cache variant has the
    model's file and mode but its own config). :func:`explorer.shell.llm.model_key` is this."""
    return str(model.path), model.weights_mode, dataclasses.astuple(model.config)


def _keyed_by_model(func: Callable, cache: Callable[[Callable], Callable]) -> Callable:
    """``func`` under ``cache`` (a Streamlit cache decorator), with the identity of its ``_model`` argument
    (:func:`model_identity`) as one more, hashed, argument when it takes one.

    A lesson's computation names the model ``_model`` so that Streamlit does not hash its arrays; keyed on the ids
    alone, two models that share a tokenizer (SmolLM2-135M and -360M; a test's tiny SmolLM2 and the real file) would
    share every cached result of the same prompt once the server loads more than one model (issue 50)."""
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return cache(func)
    if "_model" not in params:
        return cache(func)
    position = params.index("_model")

    @functools.wraps(func)
    def with_identity(*args, model_identity: tuple, **kwargs):
        return func(*args, **kwargs)

    kept = cache(with_identity)

    @functools.wraps(func)
    def call(*args, **kwargs):
        model = kwargs["_model"] if "_model" in kwargs else args[position]
        return kept(*args, model_identity=model_identity(model), **kwargs)

    call.clear = kept.clear
    return call


def section(func):
    """Decorator for a page section drawn from its arguments alone (figures, tables, text; no widgets).

    The first call with given arguments runs ``func`` and Streamlit records every element it draws; a later call
    with equal arguments (any session) replays them (``st.cache_data``'s element replay), so a rerun caused by
    another widget builds and serializes no figure again. Rules for ``func``: pure (no ``st.session_state``, no
    ``st.stop``, no widgets); arguments hashable by ``st.cache_data`` (numbers, strings, tuples, NumPy arrays, frozen
    dataclasses, annotated as such); returns ``None`` or a small value; never calls another section inside columns
    it created (Streamlit would replay the inner one outside them). At most :data:`SECTION_MAX_ENTRIES` argument
    sets are kept (least recently used dropped). The run's language is part of the key: a section recorded in
    English is never replayed to a learner reading Português or Türkçe.
    """
    kept = st.cache_data(max_entries=SECTION_MAX_ENTRIES, ttl=TTL_SECONDS, show_spinner=False,
                         hash_funcs=key_hash_funcs(func))
    return _keyed_by_language(func, lambda f: _keyed_by_model(f, kept))


def _keyed_by_language(func: Callable, cache: Callable[[Callable], Callable]) -> Callable:
    """``func`` under ``cache`` (a Streamlit cache decorator) with the run's language as one more argument: part of
    the key, and the language ``func`` runs in."""

    @functools.wraps(func)
    def in_language(*args, lang: str, **kwargs):
        with i18n.using(lang):
            return func(*args, **kwargs)

    kept = cache(in_language)

    @functools.wraps(func)
    def call(*args, **kwargs):
        return kept(*args, lang=i18n.current(), **kwargs)

    call.clear, call.recorded = kept.clear, kept  # the Streamlit cache function behind it
    return call


def cached(max_entries: int, *, serial: bool = False,
           hash_funcs: Mapping[type, Callable] | None = None) -> Callable[[Callable], Callable]:
    """Decorator for a pure computation shared by sections: ``st.cache_data`` keeping ``max_entries`` argument
    sets for at most :data:`TTL_SECONDS`, frozen dataclass arguments hashed by their fields (see the module
    docstring), other types by ``hash_funcs`` if given (the door's model). Size ``max_entries`` from the function's
    measured entry size at the largest settings.

    ``serial``: the computation runs once at a time in the process, however many sessions ask at once (the others
    wait for it): for one whose memory peak must not be doubled (the sinks lesson's converted model)."""
    return lambda func: _keyed_by_model(
        _one_at_a_time(func) if serial else func,
        st.cache_data(max_entries=max_entries, ttl=TTL_SECONDS, show_spinner=False,
                      hash_funcs={**key_hash_funcs(func), **(hash_funcs or {})}))


def _one_at_a_time(func: Callable) -> Callable:
    lock = threading.Lock()

    @functools.wraps(func)
    def run(*args, **kwargs):
        with lock:
            return func(*args, **kwargs)

    return run


def resource(max_entries: int, ttl: float | None = TTL_SECONDS,
             hash_funcs: Mapping[type, Callable] | None = None) -> Callable[[Callable], Callable]:
    """Decorator for a computation whose result is shared, never copied (``st.cache_resource``): a value that cannot
    be pickled (a live KV cache) or a large read-only array, at most ``max_entries`` argument sets for ``ttl``
    seconds (``None``: the process's life), frozen dataclass arguments hashed by their fields, other types by
    ``hash_funcs`` if given; arguments named with a leading ``_`` are not hashed (a ``_model`` is keyed by
    :func:`model_identity`). The value is shared by
    every session: it must not be changed."""
    return lambda func: _keyed_by_model(func, st.cache_resource(
        max_entries=max_entries, ttl=ttl, show_spinner=False,
        hash_funcs={**key_hash_funcs(func), **(hash_funcs or {})}))


def figure(max_entries: int) -> Callable[[Callable], Callable]:
    """Decorator for a figure a page draws as a widget (a clickable grid: a widget cannot be a replayed section):
    built once per argument set and language (``st.cache_resource``: the same object on every rerun, so a rerun
    builds and sends no new figure), at most ``max_entries`` of them for :data:`TTL_SECONDS`.

    The language of the run (:func:`explorer.shell.i18n.current`) is part of the key and the figure is built in it
    (its words), as :func:`section` does. Arguments named with a leading ``_`` are not hashed (a ``_model`` is
    keyed by :func:`model_identity`)."""
    kept = st.cache_resource(max_entries=max_entries, ttl=TTL_SECONDS, show_spinner=False)
    return lambda func: _keyed_by_language(func, lambda f: _keyed_by_model(f, kept))


# --- the idle sweep ------------------------------------------------------------------------------------------
_last_run = time.monotonic()
_sweeper: threading.Thread | None = None
_sweeper_lock = threading.Lock()


def note_activity() -> None:
    """Called by every script run (the shared sidebar): the server is in use; starts the idle sweep once."""
    global _last_run, _sweeper
    _last_run = time.monotonic()
    if _sweeper is None:
        with _sweeper_lock:
            if _sweeper is None:
                tune_malloc()  # once per process, at its first run
                _sweeper = threading.Thread(target=_sweep_when_idle, name="attention-explorer-idle-sweep", daemon=True)
                _sweeper.start()


def _sweep_when_idle() -> None:
    """Forever: every :data:`_SWEEP_EVERY_SECONDS`, :func:`sweep_if_idle`."""
    swept_at = None
    while True:
        time.sleep(_SWEEP_EVERY_SECONDS)
        swept_at = sweep_if_idle(swept_at)


def sweep_if_idle(swept_at: float | None, now: float | None = None) -> float | None:
    """Clear the caches (:func:`clear_caches`) if no script has started for :data:`IDLE_CLEAR_SECONDS`, none is
    running (:func:`script_running`) and they were not cleared since that last run (``swept_at``: the last run's
    time when they were). Returns the new ``swept_at``."""
    last = _last_run
    if (time.monotonic() if now is None else now) - last >= IDLE_CLEAR_SECONDS and swept_at != last \
            and not script_running():
        clear_caches()
        return last
    return swept_at


def script_running() -> bool:
    """True while a session's script runs (Streamlit runs each in a thread named ``ScriptRunner.scriptThread``,
    which ends with the run): a run of many minutes (a model lesson's sweep on a busy server) started before the
    quiet spell is activity too, and its caches must not be emptied under it."""
    return any(t.name == SCRIPT_THREAD_NAME and t.is_alive() for t in threading.enumerate())


def clear_caches() -> None:
    """Empty every ``st.cache_data`` cache of the process and return the freed heap to the system.

    ``st.cache_resource`` (the real model's weights) is kept. The bytes Streamlit stored are
    freed, but glibc keeps freed heap pages for reuse (the process would not shrink); ``malloc_trim``
    gives them back (Linux with glibc; elsewhere this step is skipped).
    """
    st.cache_data.clear()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def tune_malloc() -> bool:
    """Make glibc hand freed memory back to the system as the lessons go, not only at the idle sweep.

    A model lesson's run allocates and frees arrays of 1-140 MiB (logits ``[n, 49152]``, a converted model) in its
    session's own thread; glibc keeps a heap per thread and serves blocks up to 32 MiB from them, which stay in the
    process when freed. With :data:`MALLOC_ARENA_MAX` heaps and a fixed :data:`MALLOC_MMAP_THRESHOLD` large arrays
    are mapped on their own and returned when freed (measured: BENCHMARKS.md, "Memory soak"). ``True`` when both
    settings were taken (Linux with glibc; elsewhere nothing changes).
    """
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    took_arenas = mallopt(_M_ARENA_MAX, MALLOC_ARENA_MAX) == 1  # mallopt returns 1 on success
    took_threshold = mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD) == 1
    return took_arenas and took_threshold
