"""The shared sidebar: the controls every lesson shares, the language, the "not used here" notes, and fragments.

The shared controls are drawn once, in the entrypoint's sidebar, from their declarations (:data:`SHARED`,
:mod:`explorer.shell.controls.declare`), and bound to the link, so they keep their values across pages and a
copied link reproduces what the sender saw. Pages read them with :func:`shared` / :func:`lesson_settings`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from explorer.shell import cache, i18n
from explorer.shell import settings as shared_settings
from explorer.shell.cache import cached
from explorer.shell.charts import COLOR_SCALES
from explorer.shell.controls.declare import _DRAWN_KEY, NumberInput, Options, Slider, Text, Toggle, declare, draw
from explorer.shell.controls.link_values import (
    _SHOWN_KEY,
    _snapshot_link,
    check_link,
    link_value,
    one_of,
    refuse_unusable,
    set_value,
    show_link_warnings,
)
from explorer.shell.i18n import N_
from explorer.shell.settings import Settings

_, _n = i18n.translator(__name__)

SEED_MAX = 2**31 - 1
SENTENCE_MAX_CHARS = 1000
COLOR_SCALE_DEFAULT = "fixed"  # the first of COLOR_SCALES: the radio's default
SENTENCE_TWINS = {"pt": "O gato sentou no tapete", "tr": "Kedi paspasın üzerine oturdu"}
"""The lesson's sentence in the learner's language, one click away (the default stays the lesson's English
sentence, whose numbers are the lesson's)."""

SHARED = declare(
    __name__,
    sentence=Text(key="sentence", label=N_("Sentence"), default="The cat sat on the mat", max_chars=SENTENCE_MAX_CHARS,
                  help=N_("Split into words and punctuation; at most {n} tokens are used."),
                  example={"n": shared_settings.MAX_TOKENS}),
    embedding=Options(
        key="embedding", label=N_("Embeddings"), default="auto",
        options={"auto": N_("auto"), "lesson": N_("lesson"), "per-token": N_("per-token")},
        captions=[N_("per word for your sentence; the lesson's rows for the lesson's sentence"),
                  N_("random rows, as in the lesson"), N_("one vector per word")],
        help=N_("auto: per-token for a sentence you type, lesson for the lesson's 'The cat sat on the mat'. "
                "lesson: X = default_rng(seed).normal(0, 1, (n, d_model)), one random row per position "
                "(the lesson's example; a row belongs to its position, not its word). per-token: each distinct "
                "word gets its own fixed vector, so the same word has the same embedding in every sentence.")),
    positional=Toggle(key="positional", label=N_("Add sinusoidal positional encoding"), default=False,
                      help=N_("X + PE with PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(…) "
                              "(Vaswani et al. 2017, §3.5).")),
    seed=NumberInput(key="seed", label=N_("Seed"), lo=0, hi=SEED_MAX, default=42,
                     help=N_("Seeds the embeddings and the weight matrices W_q, W_k, W_v. As in the lesson, the "
                             "'lesson' embeddings and the weights each start their own default_rng(seed), so with "
                             "the same seed W_q repeats the first numbers of X, scaled.")),
    d_model=NumberInput(key="d_model", label=N_("d_model (embedding width)"), lo=1, hi=512, default=8,
                        help=N_("Width of each token's embedding row in X.")),
    d_k=Slider(key="d_k", label=N_("d_k (query/key width, d_v = d_k)"), lo=1, hi=128, default=4,
               help=N_("Width of the queries and keys; the scores are divided by √d_k.")),
    color_scale=Options(
        key="color_scale", label=N_("Colour scale of attention weights"),
        options={"fixed": N_("fixed"), "map": N_("map"), "row": N_("row")}, default=COLOR_SCALE_DEFAULT,
        captions=list(COLOR_SCALES.values()), horizontal=False,
        help=N_("fixed compares maps with each other; map and row make near-uniform attention (many tokens) "
                "visible. The colour bar marks the uniform level 1/n (every key weighted equally), an orange outline "
                "marks each row's largest weight, and hovering a cell always shows the true weight.")),
)
"""The sidebar's shared controls, in their order (each lesson that does not use one says so: :func:`not_used`)."""
DEFAULTS = {name: control.default for name, control in SHARED.items() if name != "color_scale"}
"""The defaults of the shared controls a lesson's settings read (:class:`Shared`: all but the colour scale)."""

_PAGE_KEY = "_shown_page"  # the URL path of the page the session's last run showed
_SLOTS_KEY = "_sidebar_note_slots"  # {shared control: st.empty() under it in the sidebar}, drawn on every run
_NOT_USED_KEY = "_not_used"  # {shared control: why this page does not use it}, set by not_used on this run


@dataclass(frozen=True)
class Shared:
    """The raw values of the shared controls for this run (the sentence untokenized: lessons that work on the
    sentence use :func:`lesson_settings` instead, which tokenizes it)."""

    sentence: str
    embedding: str
    positional: bool
    seed: int
    d_model: int
    d_k: int


def _show_kept_values_after_a_page_change(page: str | None) -> None:
    """After a page change, make the browser show (and link) the shared controls' values the server kept.

    Measured (issue 30): opened with ``/?seed=9`` and a page link clicked before that first run ended, the next page
    used seed 9 (the server kept the widget's state) while its Seed box showed 42 and its address had no ``seed=9``,
    and a copied link opened at 42. So on a new page's first run, a shared control whose kept value is not its
    default and is missing from the link is given that value again, which the browser shows and the link holds.
    """
    ss = st.session_state
    moved = ss.get(_PAGE_KEY) not in (None, page)
    ss[_PAGE_KEY] = page
    if not moved:
        return
    for key, control in SHARED.items():
        if key in ss and key not in st.query_params and ss[key] != control.default:
            if isinstance(control, Options):
                ss[key] = ss[key]  # drawn without a default of its own
            else:
                set_value(key, ss[key])  # the widget leaves its default out on that run


def not_used(notes: dict[str, str]) -> None:
    """Say, under each shared control in ``notes`` (a key of :data:`SHARED` -> why), that this lesson does not use it.

    For a lesson that has its own version of a shared control (the scaling lesson's own ``d_k``) or no use for it
    (the lookup's fixed table), so moving the control and seeing nothing change is never a surprise (issue 18, item
    5). The notes also go to ``st.session_state["_not_used"]`` (what tests read); a page run alone (no entrypoint's
    sidebar) shows them at the bottom of the sidebar.

    Raises:
        ValueError: a key that is no shared control.
    """
    unknown = set(notes) - set(SHARED)
    if unknown:
        raise ValueError(f"not shared controls: {sorted(unknown)}; shared: {', '.join(SHARED)}")
    slots = st.session_state.get(_SLOTS_KEY, {})
    st.session_state[_NOT_USED_KEY] = dict(notes)
    for key, why in notes.items():
        slot = slots.get(key)
        (st.sidebar if slot is None else slot).caption(_("↳ Not used on this page: {why}").format(why=why))


def you_need(page_file: str) -> None:
    """Under a lesson's title: the earlier lessons it builds on (its ``Lesson.needs``), each a link that opens that
    lesson as the sidebar's own links do (``st.page_link``: the session keeps the language and the shared controls).
    ``page_file``: the page's ``__file__`` (its folder names the lesson). Draws nothing for a lesson without needs.

    Raises:
        KeyError: a page that is no lesson of the navigation.
    """
    from explorer.lessons import lesson  # the navigation's table (no Streamlit)

    needs = [lesson(name) for name in lesson(Path(page_file).parent.name).needs]
    if needs:
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.caption(_("Builds on:"), width="content")
            for entry in needs:
                st.page_link(entry.page, label=_(entry.title), icon=entry.icon)


_LANG_WIDGET = "_lang_choice"  # the language selectbox (its link parameter is written by this module: see below)


def language_control() -> str:
    """The sidebar's language control (entrypoint only, before the navigation): returns and activates the run's
    language (:mod:`explorer.shell.i18n`).

    In the link as ``?lang=en|pt|tr``; without it, the browser's language (``st.context.locale``) picks, English
    otherwise. Its label names itself in the three languages, so a learner finds it whatever the page's language. Not
    bound (a bound selectbox would write the shown name into the link): the code is written to the link on every run
    once chosen or linked.
    """
    _snapshot_link(page_known=False)  # before the navigation a rerun would open the default page
    ss = st.session_state
    codes = list(i18n.LANGUAGES)
    if _LANG_WIDGET not in ss:  # the session's first run: the link's language, else the browser's
        raw = st.query_params.get_all(i18n.KEY)
        linked = raw[0] if len(raw) == 1 and raw[0] in i18n.LANGUAGES else None
        ss[_LANG_WIDGET] = linked or i18n.from_locale(getattr(st.context, "locale", None))
        ss["_lang_in_link"] = linked is not None
        if raw and linked is None:  # a value the app cannot use leaves the link (check_link below says so)
            del st.query_params[i18n.KEY]
    lang = st.sidebar.selectbox("🌐 Language · Idioma · Dil", codes, key=_LANG_WIDGET,
                                format_func=i18n.LANGUAGES.__getitem__, on_change=_language_chosen)
    i18n.activate(lang)
    check_link(i18n.KEY, lang, one_of(codes))
    if ss.get("_lang_in_link") and st.query_params.get(i18n.KEY) != lang:
        st.query_params[i18n.KEY] = lang
    return lang


def fragment(func: Callable) -> Callable:
    """``st.fragment``, in the language of the run that drew the part: use it for every fragment of the app.

    A fragment's rerun runs ``func`` alone, where the language the entrypoint chose (a context variable) is back at
    English: after a click, parts were drawn in English on a Portuguese or Turkish page (issue 30). So the full run's
    language goes to the fragment as its first argument (Streamlit keeps a fragment's arguments for its reruns) and
    is activated before ``func`` runs. The fragment keeps ``func``'s name, so its id is the one ``st.fragment`` gives
    ``func``.
    """
    @st.fragment
    @functools.wraps(func)
    def in_language(lang: str, *args, **kwargs):
        i18n.activate(lang)
        return func(*args, **kwargs)

    @functools.wraps(func)
    def call(*args, **kwargs):
        return in_language(i18n.current(), *args, **kwargs)
    return call


def _language_chosen() -> None:
    """The learner chose a language: from now on it is in the link."""
    st.session_state["_lang_in_link"] = True


def sidebar_controls(page: str | None = None) -> Shared:
    """Draw the shared controls in the sidebar (entrypoint only) and return their values.

    ``page``: the URL path of the page this run shows (``st.navigation``'s page), to know a page change.
    """
    cache.note_activity()  # every run passes here: the idle sweep (explorer.shell.cache) waits for a quiet server
    _snapshot_link()
    _show_kept_values_after_a_page_change(page)
    st.session_state.update({_SHOWN_KEY: set(), _SLOTS_KEY: {}, _NOT_USED_KEY: {}, _DRAWN_KEY: {}})  # this run's
    # The link's values first: every value a control cannot use is removed from the link (and the run starts
    # again) before any of the sidebar's widgets is seeded from it, so one bad link costs one extra run, not three.
    refuse_unusable({c.key: c.usable(c.example) for c in SHARED.values() if not isinstance(c, Options)})
    sb = st.sidebar
    sb.header(_("Shared controls"))
    twin = SENTENCE_TWINS.get(i18n.current())
    for name, control in SHARED.items():
        value = draw(control, control.example, container=sb)
        if name == "sentence" and twin and value != twin:  # the lesson's sentence in the run's language, one click away
            sb.button(_("↳ Try it in Portuguese: {sentence}").format(sentence=twin) if i18n.current() == "pt"
                      else _("↳ Try it in Turkish: {sentence}").format(sentence=twin),
                      key="sentence_twin", type="tertiary", on_click=set_value, args=("sentence", twin),
                      help=_("The lesson's own numbers are for its English sentence; any sentence works."))
        st.session_state[_SLOTS_KEY][name] = sb.empty()  # filled by not_used, when the page does not use it
    sb.caption(_("Every control is in the page's link: copy the address bar to share exactly what you see."))
    return shared()


def color_scale() -> str:
    """The sidebar's colour scale for attention-weight maps, one of :data:`~explorer.shell.charts.COLOR_SCALES` (for
    :func:`explorer.shell.charts.heatmap`; pages pass it to their sections, so it is part of the cache key)."""
    value = st.session_state.get("color_scale")
    return value if value in COLOR_SCALES else COLOR_SCALE_DEFAULT


def lesson_settings(purpose: str | None = None) -> Settings:
    """The shared settings for a lesson on the sidebar's sentence. An empty sentence shows a prompt (ending with
    ``purpose``, an infinitive clause in the run's language; default ``_("to see attention at work")``) and the link's
    warnings, then stops the page; more than ``MAX_TOKENS`` tokens are truncated with a note."""
    sh = shared()
    inp = shared_settings.sentence_tokens(sh.sentence)
    if not inp.tokens:
        st.info(_("✍️ Type a sentence in the sidebar (for example *The cat sat on the mat*) {purpose}.").format(
            purpose=purpose or _("to see attention at work")))
        show_link_warnings()  # st.stop() ends the run before the entrypoint would show them
        st.stop()
    if inp.n_dropped:
        st.info(_("Your sentence has {n} tokens; the first {kept} are used ({dropped} dropped) to keep the pictures "
                  "readable.").format(n=len(inp.tokens) + inp.n_dropped, kept=shared_settings.MAX_TOKENS,
                                      dropped=inp.n_dropped))
    embedding = shared_settings.embedding_mode(sh.embedding, inp.tokens)  # "auto" resolved for this sentence
    return Settings(inp.tokens, int(sh.d_model), int(sh.d_k), int(sh.seed), embedding, bool(sh.positional))


def shared() -> Shared:
    """The shared controls' current values (for pages; the entrypoint draws the widgets)."""
    ss = st.session_state
    return Shared(**{k: ss.get(k, v) for k, v in DEFAULTS.items()})


@cached(max_entries=32)  # up to 0.6 MiB an entry (64 tokens, d_model 512, d_k 128)
def sentence_steps(settings: Settings, is_causal: bool = False):
    """:meth:`Settings.steps`, cached per process (shared by every lesson on the sentence)."""
    return settings.steps(is_causal=is_causal)


MODEL_KEY = "model"
"""The link's parameter of the model the real-model lessons run (an id of the server's catalogue)."""
MODEL_WIDGET = "_model_choice"  # the picker's widget (not bound: see model_control)
MODEL_IDS_SHOWN = 6  # ids a warning about a link's unknown model lists (a learner's Ollama may hold dozens)
MODEL_REVERT = "_model_revert"  # set by the door when the chosen file was refused: the id the picker goes back to


def model_ids(ids: Sequence[str]) -> str:
    """Model ids as a link's warning lists them: the first :data:`MODEL_IDS_SHOWN`, then ``…``
    (``"tiny-qwen2-0123abcd, …"``)."""
    return ", ".join(ids[:MODEL_IDS_SHOWN]) + (", …" if len(ids) > MODEL_IDS_SHOWN else "")


def model_control(options: Mapping[str, str], default: str, unreadable: Collection[str] = ()) -> str:
    """The sidebar's "Model" select (entrypoint only): the model every real-model lesson runs; returns its id.

    ``options``: ``{id: label}`` in the picker's order (the server's catalogue, :func:`explorer.shell.llm.catalogue`);
    ``default``: the built-in's id; ``unreadable``: ids of files this app cannot read (never offered as examples).
    Drawn on every page (so the choice holds across pages and in every page's link),
    and only when the server has more than one model. The link carries the id as ``model=<id>`` (left out for the
    default); a link's id the server does not list is warned about (:func:`check_link`, naming it) and the default
    opens. Not a bound widget like the declared controls: a bound select writes its shown label into the link, and
    the label (name, architecture, size) is not the id; so, as :func:`language_control` does, the value is read from
    the link's snapshot on the session's first run and written to the link on every run.
    """
    ss = st.session_state
    given = link_value(MODEL_KEY)
    if MODEL_REVERT in ss:  # the door refused the chosen file: back to the model shown before
        ss[MODEL_WIDGET] = ss.pop(MODEL_REVERT)
    elif ss.get(MODEL_WIDGET) not in options:  # the session's first run (or the model left the catalogue)
        ss[MODEL_WIDGET] = given if given in options else default
    if len(options) > 1:
        from explorer.lessons import model_lessons  # the navigation's table (no Streamlit)

        lessons = ", ".join(f"\"{_(entry.title)}\"" for entry in model_lessons())
        st.sidebar.header(_("Real model"))
        st.sidebar.selectbox(
            _("Model the real-model lessons run"), list(options), key=MODEL_WIDGET, format_func=options.__getitem__,
            help=_("The lessons {lessons} read this model's own attention. The server's operator lists the GGUF "
                   "files it may load; the link keeps the choice.").format(lessons=lessons))
    chosen = ss[MODEL_WIDGET]
    listed = model_ids([i for i in options if i not in unreadable])  # the warning's examples: models a link may open
    check_link(MODEL_KEY, chosen, _("the id of a model this server lists ({ids})").format(ids=listed), inline=False)
    if chosen != default:
        st.query_params[MODEL_KEY] = chosen
    elif MODEL_KEY in st.query_params:
        del st.query_params[MODEL_KEY]
    return chosen
