"""Shared controls (the sidebar), link (query-parameter) checks, and the widgets every lesson repeats.

The shared controls are drawn once, in the entrypoint's sidebar, and bound to
query parameters (``bind="query-params"``), so they keep their values across
pages and a copied link reproduces what the sender saw. Streamlit silently
drops a link value it cannot use (``?seed=abc``) and falls back to the default;
:func:`check_link` turns that into a visible warning.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from explorer.shell import settings as shared_settings
from explorer.shell.cache import cached
from explorer.shell.settings import Settings

DEFAULTS = {
    "sentence": "The cat sat on the mat",
    "embedding": "lesson",
    "positional": False,
    "seed": 42,
    "d_model": 8,
    "d_k": 4,
}
SEED_MAX = 2**31 - 1
D_MODEL_RANGE = (1, 512)
D_K_RANGE = (1, 128)
SENTENCE_MAX_CHARS = 1000
EMBEDDING_LABELS = {  # option (also its value in the link) -> caption
    "lesson": "random rows, as in the lesson",
    "per-token": "one vector per word",
}

_LINK_KEY = "_link_params"  # raw query parameters of the session's first run
_WARN_KEY = "_link_warnings"  # every link warning of the session, until dismissed
_SHOWN_KEY = "_link_warnings_shown"  # those shown inline on this run


@dataclass(frozen=True)
class Shared:
    """The raw values of the shared controls for this run (the sentence untokenized; ``d_v = d_k``).

    Lessons that work on the sentence use :func:`lesson_settings` instead, which tokenizes it.
    """

    sentence: str
    embedding: str
    positional: bool
    seed: int
    d_model: int
    d_k: int

    @property
    def d_v(self) -> int:
        return self.d_k


def _snapshot_link() -> None:
    """Keep the raw query parameters of the session's first run (before widgets clean them)."""
    if _LINK_KEY not in st.session_state:
        st.session_state[_LINK_KEY] = {k: st.query_params.get_all(k) for k in st.query_params}
        st.session_state[_WARN_KEY] = []


