"""Long-running work, one way for every lesson: jobs shared by the server's sessions, and progress bars.

**Shared jobs** (:class:`Jobs`). Work that takes minutes (a training run) runs in one worker thread per server
process and kind of job (:func:`shared`, kept by ``st.cache_resource``), never in a page's script run. A job is
requested by its key (a hashable spec: every setting in the page's link); every session asking for that key gets the
same :class:`Entry`, so a class of 30 opening one link runs it once and watches one progress, and a learner who moves
a control while it runs does not stop it. Finished jobs are kept ``ttl`` seconds after their last use, at most
``max_finished`` of them and ``max_bytes`` in all (their results' ``nbytes``; least recently used dropped first); at
most ``max_pending`` wait or run at once (beyond that :meth:`Jobs.request` raises :class:`BusyError` and the page
asks the learner to try again in a minute). :func:`follow` draws a job's progress while it runs.

**Work in steps** (:func:`progress`): a progress bar over a computation done in the script run, one cached step at
a time (a sweep over every head or every cache variant), so a second visit replays the steps from the cache.

**Results a class shares** (:meth:`Jobs.keep`): a result computed in a script run (a sweep) kept in a registry as a
finished job, so it lives as the jobs do: ``ttl`` seconds after its *last use* (every rerun that shows it uses it),
not after it was stored; a registry's ``pin`` keeps the default inputs' results (what a class opening the lesson
shares) past ``ttl``, within the same bounds. A page that showed a result this session and finds it gone says so
(:func:`expired`, :func:`expired_notice`) and offers to compute it again; it never recomputes minutes of work
unasked.

**Sections on demand** (:func:`on_demand`): a section that costs a forward pass or more runs when the learner switches
it on (a toggle in the link); its label says what it runs and about how long it takes here
(:func:`explorer.shell.textviews.passes_time`), from a forward pass of the model timed on this server
(:attr:`explorer.shell.llm.Run.seconds`, :func:`explorer.shell.llm.pass_seconds`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import streamlit as st

from explorer.shell import charts, controls, i18n
from explorer.shell.cache import TTL_SECONDS
from explorer.shell.i18n import translator

_, _n = translator(__name__)

MAX_FINISHED = 24
"""Finished jobs kept per kind (training: 0.45 MiB a run at the defaults, 5.24 MiB at the largest settings, 3 layers
× 4 heads, d_model 64, d_head 64, n 64, 2000 steps; ``bench/bench_training.py``)."""
MAX_BYTES = 96 * 2**20
MAX_PENDING = 8
FOLLOW_MAX_S = 15 * 60  # a page stops waiting for a job after this long (it keeps running; a rerun shows it)
LIVE_REDRAW_S = 0.5  # a live view is redrawn at most this often while a job runs


class BusyError(Exception):
    """The server already has ``max_pending`` jobs of this kind waiting or running."""


@dataclass
class Entry:
    """One job of the process: its ``key``, its ``state`` (``"queued"``, ``"training"`` while it runs, ``"done"``,
    ``"failed"``), the last ``progress`` it reported, the ``result`` or the ``error`` (``"ValueError: …"``), and when
    it was last ``used`` (the registry's clock)."""

    key: Hashable
    state: str = "queued"
    progress: Any = None
    result: Any = None
    error: str | None = None
    used: float = 0.0

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")


class Jobs:
    """The jobs of one kind in one server process, shared by every session (see the module docstring).

    Args:
        work: ``work(key, report) -> result``, run on the worker thread; ``report(progress)`` publishes its progress
            (any object; :func:`follow` reads it). A result's ``nbytes`` (if it has one) counts against ``max_bytes``.
        max_finished, max_bytes, ttl, max_pending: the bounds. name: the worker thread's name.
        pin: ``pin(key)`` true for the results a class shares (the default inputs'): never dropped for ``ttl``, and
            dropped after every unpinned one when the bounds are reached.
        clock: the registry's clock in seconds (``time.monotonic``; a test moves it to expire entries).
    """

    def __init__(self, work: Callable[[Hashable, Callable[[Any], None]], Any], *, max_finished: int = MAX_FINISHED,
                 max_bytes: int = MAX_BYTES, ttl: float = TTL_SECONDS, max_pending: int = MAX_PENDING,
                 name: str = "jobs", pin: Callable[[Hashable], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self._work_fn, self.name = work, name
        self.max_finished, self.max_bytes, self.ttl, self.max_pending = max_finished, max_bytes, ttl, max_pending
        self.pin, self.clock = pin or (lambda key: False), clock
        self._cond = threading.Condition()
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._queue: deque[Hashable] = deque()
        self._worker: threading.Thread | None = None
        self.trained = 0  # jobs finished by this registry (a class opening one link adds one)

    def get(self, key: Hashable) -> Entry | None:
        """The entry of ``key`` (queued, running or finished), or ``None``; a finished one counts as used."""
        with self._cond:
            self._expire()
            entry = self._entries.get(key)
            if entry is not None:
                entry.used = self.clock()
                self._entries.move_to_end(key)
            return entry

    def request(self, key: Hashable) -> Entry:
        """The entry of ``key``: the existing one, or a new one queued for the worker (a failed job is queued again).

        Raises:
            BusyError: :attr:`max_pending` jobs are already waiting or running.
        """
        with self._cond:  # re-entrant: get() takes it again
            entry = self.get(key)
            if entry is not None and entry.state != "failed":
                return entry
            pending = sum(1 for e in self._entries.values() if not e.finished)
            if pending >= self.max_pending:
                raise BusyError(f"{pending} jobs are waiting or running")
            entry = Entry(key, used=self.clock())
            self._entries[key] = entry
            self._queue.append(key)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name=f"attention-explorer-{self.name}",
                                                daemon=True)
                self._worker.start()
            self._cond.notify_all()
            return entry

    def keep(self, key: Hashable, result: Any) -> Entry:
        """Keep ``result``, computed outside the worker (a sweep run in a script run), as the finished job of ``key``:
        shared by every session, dropped as finished jobs are (``ttl`` after its last use, the bounds)."""
        with self._cond:
            entry = Entry(key, state="done", result=result, used=self.clock())
            self._entries[key] = entry
            self._entries.move_to_end(key)
            self._expire()
            return entry

    def status(self, keys: Sequence[Hashable]) -> tuple[list[Entry | None], list | None]:
        """The entries of ``keys`` and, when every one is done, their results (in order)."""
        entries = [self.get(k) for k in keys]
        if entries and all(e is not None and e.state == "done" for e in entries):
            return entries, [e.result for e in entries]
        return entries, None

    def ahead_of(self, key: Hashable) -> int:
        """Jobs queued or running before ``key`` (0 when it runs or is not queued)."""
        with self._cond:
            if key not in self._queue:
                return 0
            running = sum(1 for e in self._entries.values() if e.state == "training")
            return list(self._queue).index(key) + running

    def wait(self, timeout: float) -> None:
        """Block until any job reports progress or ends, or ``timeout`` seconds pass."""
        with self._cond:
            self._cond.wait(timeout)

    def snapshot(self, entry: Entry) -> tuple[str, Any, Any, str | None]:
        """``(state, progress, result, error)`` of ``entry``, read together."""
        with self._cond:
            return entry.state, entry.progress, entry.result, entry.error

    def nbytes(self) -> int:
        """Bytes held by the finished results."""
        with self._cond:
            return sum(_nbytes(e.result) for e in self._entries.values())

    def clear(self) -> None:
        """Forget every finished job (the queued and running ones stay)."""
        with self._cond:
            for key in [k for k, e in self._entries.items() if e.finished]:
                del self._entries[key]

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                key = self._queue.popleft()
                entry = self._entries[key]  # queued entries are never dropped (only finished ones expire)
                entry.state = "training"
                self._cond.notify_all()

            def publish(progress, entry: Entry = entry) -> None:
                with self._cond:
                    entry.progress = progress
                    self._cond.notify_all()

            try:
                result = self._work_fn(key, publish)
            except Exception as exc:  # a job that fails is reported on the page, never raised in a session
                with self._cond:
                    entry.state, entry.error = "failed", f"{type(exc).__name__}: {exc}"
                    self._cond.notify_all()
                continue
            with self._cond:
                entry.result, entry.state, entry.used = result, "done", self.clock()
                self.trained += 1
                self._expire()
                self._cond.notify_all()

    def _expire(self) -> None:
        """Drop unpinned finished jobs unused for ``ttl`` seconds, then the least recently used beyond the bounds
        (the pinned ones last)."""
        now = self.clock()
        for key in [k for k, e in self._entries.items() if e.finished and now - e.used > self.ttl
                    and not self.pin(k)]:
            del self._entries[key]
        done = sorted((k for k, e in self._entries.items() if e.finished), key=self.pin)  # stable: LRU first
        total = sum(_nbytes(self._entries[k].result) for k in done)
        while done and (len(done) > self.max_finished or total > self.max_bytes):
            gone = self._entries.pop(done.pop(0))
            total -= _nbytes(gone.result)


def _nbytes(result) -> int:
    return int(getattr(result, "nbytes", 0))  # None has none


@st.cache_resource(show_spinner=False)
def shared(name: str, _work: Callable[[Hashable, Callable[[Any], None]], Any] | None,
           _pin: Callable[[Hashable], bool] | None = None) -> Jobs:
    """This process's :class:`Jobs` called ``name`` (one per server process, shared by every session), running
    ``_work`` (``None``: a registry of results kept by :meth:`Jobs.keep` only), keeping the results ``_pin`` names
    past the ttl (see :class:`Jobs`)."""
    return Jobs(_work, name=name, pin=_pin)


_SHOWN = "_jobs_shown"
"""Session state: the ``(registry name, key)`` pairs whose result this session's page showed (:func:`shown`)."""


def shown(registry: Jobs, key: Hashable) -> None:
    """This session's page shows the result of ``key``: if the registry drops it later, :func:`expired` says so."""
    st.session_state.setdefault(_SHOWN, set()).add((registry.name, key))


def expired(registry: Jobs, key: Hashable) -> bool:
    """Whether this session's page showed the result of ``key`` (:func:`shown`) and the registry has since dropped
    it (unused for its ttl, or beyond its bounds)."""
    return (registry.name, key) in st.session_state.get(_SHOWN, set()) and registry.get(key) is None


def expired_notice(registry: Jobs, key: Hashable, what: str, button: str | None = None,
                   button_key: str | None = None) -> None:
    """The friendly line a page shows instead of a result it showed before and the server has dropped (``what``:
    the result as a noun phrase, "the sweep of every head", in the run's language), with a button (``button``: its
    label, saying what it runs and about how long it takes; ``None``: the page's own button asks for it again).
    Pressing it forgets that the page showed the result, so the next run asks for it as the first time did (and
    computes it)."""
    st.info(_("Dropped from the server's memory: {what}. Nobody had looked at it for {minutes} minutes; press the "
              "button to compute it again.").format(what=what, minutes=i18n.integer(round(registry.ttl / 60))),
            icon="⌛")
    if button is not None:
        st.button(button, key=button_key,
                  on_click=lambda: st.session_state.get(_SHOWN, set()).discard((registry.name, key)))


def on_demand(switch: controls.Toggle, ctx: controls.Ctx, names: Sequence[controls.Control] = ()) -> bool:
    """Draw the switch of a section that costs a forward pass or more (a :class:`~explorer.shell.controls.Toggle`
    whose label says what it runs and about how long it takes here,
    :func:`explorer.shell.textviews.passes_time`) and return whether it is
    on: the section computes only then. A link that gives a value to one of the section's own controls (``names``)
    switches it on when the session opens, in the link too (so a link copied later still shows the section)."""
    ss = st.session_state
    if switch.key not in ss and controls.link_value(switch.key) is None \
            and any(controls.link_value(c.key) is not None for c in names):
        controls.set_value(switch.key, True)
    return bool(controls.draw(switch, ctx))


def follow(registry: Jobs, keys: Sequence[Hashable],
           report: Callable[[list[tuple[str, Any, Any, str | None]]], tuple[float, str, tuple | None]],
           waiting: str) -> None:
    """While any job of ``keys`` waits or runs: a progress bar (``waiting`` at first) and a live view, redrawn as the
    worker reports; returns when every job has finished (or failed), or after :data:`FOLLOW_MAX_S` (the jobs go on).

    ``report(states)`` reads the jobs' :meth:`Jobs.snapshot` (``(state, progress, result, error)``, in the order of
    ``keys``) and returns ``(fraction done, the bar's text, live)``: ``live`` is ``None`` or ``(version, figure)``,
    ``figure()`` building the live view, drawn when ``version`` changed (a new step), at most every
    :data:`LIVE_REDRAW_S` seconds. A rerun (the learner moved a control) stops this loop, not the worker.
    """
    entries = [registry.get(k) for k in keys]
    if not any(e is not None and not e.finished for e in entries):
        return
    started, drawn_at, drawn = time.monotonic(), 0.0, None
    with progress(waiting) as step:
        live = st.empty()
        while time.monotonic() - started < FOLLOW_MAX_S:
            states = [registry.snapshot(e) if e is not None else ("done", None, None, None) for e in entries]
            if all(s[0] in ("done", "failed") for s in states):
                break
            fraction, text, view = report(states)
            step(fraction, text)
            if view is not None and view[0] != drawn and time.monotonic() - drawn_at >= LIVE_REDRAW_S:
                charts.into(live)(view[1](), key=None, width="stretch")
                drawn_at, drawn = time.monotonic(), view[0]
            registry.wait(0.25)
        live.empty()


@contextmanager
def progress(text: str, done: str | None = None) -> Iterator[Callable[[float, str], None]]:
    """A progress bar over work done in steps: ``with jobs.progress(text) as step: … step(fraction, text) …``.

    ``step(fraction, text)`` moves the bar (``fraction`` clamped to 0..1) and says what runs now. On leaving, the bar
    shows ``done`` at 100 %, or goes when ``done`` is ``None``.
    """
    bar = st.progress(0.0, text=text)
    yield lambda fraction, text: bar.progress(min(max(float(fraction), 0.0), 1.0), text=text)
    if done is None:
        bar.empty()
    else:
        bar.progress(1.0, text=done)


def in_steps(work: Callable[..., Any], text: Callable[[int], str], done: str | None = None, *, first: int = 0) -> Any:
    """``work(progress=…)`` under one :func:`progress` bar, its result returned: ``work`` calls
    ``progress(finished, total)`` after each of its ``total`` steps (the door's sweeps:
    :func:`explorer.shell.llm.knockout_sweep`, :func:`explorer.shell.llm.patch_residual_sweep`), which moves the bar to
    ``finished / total`` and says ``text(first + finished)`` (what runs next; the bar opens on ``text(first)``); on
    leaving, the bar says ``done`` at 100 % (or goes when ``done`` is ``None``).
    """
    with progress(text(first), done) as step:
        return work(progress=lambda finished, total: step(finished / total, text(first + finished)))


def each(work: Callable[[Any], Any], items: Sequence, text: Callable[[int, Any], str], start: str,
         done: str | None = None) -> tuple:
    """``(work(item) for item in items)`` under one :func:`progress` bar, as a tuple: the bar opens on ``start``;
    before item ``i`` it stands at ``i / len(items)`` and says ``text(i, item)``; on leaving it says ``done`` at
    100 % (or goes when ``done`` is ``None``). With a cached ``work``, a second visit replays the items at once."""
    out = []
    with progress(start, done) as step:
        for i, item in enumerate(items):
            step(i / len(items), text(i, item))
            out.append(work(item))
    return tuple(out)
