"""Shared fixtures for the test suite, and the lessons' model in tests.

**The model behind the lessons' door.** The real-model lessons load their model through one door,
:data:`DOOR` (``load_model(weights, path=None)``, ``missing_weights()``); ``path`` ``None`` is the built-in model,
which is what is served here (a file of the server's catalogue, ``path`` given, is loaded by the shipped door).
In tests that door serves, by default, a
**tiny SmolLM2**: a random model written once per session with ``gguf``'s writer
(:func:`tests.core.llama_support.write_tiny_smollm2`) that carries SmolLM2-135M's real tokenizer (its 49,152
tokens, merges, special ids, ``smollm`` pre-tokenizer and chat template, read from the installed file) and its
architecture (30 layers, 9 query heads sharing 3 key/value heads, its context and RoPE base) at a narrow width
(d_head 8, d_ff 96). It is loaded by the same loader (``attention.llama.load(path, expected_sha256=None)``) and
runs the same door and page code; only the numbers are random. A 64-token forward pass takes about 80 ms instead
of 1-5 s, so page tests check mechanics (links, reruns, tables, counts, controls) at a fraction of the cost.

A test that needs SmolLM2's own numbers through the door opts in with ``@pytest.mark.smollm2`` (a module:
``pytestmark = pytest.mark.smollm2``): the door is then the shipped one, the real file with its pinned SHA-256
(or its missing-weights note). Tests that load the model themselves (``llama.load()``,
``tests.core.llama_support.real_model``) are not affected. ``pytest --lesson-model=smollm2`` runs every test on
the real file (to compare, or to check a mechanics test against SmolLM2 too). A page test recomputes what the page
shows from the served model (the ``door_model`` fixture), so it holds on either model; :data:`SMOLLM2_LESSON_DIRS`
(now empty) marks a whole lesson folder ``smollm2`` while its tests still assert SmolLM2's own numbers.

Every cache keys on the model too (a ``_model`` argument by :func:`explorer.shell.cache.model_identity`: its file,
weights mode and config), and whenever the door changes model between tests every Streamlit cache is emptied first
as well (:class:`LessonModel`), so no test meets another model's entries.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import threading
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


def scan_installed_components_once() -> None:
    """Let every AppTest of the process share one scan of the installed packages for Streamlit components.

    Each new ``AppTest`` (Streamlit 1.67, ``AppTest._run``) builds its own component manager, which calls
    ``streamlit.components.v2.manifest_scanner.scan_component_manifests()``: it reads the metadata of every installed
    distribution (about 150 here), 0.14 s on a quiet machine and more under load, before the page runs at all, so the
    page tests paid it once per AppTest (hundreds per worker). The packages installed do not change during a test
    run: the first call scans for real and later calls get a copy of its result (the app has no v2 component, and
    if one were installed it would be registered the same). A real server (the browser tests) is not touched."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "scans_once", False):
        return
    found: list = []
    lock = threading.Lock()

    def scan_once(max_workers: int | None = None):
        with lock:
            if not found:
                found.append(scan(max_workers))
            return list(found[0])

    scan_once.scans_once = True
    scan_once.scan = scan  # the real scan (tests/test_lesson_model.py compares the two)
    manifest_scanner.scan_component_manifests = scan_once


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(config, items):
    """A test that compares with live PyTorch (``@pytest.mark.torch``) is also ``slow``: importing torch takes
    seconds, so the fast tier (``-m "not e2e and not slow"``) never pays it."""
    for item in items:
        if item.get_closest_marker("torch") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
        parts = Path(str(item.path)).resolve().parts
        if parts[:len(TESTS.parts) + 1] == (*TESTS.parts, "lessons") and len(parts) > len(TESTS.parts) + 2 \
                and parts[len(TESTS.parts) + 1] in SMOLLM2_LESSON_DIRS:
            item.add_marker(pytest.mark.smollm2)


# --- the lessons' model in tests: a tiny SmolLM2 by default, the real file on request (module docstring) ----------

