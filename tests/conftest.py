"""Shared fixtures for the test suite."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import pytest

# The lessons' exact numbers live in the project's shared folder (``shared/golden`` next to the
# repository); ATTENTION_GOLDEN overrides the path. ``tests/data/lesson_examples.json`` is a copy
# for a stand-alone clone (test_golden_copy_is_current keeps it equal to the shared file).
GOLDEN_SHARED = Path(__file__).resolve().parents[2] / "shared" / "golden" / "lesson_examples.json"
GOLDEN_COPY = Path(__file__).resolve().parent / "data" / "lesson_examples.json"


def golden_path() -> Path:
    """ATTENTION_GOLDEN if set, else the shared file if present, else the repository's copy."""
    if os.environ.get("ATTENTION_GOLDEN"):
        return Path(os.environ["ATTENTION_GOLDEN"])
    return GOLDEN_SHARED if GOLDEN_SHARED.is_file() else GOLDEN_COPY


@pytest.fixture(scope="session")
def golden() -> dict:
    """The parsed ``lesson_examples.json`` (both worked examples and the softmax examples)."""
    path = golden_path()
    if not path.is_file():
        pytest.fail(f"golden file not found: {path} (set ATTENTION_GOLDEN)")
    return json.loads(path.read_text(encoding="utf-8"))


def require(module: str):
    """Import a test-only reference library (``torch``, ``transformers``) or FAIL, never skip.

    They are in ``requirements-dev.txt``: a test comparing with them must not pass silently when
    they are missing.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"{module} is needed for this test (python -m pip install -r requirements-dev.txt): {exc}",
                    pytrace=False)


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(config, items):
    """A test that compares with live PyTorch (``@pytest.mark.torch``) is also ``slow``: importing torch takes
    seconds, so the fast tier (``-m "not e2e and not slow"``) never pays it."""
    for item in items:
        if item.get_closest_marker("torch") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)