def _canonical(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def link_value(key: str) -> str | None:
    """The raw value the session's link gave for ``key`` (the last one if repeated), or ``None``.

    Read from the snapshot of the session's first run, so it survives the widgets cleaning
    the address bar; a page run without the entrypoint takes the snapshot here. It does not
    consume the value: :func:`check_link` still warns about it.
    """
    _snapshot_link()
    raw = st.session_state[_LINK_KEY].get(key)
    return raw[-1] if raw else None


def check_link(key: str, value, expected: str) -> None:
    """Warn once if the link's raw value for ``key`` did not become the widget's value as given.

    Call right after the bound widget with its returned ``value``; ``expected``
    says what a valid value looks like (``"a whole number from 1 to 128"``). The
    warning shows right there on this run (next to the control; the sidebar's
    controls put it on top of the page) and, until dismissed, above every page
    on later runs (:func:`show_link_warnings`).
    """
    link = st.session_state.get(_LINK_KEY, {})
    raw = link.pop(key, None)
    if not raw:
        return
    given = raw[-1]
    if given == _canonical(value) or (isinstance(value, bool) and given.strip().lower() == _canonical(value)):
        return
    shown = given if len(given) <= 40 else given[:40] + "…"
    message = (f"The link's `{key}={shown}` is not valid ({key} must be {expected}); "
               f"using `{key}={_canonical(value)}`.")
    st.session_state.setdefault(_WARN_KEY, []).append(message)
    st.session_state.setdefault(_SHOWN_KEY, []).append(message)
    st.warning(message, icon="⚠️")


def show_link_warnings() -> None:
    """Above the page, the session's link warnings from earlier runs, with a Dismiss button.

    The entrypoint calls it after the page ran; nothing is shown on a run that
    already showed warnings inline (the run that read the link).
    """
    shown = st.session_state.pop(_SHOWN_KEY, [])
    warnings = st.session_state.get(_WARN_KEY, [])
    if not warnings or shown:
        return
    st.warning("**The link you opened had values the app cannot use.**\n\n"
               + "\n\n".join(f"- {w}" for w in warnings), icon="⚠️")
    if st.button("Dismiss", key="link_warnings_dismiss"):
        st.session_state[_WARN_KEY] = []
        st.rerun()


def sidebar_controls() -> Shared:
    """Draw the shared controls in the sidebar (entrypoint only) and return their values."""
    _snapshot_link()
    st.session_state[_SHOWN_KEY] = []
    sb = st.sidebar
    sb.header("Shared controls")
    sentence = sb.text_input(
        "Sentence", DEFAULTS["sentence"], key="sentence", bind="query-params", max_chars=SENTENCE_MAX_CHARS,
        help=f"Split into words and punctuation; at most {shared_settings.MAX_TOKENS} tokens are used.",
    )
    check_link("sentence", sentence, f"text of at most {SENTENCE_MAX_CHARS} characters")
    embedding = sb.radio(
        "Embeddings", list(EMBEDDING_LABELS), key="embedding", bind="query-params",
        captions=list(EMBEDDING_LABELS.values()),
        help="lesson: X = default_rng(seed).normal(0, 1, (n, d_model)), one random row per position "
             "(the lesson's example). per-token: each distinct word gets its own fixed vector, "
             "so the same word has the same embedding in every sentence.",
    )
    check_link("embedding", embedding, "one of " + ", ".join(EMBEDDING_LABELS))
    positional = sb.toggle("Add sinusoidal positional encoding", DEFAULTS["positional"], key="positional",
                           bind="query-params", help="X + PE with PE[p, 2i] = sin(p / 10000^(2i/d_model)), "
                                                     "PE[p, 2i+1] = cos(…) (Vaswani et al. 2017, §3.5).")
    check_link("positional", positional, "true or false")
    seed = sb.number_input("Seed", 0, SEED_MAX, DEFAULTS["seed"], step=1, key="seed", bind="query-params",
                           help="Seeds the embeddings and the weight matrices W_q, W_k, W_v. As in the lesson, "
                                "the 'lesson' embeddings and the weights each start their own default_rng(seed), "
                                "so with the same seed W_q repeats the first numbers of X, scaled.")
    check_link("seed", seed, f"a whole number from 0 to {SEED_MAX}")
    d_model = sb.number_input("d_model (embedding width)", *D_MODEL_RANGE, DEFAULTS["d_model"], step=1,
                              key="d_model", bind="query-params", help="Width of each token's embedding row in X.")
    check_link("d_model", d_model, f"a whole number from {D_MODEL_RANGE[0]} to {D_MODEL_RANGE[1]}")
    d_k = sb.slider("d_k (query/key width, d_v = d_k)", *D_K_RANGE, DEFAULTS["d_k"], key="d_k", bind="query-params",
                    help="Width of the queries and keys; the scores are divided by √d_k.")
    check_link("d_k", d_k, f"a whole number from {D_K_RANGE[0]} to {D_K_RANGE[1]}")
    sb.caption("Every control is in the page's link: copy the address bar to share exactly what you see.")
    return Shared(sentence, embedding, bool(positional), int(seed), int(d_model), int(d_k))


def lesson_settings(purpose: str = "to see attention at work") -> Settings:
    """The shared settings for a lesson on the sidebar's sentence, with the app's two friendly notes.

    An empty sentence shows a prompt (ending with ``purpose``) and the link's warnings, then stops the page;
    more than ``MAX_TOKENS`` tokens are truncated with a note.
    """
    sh = shared()
    inp = sentence_input(purpose)
    return Settings(inp.tokens, int(sh.d_model), int(sh.d_k), int(sh.seed), sh.embedding, bool(sh.positional))


def sentence_input(purpose: str = "to see attention at work") -> shared_settings.SentenceInput:
    """The sidebar sentence's tokens, with :func:`lesson_settings`' notes (an empty sentence stops the page)."""
    inp = shared_settings.sentence_tokens(shared().sentence)
    if not inp.tokens:
        st.info(f"✍️ Type a sentence in the sidebar (for example *The cat sat on the mat*) {purpose}.")
        show_link_warnings()  # st.stop() ends the run before the entrypoint would show them
        st.stop()
    if inp.n_dropped:
        st.info(f"Your sentence has {len(inp.tokens) + inp.n_dropped} tokens; the first "
                f"{shared_settings.MAX_TOKENS} are used ({inp.n_dropped} dropped) to keep the pictures readable.")
    return inp


def shared() -> Shared:
    """The shared controls' current values (for pages; the entrypoint draws the widgets)."""
    ss = st.session_state
    return Shared(**{k: ss.get(k, v) for k, v in DEFAULTS.items()})



def keep_in_range(key: str, lo: int, hi: int) -> None:
    """Clamp a widget's stored value into ``[lo, hi]`` before it is drawn (a shorter sentence, fewer heads…)."""
    value = st.session_state.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and not lo <= value <= hi:
        st.session_state[key] = min(max(value, lo), hi)


def token_picker(label: str, labels: list[str], key: str, *, default: int = 0, link: bool = True,
                 disabled: bool = False, help: str | None = None) -> int:
    """A select box of the sentence's tokens; returns the chosen position ``0 … len(labels) - 1``.

    The options are the labels themselves (:func:`explorer.shell.settings.token_label`,
    ``"cat (1)"``; unique, as they carry the position), so the box and the link always show a
    label of the current sentence. When the sentence changes, the chosen position is kept where
    it still exists, else the last token is chosen. With ``link`` the choice is in the page's
    link, as its label, and a link value that is not one of the labels is warned about
    (:func:`check_link`).
    """
    n = len(labels)
    last = f"_{key}_position"  # the position chosen on the last run (this helper's own key)
    current = st.session_state.get(key)
    if current is not None and current not in labels:  # a new sentence (or an invalid value)
        st.session_state[key] = labels[min(max(st.session_state.get(last, default), 0), n - 1)]
    # The default only matters on the first run; once the key holds a value pass index 0, or Streamlit
    # logs that a widget with a default also had its value set through Session State.
    index = 0 if key in st.session_state else min(max(default, 0), n - 1)
    choice = st.selectbox(label, labels, index=index, key=key, bind="query-params" if link else None,
                          disabled=disabled, help=help)
    pos = labels.index(choice) if choice in labels else 0
    st.session_state[last] = pos
    if link:
        check_link(key, labels[pos], "one of the sentence's tokens, as 'token (position)'")
    return pos


# Cached computations: bounded caches, pure functions underneath.
@cached(max_entries=64)
def sentence_steps(settings: Settings, is_causal: bool = False):
    """:meth:`Settings.steps`, cached per process (shared by every lesson on the sentence)."""
    return settings.steps(is_causal=is_causal)
