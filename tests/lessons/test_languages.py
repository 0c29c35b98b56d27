"""Every lesson in every language: one check over all lessons (issue 46, item 5), read from the manifests.

For each lesson and each state its manifest names (the defaults, its ``STATES``, its ``TEXT_STATES`` with their
buttons pressed, :data:`VISITOR_TEXT` in its free text boxes, and a bad link built from its declarations: an odd
value for every declared control in the link, the way ``tests/lessons/test_contract.py`` builds one), the page runs
once per language (``en``, ``pt``, ``tr``; the runs are cached here, so each page runs once, English first) and on
those runs:

- no English sentence is left in Portuguese or Turkish (:func:`tests.apptest_utils.english_left`, the sidebar
  included), in the formulas' ``\\text{…}`` either; what may stay is derived from the page, never listed per lesson:
  the visitor's own text (the text boxes' values, and sentences made only of their words, the token labels' and the
  model's tokens), the field's English terms a translation glosses in parentheses, Plotly's ``%{…}`` fields and a
  citation (its authors, "et al.", its year and the paper's title);
- every claim is rendered in each language: the same number of each kind of element (headings, notes, warnings,
  metrics, tables, formulas, charts), the same figures with the same numeric arrays, the same digits in every metric
  and table cell, every number of each English sentence in its translation, no whole number grouped the English
  way, and every figure writes the language's separators (``,.`` for pt and tr);
- the link keeps ``lang``, and no run shows an exception or "nan" (:func:`tests.apptest_utils.assert_clean`);
- a visitor's text is shown as text: every free text box gets markup, a formula and a format field in the state
  ``visitor-text``, and no word of it is written outside a code span (:func:`check_text_is_text`).

A lesson joins by having a manifest (``CONTROLS`` and ``STATES``, see ``docs/lessons.md``); its ``TEXT_STATES``
name the states whose text no other state shows, as a link and the buttons pressed in order (a state only a click
reaches: a trained run, a sweep, a measured model). What a page shows only after an edit or in a state no manifest
names, and the claims composed in ``model.py`` for every branch, are checked in the lesson's own ``test_model.py``,
``test_charts.py`` and ``test_page.py`` (``check_every_language(..., act=...)``).
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from explorer.lessons import LESSONS
from explorer.shell import controls, i18n, llm
from explorer.shell.controls import sidebar
from tests.apptest_utils import app_at, assert_clean, english_left, figure_array, figures, page_texts
from tests.lessons.test_contract import a_valid_value, odd_values

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
CHECKED = [e.name for e in LESSONS]
OTHER_LANGS = [lang for lang in i18n.LANGUAGES if lang != "en"]
KINDS = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success", "metric",
         "dataframe", "latex", "code", "expander", "tabs", "toggle", "checkbox", "radio", "selectbox",
         "slider", "select_slider", "number_input", "text_input", "text_area")
"""The elements of the main area counted in every language (the same claims drawn: the same number of each).
Buttons are left out: a page may offer a translated example sentence in a language other than English."""


def package(name: str):
    return importlib.import_module(f"explorer.lessons.{name}")


VISITOR_TEXT = ("<b>bold</b> **x** $y$ {answer} [a](./walkthrough) _it_ and then some more words, so that a window "
                "fits in it")
"""The text every free text box of a lesson gets in its state ``visitor-text``: markup, a formula, a format field
and a link, each of which must be shown as text in every language (:func:`check_text_is_text`)."""


def states(lesson: str) -> dict[str, tuple[dict[str, str], tuple[str, ...]]]:
    """``{name: (link, buttons)}``: the defaults, the manifest's ``STATES``, its ``TEXT_STATES`` (a link and the
    keys of the buttons pressed in order, for text no other state shows), :data:`VISITOR_TEXT` in every free text
    box the lesson declares, and a bad link (an odd value for every declared control in the link)."""
    manifest = package(lesson)
    out = {"defaults": ({}, ())}
    for n, state in enumerate(manifest.STATES, 1):
        out[f"state{n}"] = (dict(state), ())
    for name, (link, buttons) in getattr(manifest, "TEXT_STATES", {}).items():
        out[name] = (dict(link), tuple(buttons))
    boxes = [c.key for c in manifest.CONTROLS.values() if isinstance(c, controls.Text) and c.valid is None and c.linked]
    if boxes:
        out["visitor-text"] = ({key: VISITOR_TEXT for key in boxes}, ())
    declared = {c.key: c for c in manifest.CONTROLS.values() if c.linked}
    out["bad-link"] = ({k: str(v) for k, v in odd_values(list(declared), declared, offset=len(lesson)).items()}, ())
    return out


CASES = [(lesson, name) for lesson in CHECKED for name in states(lesson)]


PRESSED: dict[str, set[str]] = {}
"""The buttons pressed so far, by lesson (every button a state names is pressed in some run: see the last test)."""


@cache
def page(lesson: str, state: str, lang: str):
    """The page of ``lesson`` in ``state`` and ``lang`` (run once per module; ``en``: no ``lang`` in the link), the
    state's buttons pressed in order. A button the page does not show is skipped: a job the server already holds
    (the training lesson's runs are shared by every session of the process, so the English page trains and the
    other languages draw the same finished run: it runs first)."""
    if lang != "en":
        page(lesson, state, "en")
    link, buttons = states(lesson)[state]
    at = app_at(lesson, query={**link, **({"lang": lang} if lang != "en" else {})}, timeout=600, opened_by_link=True)
    return press(at, buttons, lesson)


def press(at, buttons: tuple[str, ...], lesson: str):
    """Click each of ``buttons`` (keys) the page shows, in order, on ``at``; returns ``at``."""
    for key in buttons:
        if any(b.key == key for b in at.main.button):
            assert_clean(at)
            at.button(key=key).click().run(timeout=600)
            PRESSED.setdefault(lesson, set()).add(key)
    return at


# --- what a page may keep in English, derived from the page -------------------------------------------------------

_FIELD = re.compile(r"%\{[^}]*\}")
_CITATION = re.compile(r"[A-Z][\w-]+(?: et al\.| & [A-Z][\w-]+)(?: \(\d{4}\))?(?:, “[^”]+”)?")
_WORD = re.compile(r"[^\W\d_]{2,}")
_TOKEN_LABEL = re.compile(r"(.+) \(\d+\)")
_PIECE = re.compile("[" + "".join(llm.VISIBLE.values()) + r"][^\s│|]+")


def visitor_words(at) -> set[str]:
    """The words of the visitor's own text and the tokens the page shows: every text box's value, the sidebar's
    example sentence, the token labels (``"cat (1)"``) of every option list and every chart's ticks, and the model's
    tokens written as it reads them (``␣cat``: a piece after a space or a new line, :func:`llm.visible_piece`), lower
    case."""
    texts = [str(el.value or "") for kind in ("text_input", "text_area") for el in getattr(at, kind)]
    texts.append(sidebar.DEFAULTS["sentence"])  # the example sentence, quoted when the box is empty
    labels = [str(getattr(o, "content", o)) for kind in ("selectbox", "radio", "multiselect", "select_slider")
              for el in getattr(at, kind) for o in getattr(el.proto, "options", [])]
    for fig in figures(at).values():
        for key, axis in fig.get("layout", {}).items():
            if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                labels += [str(t) for t in axis.get("ticktext") or []]
                labels += [str(t) for t in (axis.get("labelalias") or {}).values()]
        for trace in fig.get("data", []):
            labels += [str(t) for axis in ("x", "y") if isinstance(trace.get(axis), list) for t in trace[axis]]
    texts += [m.group(1) for label in labels if (m := _TOKEN_LABEL.fullmatch(label))]
    texts += [piece for t in page_texts(at, sidebar=True) for piece in _PIECE.findall(t)]  # the model's tokens
    return {w.lower() for t in texts for w in _WORD.findall(t)}


def allowed(at) -> tuple[str, ...]:
    """Plotly's hover fields (``%{customdata[1]}`` is no word of a sentence), citations ("Vaswani et al.", "Jain &
    Wallace (2019), “Attention is not Explanation”": the authors, the year, the paper's title) and the served model's
    name (:func:`explorer.shell.llm.model_name`: "tiny-smollm2-test" is a name, not a sentence)."""
    joined = "\n".join(page_texts(at, sidebar=True))
    served = llm.model_name(llm.load_model(llm.weights_mode()))
    return tuple(sorted(set(_FIELD.findall(joined)) | set(_CITATION.findall(joined)) | {served}))


_GLOSS = re.compile(r"\(([^()]+)\)")


def glosses(en, at) -> tuple[str, ...]:
    """The field's English terms a translation gives in parentheses after its own word on first mention
    (``cabeças de chave/valor (key/value heads)``: the glossary's rule): in parentheses on ``at``, never in
    parentheses on ``en`` (an English aside left untranslated is in parentheses on both)."""
    other, english = "\n".join(page_texts(at, sidebar=True)), "\n".join(page_texts(en, sidebar=True))
    asides = set(_GLOSS.findall(english))
    return tuple(sorted(g for g in set(_GLOSS.findall(other)) if g not in asides and g in english))


def formula_words(at) -> set[str]:
    """The words of the page's formulas (``\\text{…}`` bodies of two words or more)."""
    bodies = (b for x in at.main.latex for b in re.findall(r"\\text\{([^{}]*)\}", x.value))
    return {b for b in bodies if len([w for w in b.split() if _WORD.search(w)]) >= 2}


# --- the same claims and numbers -------------------------------------------------------------------------------


def counts(at) -> dict[str, int]:
    return {kind: len(getattr(at.main, kind)) for kind in KINDS}


def numbers(fig: dict) -> list[np.ndarray]:
    """A figure's numeric arrays: x, y, z of every trace that holds numbers (category labels are words)."""
    out = []
    for trace in fig.get("data", []):
        for axis in ("x", "y", "z"):
            values = trace.get(axis)
            if values is None:
                continue
            if isinstance(values, list) and any(isinstance(v, str) for v in np.ravel(np.array(values, object))):
                continue
            out.append(figure_array([np.nan if v is None else v for v in values] if isinstance(values, list)
                                    and not any(isinstance(v, list) for v in values) else values))
    return out


def digits(text) -> list[str]:
    """The runs of digits of a shown value: ``0.52``, ``0,52``; ``46,080``, ``46.080``; ``93.1%``, ``%93,1`` have the
    same."""
    return re.findall(r"\d+", str(text))


def as_number(value, lang: str) -> float | None:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    if lang != "en":
        text = text.replace(".", "").replace(",", ".") if re.fullmatch(r"-?[\d.]*,\d+", text) else text
    try:
        return float(text.replace("−", "-"))
    except ValueError:
        return None


def table_problems(en, at, lang: str) -> list[str]:
    """Cells of the same table that show different numbers in ``en`` and ``lang``."""
    out = []
    for n, (t_en, t) in enumerate(zip(en.dataframe, at.dataframe, strict=True)):
        frame_en, frame = t_en.value, t.value
        if frame.shape != frame_en.shape:
            out.append(f"table {n}: shape {frame.shape} != {frame_en.shape}")
            continue
        for (i, j), cell_en in np.ndenumerate(frame_en.to_numpy(dtype=object)):
            cell = frame.iat[i, j]
            a, b = as_number(cell_en, "en"), as_number(cell, lang)
            if a is not None and b is not None:  # to the digits shown (a float column is written out in pt, tr)
                shown = max(len(str(x).strip().replace(",", ".").partition(".")[2]) for x in (cell, cell_en)
                            if isinstance(x, str)) if isinstance(cell, str) or isinstance(cell_en, str) else 12
                if not np.isclose(a, b, rtol=0, atol=0.5 * 10.0 ** -min(shown, 12) + 1e-12, equal_nan=True):
                    out.append(f"table {n} [{i}, {j}]: {cell!r} != {cell_en!r}")
            elif digits(cell) != digits(cell_en):
                out.append(f"table {n} [{i}, {j}]: {cell!r} has other digits than {cell_en!r}")
    return out


# --- the checks ---------------------------------------------------------------------------------------------------


def test_every_lesson_is_checked_here_from_its_manifest():
    """Every lesson has a manifest and is checked here; none has a language file of its own (one home for the
    check)."""
    for lesson in CHECKED:
        manifest = package(lesson)
        assert hasattr(manifest, "CONTROLS") and hasattr(manifest, "STATES"), f"{lesson}: no manifest"
        assert not (HERE / lesson / "test_i18n.py").exists(), f"{lesson}: checked here, delete its test_i18n.py"
        for name, (link, buttons) in getattr(manifest, "TEXT_STATES", {}).items():
            assert isinstance(link, dict) and all(isinstance(k, str) for k in buttons), (lesson, name)


# --- the checks, on any run (a lesson's own tests call them for a state reached by a click or an edit) -----------

_NOT_NUMBERS = re.compile(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)|§[\d.]+"  # code, formulas, links, a paper's section
                          r"|(?:PyTorch|Python|NumPy|Streamlit|v)\s*[≥>=]*\s*\d+(?:\.\d+)+")  # and versions