TESTS = Path(__file__).resolve().parent
DOOR = "explorer.shell.llm"
"""The lessons' one door to the model: the module whose ``load_model`` and ``missing_weights`` are served here."""
SMOLLM2_LESSON_DIRS: tuple[str, ...] = ()
"""Lessons whose own tests (``tests/lessons/<name>/``) still assert SmolLM2's numbers through their pages: every test
in their folder runs on the real file. Empty: the five real-model lessons' page tests run on the tiny model; their
SmolLM2 facts are model-level tests (each lesson's ``test_model.py``) and at most one page run marked ``smollm2``."""
TINY, SMOLLM2 = "tiny", "smollm2"
FAMILIES = ("qwen2", "qwen3", "gpt2", "gemma3", "llama3")
"""Other kinds the door can serve a test (``@pytest.mark.lesson_model("gpt2")``): a tiny random model of that family,
written by :func:`tests.core.llama_support.write_tiny_gguf` with the family's fixture config and vocabulary (the
same files the core's parity tests check against transformers)."""


def family_file(kind: str, path: Path) -> Path:
    """Write the tiny model of family ``kind`` (one of :data:`FAMILIES`) at ``path``; returns ``path``."""
    from tests.core import llama_support as s

    config, vocabulary = {"qwen2": (s.TINY_QWEN2, s.qwen_vocabulary), "qwen3": (s.TINY_QWEN3, s.qwen_vocabulary),
                          "gpt2": (s.TINY_GPT2, s.gpt2_vocabulary),
                          "gemma3": (s.TINY_GEMMA3, s.sentencepiece_vocabulary),
                          "llama3": (s.TINY_LLAMA3, s.llama3_vocabulary)}[kind]
    s.write_tiny_gguf(path, config=config, vocabulary=vocabulary(), seed=3, name=f"tiny-{kind}")
    return path


@pytest.fixture
def gemma3_and_qwen2(tmp_path, monkeypatch) -> dict[str, str]:
    """A server listing a tiny gemma3 (6 layers, 4 query heads, 2 key/value heads) and a tiny qwen2 (2 layers, 4 and 2
    heads) besides the built-in model (30 layers, 9 and 3 heads): ``{name: id}`` of its catalogue."""
    from explorer.shell import models

    family_file("gemma3", tmp_path / "tiny-gemma3.gguf")
    family_file("qwen2", tmp_path / "tiny-qwen2.gguf")
    monkeypatch.setenv(models.MODELS_ENV, str(tmp_path))
    monkeypatch.delenv(models.LOCAL_ENV, raising=False)
    return {e.name: e.id for e in models.catalogue()}


def pytest_addoption(parser):
    parser.addoption("--lesson-model", choices=(TINY, SMOLLM2), default=TINY,
                     help="the model the lessons' door serves to tests not marked smollm2: the tiny SmolLM2 "
                          "(default) or the real file (tests/conftest.py)")


