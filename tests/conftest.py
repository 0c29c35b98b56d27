"""Shared fixtures for the test suite."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# The lessons' exact numbers live outside the repository (``shared/golden`` next to it);
# ATTENTION_GOLDEN overrides the path.
GOLDEN_DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "golden" / "lesson_examples.json"


@pytest.fixture(scope="session")
def golden() -> dict:
    """The parsed ``lesson_examples.json`` (both worked examples and the softmax examples)."""
    path = Path(os.environ.get("ATTENTION_GOLDEN") or GOLDEN_DEFAULT)
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"golden file not found in CI: {path} (set ATTENTION_GOLDEN)")
        pytest.skip(f"golden file not found: {path} (set ATTENTION_GOLDEN)")
    return json.loads(path.read_text(encoding="utf-8"))
