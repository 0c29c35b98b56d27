"""explorer.shell.cache: dataclass keys hashed by their fields, and told apart by every field."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pytest
import streamlit as st

from explorer.shell.cache import cached, figure, key_hash_funcs, resource
from explorer.shell.settings import Settings

BASE = Settings(("The", "cat"), 8, 4, 42, "lesson", False)


@dataclass(frozen=True)
class Outer:
    settings: Settings
    n_heads: int


def test_hash_funcs_cover_dataclasses_in_hints_unions_and_fields():
    def f(a: Outer, b: Settings | None, c: int) -> None: ...

    assert set(key_hash_funcs(f)) == {Outer, Settings}


def test_a_cached_function_tells_every_field_apart():
    calls = []

    @cached(max_entries=64)
    def compute(settings: Settings, outer: Outer) -> tuple:
        calls.append(1)
        return settings.tokens, outer.n_heads

    st.cache_data.clear()
    variants = [BASE, replace(BASE, tokens=("A", "cat")), replace(BASE, d_model=9), replace(BASE, d_k=5),
                replace(BASE, seed=7), replace(BASE, embedding="per-token"), replace(BASE, positional=True)]
    for v in variants:
        compute(v, Outer(v, 2))
    assert len(calls) == len(variants)  # each a new entry
    compute(BASE, Outer(BASE, 2))
    assert len(calls) == len(variants)  # equal values: from the cache
    compute(BASE, Outer(BASE, 3))
    assert len(calls) == len(variants) + 1  # a nested field counts too


# --- bounds: count, size, time (issue #19: memory is a budget) -------------------------------------------------------

def _cached_functions():
    """Every st.cache_data function of the app's own modules (the lessons' draw.py and the shell), by name."""
    import importlib
    import pkgutil

    import explorer.shell as shell_pkg
    from explorer.lessons import LESSONS

    modules = [f"explorer.shell.{m.name}" for m in pkgutil.iter_modules(shell_pkg.__path__)]
    modules += [f"explorer.lessons.{entry.name}.draw" for entry in LESSONS]
    found = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:  # a lesson without a draw.py
            continue
        for attr, obj in vars(module).items():
            info = getattr(getattr(obj, "recorded", obj), "_info", None)  # a section: its st.cache_data function
            if type(info).__name__ == "CachedDataFuncInfo":  # st.cache_data (st.cache_resource holds the model)
                found.setdefault(id(obj), (f"{name}.{attr}", info))
    return dict(found.values())


def test_every_cache_is_bounded_by_count_and_time():
    found = _cached_functions()
    assert len(found) >= 40, sorted(found)  # the lessons' sections and computations (so the test sees them)
    unbounded = {name: (info.max_entries, info.ttl) for name, info in found.items()
                 if not info.max_entries or info.ttl is None or info.ttl == float("inf")}
    assert not unbounded, unbounded


def test_the_caches_share_one_byte_budget():
    import tomllib

    from tests.apptest_utils import ROOT

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxCacheDataSize"].endswith("mb")


def test_the_idle_sweep_empties_the_caches_once_per_quiet_spell(monkeypatch):
    from explorer.shell import cache

    calls = []

    @cached(max_entries=4)
    def compute(x: int) -> int:
        calls.append(x)
        return x

    compute(1)
    cache.note_activity()
    start = cache._last_run
    assert cache.sweep_if_idle(None, now=start + cache.IDLE_CLEAR_SECONDS - 1) is None  # not idle long enough
    compute(1)
    assert calls == [1]
    swept = cache.sweep_if_idle(None, now=start + cache.IDLE_CLEAR_SECONDS + 1)
    assert swept == start
    compute(1)
    assert calls == [1, 1]  # the cache was emptied
    assert cache.sweep_if_idle(swept, now=start + 10 * cache.IDLE_CLEAR_SECONDS) == swept  # once per quiet spell
    compute(1)
    assert calls == [1, 1]
    assert cache._sweeper is not None and cache._sweeper.is_alive()


@pytest.mark.slow  # a second interpreter importing Streamlit: about 1 s of CPU
def test_the_server_skips_streamlits_full_collection_after_every_run():
    """Streamlit's ``runner.postScriptGC`` (a full ``gc.collect(2)`` after every run) is off, as Streamlit reads it.

    It cost half of a cold run on the server (issue 20; BENCHMARKS.md, "Budget 4"). Read by Streamlit's own config
    loader from the repository's ``.streamlit/config.toml``, so a misspelt key would fail here.
    """
    import subprocess
    import sys

    from tests.apptest_utils import ROOT

    out = subprocess.run([sys.executable, "-c", "from streamlit import config; "
                          "print(config.get_option('runner.postScriptGC'))"],
                         cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False", out


def test_glibc_is_told_to_hand_large_freed_blocks_back(monkeypatch):
    """``tune_malloc``: two arenas and a fixed 1 MiB mmap threshold, through glibc's ``mallopt``."""
    from explorer.shell import cache

    assert cache.tune_malloc() is True  # this machine's glibc takes both (Linux, as the soak's server)
    calls = []

    class FakeLibc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    monkeypatch.setattr(cache.ctypes, "CDLL", lambda name: FakeLibc())
    assert cache.tune_malloc() is True
    assert calls == [(-8, cache.MALLOC_ARENA_MAX), (-3, cache.MALLOC_MMAP_THRESHOLD)]
    assert cache.MALLOC_ARENA_MAX == 2 and cache.MALLOC_MMAP_THRESHOLD == 2**20

    def no_libc(name):
        raise OSError("no glibc here")

    monkeypatch.setattr(cache.ctypes, "CDLL", no_libc)
    assert cache.tune_malloc() is False  # elsewhere: nothing changes, nothing raised