_NOT_PROSE = re.compile(_NOT_NUMBERS.pattern + r"|(?<![\d.,])[1-9]\d{0,2}(?:\.\d{3})+(?!\d|\.\d)")
# and a whole number grouped by points (pt and tr group thousands with a point: 49.152 tokens; an English decimal
# with exactly three digits after a non-zero whole part, 1.234, cannot be told from it here: the lesson's numbers
# tests compare such values)
_LESSON_LINK = re.compile(r"\./[a-z][\w-]*(?:\?\S*)?")
PROSE = ("markdown", "caption", "info", "warning", "error", "success")


def check_run(at, lang: str, link: dict | None = None) -> None:
    """No exception or "nan", the link, the language control and every link to a lesson on the page hold ``lang``,
    a visitor's text is shown as text (the text boxes' and the values of ``link``, the link the page was opened
    with), every figure writes the language's separators."""
    assert_clean(at)
    assert at.query_params.get("lang", "en") == lang
    assert at.selectbox(key="_lang_choice").value == lang
    check_text_is_text(at, link)
    with i18n.using(lang):
        separators = i18n.plotly_separators()
    plain = {str(el.value) for el in at.text}  # (plain text and code spans show a visitor's "[a](./b)" as typed)
    links = [link for text in page_texts(at, sidebar=True) if text not in plain
             for link in re.findall(r"\]\((\./[^)\s]*)\)", _CODE.sub(" ", text))]
    links += [v for table in at.main.dataframe for v in np.ravel(table.value.to_numpy(dtype=object))
              if isinstance(v, str) and _LESSON_LINK.fullmatch(v)]  # a table's column of links
    assert all((f"lang={lang}" in link) == (lang != "en") for link in links), links  # a link to a lesson
    wrong = {k: f["layout"].get("separators") for k, f in figures(at).items()
             if f["layout"].get("separators", ".,") != separators}
    assert not wrong, f"figures without the separators {separators!r}: {wrong}"


