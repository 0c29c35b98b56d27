"""The app's process runs NumPy's BLAS on one thread per call unless the operator says otherwise (issue 47, item 1)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from attention.blocked import blas_threads, set_blas_threads
from explorer.shell import blas
from tests.apptest_utils import app_at


@contextlib.contextmanager
def threads_at(n: int):
    """The process's OpenBLAS on ``n`` threads for the block, then back to what it was."""
    before = blas_threads()
    assert before is not None, "NumPy's OpenBLAS is not reachable: the app could not set its threads"
    set_blas_threads(n)
    try:
        yield
    finally:
        set_blas_threads(before)


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, 1),
    ({"ATTENTION_BLAS_THREADS": "2"}, 2),
    ({"ATTENTION_BLAS_THREADS": " 1 "}, 1),
    ({"ATTENTION_BLAS_THREADS": "default"}, None),
    ({"ATTENTION_BLAS_THREADS": "Default"}, None),
    ({"OPENBLAS_NUM_THREADS": "2"}, None),  # the operator set the library's own variable: it decides
    ({"OMP_NUM_THREADS": "4"}, None),
    ({"OPENBLAS_NUM_THREADS": "2", "ATTENTION_BLAS_THREADS": "1"}, 1),  # the app's own variable wins
    ({"OPENBLAS_NUM_THREADS": ""}, 1),
])
def test_the_thread_count_the_environment_asks_for(environ, expected):
    assert blas.wanted(environ) == expected


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", "٢", "1e1"])
def test_a_thread_count_that_is_not_a_whole_number_of_at_least_one_is_refused_by_name(raw):
    with pytest.raises(ValueError, match="ATTENTION_BLAS_THREADS"):
        blas.wanted({"ATTENTION_BLAS_THREADS": raw})


@pytest.mark.parametrize("n", [0, -1, 1.0, True, "1"])
def test_the_core_refuses_a_thread_count_that_is_not_a_whole_number_of_at_least_one(n):
    with pytest.raises(ValueError, match="n must be a whole number"):
        set_blas_threads(n)


def test_apply_sets_numpys_blas_for_the_whole_process():
    with threads_at(2):
        assert blas.apply({}) == 1
        assert blas_threads() == 1
        assert "OpenBLAS on 1 thread(s)" in blas.current()
        assert blas.apply({"ATTENTION_BLAS_THREADS": "2"}) == 2
        assert blas_threads() == 2
        assert blas.apply({"ATTENTION_BLAS_THREADS": "default"}) is None
        assert blas_threads() == 2  # left as it was
        x = np.ones((64, 64), np.float32)
        assert float((x @ x)[0, 0]) == 64.0


def test_the_apps_first_run_sets_one_blas_thread(monkeypatch):
    monkeypatch.delenv("ATTENTION_BLAS_THREADS", raising=False)
    for name in blas.LIBRARY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with threads_at(2):
        monkeypatch.setattr(blas, "_once_done", False)
        at = app_at("quiz")
        assert not at.exception
        assert blas_threads() == 1


def test_an_operators_bad_value_is_logged_and_the_default_used(monkeypatch, caplog):
    monkeypatch.setenv("ATTENTION_BLAS_THREADS", "lots")
    monkeypatch.setattr(blas, "_once_done", False)
    with threads_at(2):
        blas.apply_once()
        assert blas_threads() == 1
    assert "ATTENTION_BLAS_THREADS must be a whole number" in caplog.text