def test_the_idle_sweep_waits_for_a_long_run_to_end():
    """A run that started before the quiet spell and still runs (a 15-minute sweep on a busy server) is activity."""
    import threading

    from explorer.shell import cache

    calls = []

    @cached(max_entries=4)
    def compute(x: int) -> int:
        calls.append(x)
        return x

    compute(2)
    cache.note_activity()
    start = cache._last_run
    done = threading.Event()
    runner = threading.Thread(target=done.wait, name=cache.SCRIPT_THREAD_NAME, daemon=True)
    runner.start()
    try:
        assert cache.script_running()
        assert cache.sweep_if_idle(None, now=start + 3 * cache.IDLE_CLEAR_SECONDS) is None  # still running
        compute(2)
        assert calls == [2]  # kept
    finally:
        done.set()
        runner.join()
    assert not cache.script_running()
    assert cache.sweep_if_idle(None, now=start + 3 * cache.IDLE_CLEAR_SECONDS) == start  # the run ended: swept
    compute(2)
    assert calls == [2, 2]


def test_a_resource_is_shared_not_copied_and_keys_on_every_field():
    @resource(max_entries=8)
    def state(settings: Settings, _unhashed: object) -> list:
        return [settings.seed]

    st.cache_resource.clear()
    first = state(BASE, object())
    assert state(BASE, object()) is first  # the same object (not a copy); ``_unhashed`` is not part of the key
    assert state(replace(BASE, seed=7), None) == [7]


def test_a_serial_computation_runs_once_at_a_time():
    import threading
    import time

    running, most = [0], [0]
    counter = threading.Lock()

    @cached(max_entries=8, serial=True)
    def slow(i: int) -> int:
        with counter:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with counter:
            running[0] -= 1
        return i

    st.cache_data.clear()
    threads = [threading.Thread(target=slow, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1 and [slow(i) for i in range(4)] == [0, 1, 2, 3]


@dataclass(frozen=True)
class _Config:
    n_layers: int


@dataclass
class _Model:  # what model_identity reads of a loaded model (attention.llama.LlamaModel)
    path: str
    weights_mode: str
    config: _Config
    weights: list  # never hashed


@pytest.mark.parametrize("decorate", [lambda f: cached(max_entries=4)(f), lambda f: resource(4)(f),
                                      lambda f: figure(4)(f)], ids=["cached", "resource", "figure"])
def test_a_lesson_computation_keys_on_its_models_identity_not_only_on_the_ids(decorate):
    """Two models with the same tokenizer (SmolLM2-135M and -360M) give the same ids: a lesson's ``_model`` (not
    hashed) must still key the entry, or the second model would be shown the first one's results (issue 50)."""
    calls = []

    def statistic(_model, ids: tuple[int, ...]) -> str:
        calls.append(_model.path)
        return f"{_model.path}:{sum(ids)}"

    kept = decorate(statistic)
    a, b = (_Model(p, "float32", _Config(30), [np.zeros(3)]) for p in ("a.gguf", "b.gguf"))
    assert kept(a, (1, 2)) == "a.gguf:3" and kept(b, (1, 2)) == "b.gguf:3" and calls == ["a.gguf", "b.gguf"]
    assert kept(_Model("a.gguf", "compact", _Config(30), []), (1, 2)) == "a.gguf:3" and len(calls) == 3
    assert kept(a, (1, 2)) == "a.gguf:3" and len(calls) == 3  # the same model: cached
    assert kept(_model=b, ids=(1, 2)) == "b.gguf:3"  # given by name
    kept.clear()