_MARKUP = re.compile(r"[<>*$\[\]{}_`]")
_TAGS = re.compile(r"[<>*$\[\]{}]")
_CODE = re.compile(r"(`+).*?\1")


def check_text_is_text(at, link: dict | None = None) -> None:
    """A visitor's text is shown as text: no word of a text box's value that holds markup (``<b>``, ``**``, ``$``,
    ``[a](b)``, ``{field}``), nor a link's value that holds a tag (``?ca_heads=L99H1,<b>x</b>``: its warning quotes
    it), is written in a sentence outside a code span, nor raw in a chart's labels (Plotly reads HTML there)."""
    marked = {w for kind in ("text_input", "text_area") for el in getattr(at, kind) for w in str(el.value or "").split()
              if _MARKUP.search(w)}
    marked |= {w for value in (link or {}).values() for w in str(value).split(",") if _TAGS.search(w)}
    if not marked:
        return
    bare = [_CODE.sub(" ", str(el.value)) for kind in PROSE for el in getattr(at, kind)]
    shown = [(w, t) for t in bare for w in marked if w in t]
    assert not shown, f"a visitor's text written as markup: {shown}"
    labels = []
    for fig in figures(at).values():
        for key, axis in fig.get("layout", {}).items():
            if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                labels += [str(t) for t in axis.get("ticktext") or []]
        labels += [str(a.get("text", "")) for a in fig.get("layout", {}).get("annotations", [])]
        labels += [str(trace.get("name") or "") for trace in fig.get("data", [])]
    raw = [(w, t) for t in labels for w in marked if "<" in w and w in t]
    assert not raw, f"a visitor's tag raw in a chart: {raw}"