class LessonModel:
    """What the door (:data:`DOOR`) serves during the running test: the tiny SmolLM2, a tiny model of another family
    (:data:`FAMILIES`) or the shipped door.

    :meth:`install` replaces the door's ``load_model`` and ``missing_weights`` for the session with dispatchers;
    :meth:`use` picks the model before each test's fixtures are set up (a module-scoped fixture that runs the
    app runs it on its test's model). The tiny file is written on first use into a temporary folder removed at
    the end of the session; the tiny model is loaded once per weights mode.
    """

    def __init__(self):
        self.kind = TINY
        self.served: str | None = None  # the model the Streamlit caches hold results of
        self.door = None
        self._original: dict[str, object] = {}
        self._dir: Path | None = None
        self._models: dict[str, object] = {}
        self._lock = threading.Lock()

    def install(self) -> None:
        if self.door is not None:
            return
        self.door = importlib.import_module(DOOR)
        self._original = {"load_model": self.door.load_model, "missing_weights": self.door.missing_weights}
        self.door.load_model, self.door.missing_weights = self.load_model, self.missing_weights

    def uninstall(self) -> None:
        if self.door is not None:
            for name, value in self._original.items():
                setattr(self.door, name, value)
            self.door = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def use(self, kind: str) -> None:
        """Serve ``kind`` from now on; if the caches hold the other model's results, empty every cache first."""
        if self.served not in (None, kind):
            import streamlit as st

            st.cache_data.clear()
            st.cache_resource.clear()
            self.served = None
        self.kind = kind

    def tiny_path(self, kind: str = TINY) -> Path:
        """The tiny SmolLM2 file, or the tiny model of a family of :data:`FAMILIES` (each written once per session)."""
        with self._lock:
            if self._dir is None:
                self._dir = Path(tempfile.mkdtemp(prefix="tiny-smollm2-"))
            path = self._dir / ("tiny-smollm2.gguf" if kind == TINY else f"tiny-{kind}.gguf")
            if not path.is_file():
                if kind == TINY:
                    from tests.core.llama_support import write_tiny_smollm2

                    write_tiny_smollm2(path)
                else:
                    family_file(kind, path)
            return path

    def tiny_model(self, weights: str = "float32", kind: str = TINY):
        """A tiny model (:meth:`tiny_path`) loaded by the app's loader (no SHA-256 pin: it is not the real file)."""
        from attention import llama

        path = self.tiny_path(kind)
        with self._lock:
            if (kind, weights) not in self._models:
                self._models[kind, weights] = llama.load(path, weights=weights, expected_sha256=None)
            return self._models[kind, weights]

    def load_model(self, weights: str, path: str | None = None):
        """The door's ``load_model(weights, path=None)``: the built-in (``path`` ``None``) is the test's model; a file
        of the server's catalogue (a test that lists tiny files with ``$ATTENTION_MODELS``) is loaded by the shipped
        door, as in the app."""
        if path is not None:
            return self._original["load_model"](weights, path)
        if self.kind == SMOLLM2:
            self.served = SMOLLM2
            return self._original["load_model"](weights)
        self.served = self.kind
        return self.tiny_model(weights, self.kind)

    def missing_weights(self) -> str | None:
        return self._original["missing_weights"]() if self.kind == SMOLLM2 else None


LESSON_MODEL = LessonModel()


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures are set up
def pytest_runtest_setup(item):
    if "streamlit.testing.v1" in sys.modules:
        scan_installed_components_once()
    LESSON_MODEL.install()
    real = item.get_closest_marker(SMOLLM2) or item.config.getoption("--lesson-model") == SMOLLM2
    family = item.get_closest_marker("lesson_model")
    if family is not None and family.args[0] not in FAMILIES:
        pytest.fail(f"lesson_model: one of {FAMILIES}, got {family.args[0]!r}", pytrace=False)
    LESSON_MODEL.use(SMOLLM2 if real else TINY if family is None else family.args[0])


def pytest_sessionfinish(session):
    LESSON_MODEL.uninstall()


@pytest.fixture(scope="session")
def tiny_smollm2() -> Path:
    """The path of the tiny SmolLM2 file the door serves (:class:`LessonModel`)."""
    return LESSON_MODEL.tiny_path()



@pytest.fixture
def door_model():
    """The model the lessons' door serves to the running test, in float32 (the pages' default): the tiny SmolLM2,
    or the real file under ``@pytest.mark.smollm2`` / ``--lesson-model=smollm2``. A page test recomputes what the
    page shows from this model and the core, so it holds on either model."""
    LESSON_MODEL.install()
    return LESSON_MODEL.load_model("float32")


@pytest.fixture
def passes(monkeypatch, door_model) -> list[int]:
    """The door's forward passes (``explorer.shell.llm.forward``) during the test, in order, as their token counts
    (every Streamlit cache emptied first): what a page computed (issue 47, item 2: sections on demand)."""
    import streamlit as st

    from explorer.shell import llm

    st.cache_data.clear()
    st.cache_resource.clear()
    seen: list[int] = []
    real = llm.forward

    def spy(model, ids, *args, **kwargs):
        seen.append(len(ids))
        return real(model, ids, *args, **kwargs)

    monkeypatch.setattr(llm, "forward", spy)
    return seen