def check_translated(en, at) -> None:
    """No English sentence of ``en`` left on ``at`` (the same page in another language), in formulas either."""
    words = visitor_words(en)
    left = english_left(en, at, allowed=allowed(en) + allowed(at) + glosses(en, at), sidebar=True)
    assert [s for s in left if not {w.lower() for w in _WORD.findall(s)} <= words] == []
    assert not formula_words(en) & formula_words(at), "English words left in a formula"


def check_same_claims(en, at, lang: str) -> None:
    """The same elements, figures, numeric arrays, metrics' digits and table numbers as the English page, every
    number of each of its sentences; a whole number the English page groups by commas (``49,152``) is grouped the
    language's way (``49.152``)."""
    assert counts(at) == counts(en)
    assert len(at.sidebar.warning) == len(en.sidebar.warning) and len(at.sidebar.info) == len(en.sidebar.info)
    figs_en, figs = figures(en), figures(at)
    assert list(figs) == list(figs_en)
    for key, fig_en in figs_en.items():
        got, want = numbers(figs[key]), numbers(fig_en)
        assert len(got) == len(want), key
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=key)
    for m_en, m in zip(en.metric, at.metric, strict=True):
        assert digits(m.value) == digits(m_en.value), (m.label, m.value, m_en.value)
    assert table_problems(en, at, lang) == []
    for kind in PROSE:  # every number of an English sentence is in the translation, read with the language's marks
        for el_en, el in zip(getattr(en.main, kind), getattr(at.main, kind), strict=True):  # (which may write "sum
            if _LINK_VALUE.search(str(el_en.value)):  # to one" as "soma 1"); a link's warning writes the values a
                continue  # link takes as the link does (0.01): check_decimal_mark leaves it out too
            missing = Counter(numbers_in(str(el_en.value), "en")) - Counter(numbers_in(str(el.value), lang))
            assert not missing, (kind, sorted(missing), el_en.value, el.value)
    for text_en, text in zip(prose(en), prose(at), strict=True):  # 49,152 reads as 49.152 in pt and tr
        assert not [g for g in _GROUPED.findall(text_en) if g in text], ("a whole number grouped by commas", text)


_LINK_VALUE = re.compile(r"`\w+=")
_GROUPED = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:,\d{3})+(?![\d,]|\.\d)")


_EN_NUMBER = re.compile(r"(?<![\w.,])[1-9]\d{0,2}(?:,\d{3})+(?!\d|,\d)|\d+(?:\.\d+)?")
_LOCAL_NUMBER = re.compile(r"(?<![\w.,])[1-9]\d{0,2}(?:\.\d{3})+(?!\d|\.\d)|\d+(?:,\d+)?")


def numbers_in(text: str, lang: str) -> list[float]:
    """Every number of a sentence (code spans, formulas and links left out), read with ``lang``'s marks (``1,395`` and
    ``0.123`` in English, ``1.395`` and ``0,123`` in pt and tr)."""
    text = _NOT_NUMBERS.sub(" ", text)
    if lang == "en":
        return sorted(float(m.replace(",", "")) for m in _EN_NUMBER.findall(text))
    return sorted(float(m.replace(".", "").replace(",", ".")) for m in _LOCAL_NUMBER.findall(text))


def prose(at) -> list[str]:
    """The sentences and metrics of the main area, code spans left out."""
    return [_CODE.sub(" ", str(el.value)) for kind in (*PROSE, "metric") for el in getattr(at.main, kind)]


def check_decimal_mark(lesson: str, at) -> None:
    """A number in a sentence, a metric, a table's text cell or a chart's text is written for the language
    (``0,52``); code spans, formulas, links, versions and the link's own values (a link warning) keep the
    machine-readable point (a formula never has a decimal comma)."""
    keys = [c.key for c in (*package(lesson).CONTROLS.values(), *controls.SHARED.values())]
    texts = [str(el.value) for kind in PROSE for el in getattr(at.main, kind)  # a link's warning: its values as
             if not any(f"`{key}=" in str(el.value) for key in keys)]  # the link writes them (machine-readable)
    texts += [str(m.value) for m in at.main.metric]
    for fig in figures(at).values():
        texts += [str(a.get("text", "")) for a in fig["layout"].get("annotations", [])]
        texts += [str(t) for trace in fig["data"] for field in ("text", "customdata")
                  if isinstance(trace.get(field), list) for t in np.ravel(np.array(trace[field], object))
                  if isinstance(t, str)]
    pointed = [t for t in texts if re.search(r"\d\.\d", _NOT_PROSE.sub(" ", t))]
    assert not pointed, pointed
    cells = [v for table in at.main.dataframe for v in np.ravel(table.value.to_numpy(dtype=object))
             if isinstance(v, str) and re.search(r"\d\.\d", v)]
    assert not cells, f"table cells with a decimal point: {cells[:10]}"
    commas = [x.value for x in at.main.latex if re.search(r"\d(?:,|\{,\})\d", x.value)]
    assert not commas, f"formulas keep the point: {commas}"


def check_every_language(lesson: str, query: dict | None = None, session: dict | None = None, act=None) -> dict:
    """Run ``lesson`` with the link ``query`` and the session's ``session`` in every language (``act(at, lang)``
    then clicks or edits on it, in the page's language, and returns the page) and check the runs as this module
    checks each manifest state; returns ``{lang: AppTest}``."""
    runs = {}
    for lang in i18n.LANGUAGES:
        at = app_at(lesson, query={**(query or {}), **({"lang": lang} if lang != "en" else {})}, session=session,
                    timeout=120)
        runs[lang] = act(at, lang) if act is not None else at
        check_run(runs[lang], lang, query)
    for lang in OTHER_LANGS:
        check_translated(runs["en"], runs[lang])
        check_same_claims(runs["en"], runs[lang], lang)
        check_decimal_mark(lesson, runs[lang])
    return runs


# --- every lesson, every manifest state -----------------------------------------------------------------------


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
@pytest.mark.parametrize(("lesson", "state"), CASES)
def test_the_page_runs_clean_and_the_link_keeps_the_language(lesson, state, lang):
    check_run(page(lesson, state, lang), lang, states(lesson)[state][0])


@pytest.mark.parametrize("lang", OTHER_LANGS)
@pytest.mark.parametrize(("lesson", "state"), CASES)
def test_no_english_sentence_is_left(lesson, state, lang):
    check_translated(page(lesson, state, "en"), page(lesson, state, lang))


@pytest.mark.parametrize("lang", OTHER_LANGS)
@pytest.mark.parametrize(("lesson", "state"), CASES)
def test_every_claim_is_shown_with_the_same_numbers(lesson, state, lang):
    check_same_claims(page(lesson, state, "en"), page(lesson, state, lang), lang)


@pytest.mark.parametrize("lang", OTHER_LANGS)
@pytest.mark.parametrize(("lesson", "state"), CASES)
def test_numbers_in_sentences_take_the_languages_decimal_mark(lesson, state, lang):
    check_decimal_mark(lesson, page(lesson, state, lang))


@pytest.mark.parametrize("lesson", CHECKED)
def test_switching_the_language_keeps_every_control_and_every_number(lesson):
    """A link with a valid value other than the default for every declared control, then the language control
    switched to Turkish: every value stays (in the widget, and in the link when it was there), the page is in
    Turkish, its numbers are the same."""
    declared = {c.key: c for c in package(lesson).CONTROLS.values() if c.linked}
    at = app_at(lesson, query={k: a_valid_value(c) for k, c in declared.items()}, timeout=120, opened_by_link=True)
    assert_clean(at)
    drawn = set(at.session_state["_controls_drawn"]) & set(declared)
    before = {k: at.session_state[k] for k in drawn}
    linked = set(at.query_params)
    figs_en = figures(at)
    title_en = at.title[0].value
    at.selectbox(key="_lang_choice").set_value("tr").run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr" and at.title[0].value != title_en
    assert {k: at.session_state[k] for k in drawn} == before
    assert linked <= set(at.query_params), linked - set(at.query_params)  # (a translated choice: its new text)
    figs = figures(at)
    assert list(figs) == list(figs_en)
    for key, fig_en in figs_en.items():
        for a, b in zip(numbers(figs[key]), numbers(fig_en), strict=True):
            np.testing.assert_array_equal(a, b, err_msg=key)


def test_the_states_cover_every_declared_control_with_a_bad_value():
    """The bad link gives every declared control in the link an odd value (so each warning is read in every
    language)."""
    for lesson in CHECKED:
        declared = {c.key for c in package(lesson).CONTROLS.values() if c.linked}
        assert set(states(lesson)["bad-link"][0]) == declared, lesson
        assert all(isinstance(c, controls.Control) for c in package(lesson).CONTROLS.values())


@pytest.mark.parametrize("lesson", [lesson for lesson in CHECKED if getattr(package(lesson), "TEXT_STATES", None)])
def test_every_button_a_state_names_is_pressed(lesson):
    """Each button a ``TEXT_STATES`` entry names is on the page and pressed in some run (a renamed or removed
    button would otherwise leave its state at its link, unchecked)."""
    named = {key for _link, buttons in package(lesson).TEXT_STATES.values() for key in buttons}
    for state in states(lesson):
        page(lesson, state, "en")
    assert named <= PRESSED.get(lesson, set()), named - PRESSED.get(lesson, set())
