"""The app in its learners' languages: English, Português, Türkçe (gettext catalogues read with babel).

Every sentence a learner reads is a gettext message, one catalogue per language and *domain* (a lesson's folder
name, or ``shell`` for what the lessons share; ``docs/lessons.md``, "The catalogue"). A module gets its domain's
functions from its own name::

    from explorer.shell.i18n import translator
    _, _n = translator(__name__)             # gettext and ngettext of this module's domain
    # (a page file passes __file__: Streamlit runs it as "__main__")
    st.caption(_("{n} tokens, {d} wide").format(n=n, d=d))
    st.caption(_n("{n} head", "{n} heads", n).format(n=n))
    LABELS = {"sink": N_("first-token sink")}   # marked at import time, translated where shown: _(LABELS[k])

Messages are written with named ``{placeholders}`` and ``.format`` (an f-string cannot be a message: the catalogue
would need every value), so a translator can move a value within the sentence. The ``.po`` files are compiled in
memory once per process: no ``.mo`` file is kept in the repository.

The language of a run is :func:`current` (set by the entrypoint with :func:`activate` from the sidebar's ``lang``
control); code outside a Streamlit run (the pure ``model.py`` / ``charts.py`` modules, their tests) sees English
unless :func:`using` says otherwise. A translated word is capitalised with :func:`capitalize`, never with
``str.upper``/``capitalize``/``title``. Numbers shown as text go through :func:`number` / :func:`integer` /
:func:`percent` (decimal comma and ``.`` for thousands in pt and tr: babel's CLDR data for ``pt_BR`` and ``tr_TR``),
Plotly figures get :func:`plotly_separators`; code, formulas (LaTeX), link values and downloads (CSV, JSON) keep the
machine-readable ``1234.5``.

Sources: GNU gettext manual (domains, plural forms, ``msgctxt``); Babel's ``babel.messages`` (catalogues)
and ``babel.numbers`` (CLDR number formats).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gettext
import io
import math
from collections.abc import Callable, Iterator
from pathlib import Path

from babel import Locale, numbers
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

LANGUAGES = {"en": "English", "pt": "Português", "tr": "Türkçe"}
"""The app's languages: link value (``?lang=``) -> the language's own name (what the sidebar shows)."""
DEFAULT = "en"
KEY = "lang"
"""The sidebar control's key and its link parameter."""
BABEL_LOCALES = {"en": "en_US", "pt": "pt_BR", "tr": "tr_TR"}
"""The CLDR locale whose number formats each language uses (the Portuguese lessons are Brazilian)."""
LOCALE_DIR = Path(__file__).resolve().parents[1] / "locale"
"""``explorer/locale/<lang>/LC_MESSAGES/<domain>.po`` (and ``<domain>.pot``, the extracted template)."""
SHELL_DOMAIN = "shell"
DOCUMENT_LANGUAGES = {"en": "en", "pt": "pt-BR", "tr": "tr"}
"""The page's ``<html lang>`` (a BCP 47 tag) in each language: the Portuguese is Brazilian (:data:`BABEL_LOCALES`)."""

_current: contextvars.ContextVar[str] = contextvars.ContextVar("attention_explorer_lang", default=DEFAULT)


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue without translating it (a module-level constant; translate it with
    ``_()`` where it is shown)."""
    return message


def domain_of(module: str) -> str:
    """The catalogue domain of a module, given its name or its file: ``explorer.lessons.<lesson>.*`` (or
    ``…/explorer/lessons/<lesson>/….py``) -> ``<lesson>``, anything else ``shell``.

    Raises:
        ValueError: ``"__main__"``: Streamlit runs a page file as ``__main__``, so a page passes its ``__file__``.
    """
    if module == "__main__":
        raise ValueError("a page runs as __main__: pass translator(__file__) so its lesson's domain is found")
    if module.endswith(".py"):
        parts = Path(module).resolve().parts
        for i in range(len(parts) - 3):
            if parts[i:i + 2] == ("explorer", "lessons"):
                return parts[i + 2]
        return SHELL_DOMAIN
    parts = module.split(".")
    if len(parts) >= 3 and parts[0] == "explorer" and parts[1] == "lessons":
        return parts[2]
    return SHELL_DOMAIN


def from_locale(locale: str | None) -> str:
    """The app's language for a browser locale (``"pt-BR"`` -> ``"pt"``, ``"tr"`` -> ``"tr"``), English otherwise."""
    if not locale:
        return DEFAULT
    code = str(locale).replace("_", "-").split("-")[0].strip().lower()
    return code if code in LANGUAGES else DEFAULT


def current() -> str:
    """The language of this run (``en``, ``pt`` or ``tr``)."""
    return _current.get()


def activate(lang: str) -> None:
    """Make ``lang`` the language of this run (the entrypoint, once per run). ``ValueError`` for another code."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    _current.set(lang)


@contextlib.contextmanager
def using(lang: str) -> Iterator[None]:
    """``with using("pt"):`` runs the block in another language (tests; pure code), then restores the language."""
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    token = _current.set(lang)
    try:
        yield
    finally:
        _current.reset(token)


def with_lang(url: str, lang: str | None = None) -> str:
    """A link to another lesson that keeps the run's language: ``./scaling?scale_d_k=256`` ->
    ``./scaling?scale_d_k=256&lang=pt`` (English, the default, adds nothing: a link a learner made in English
    stays as it was). A ``lang`` already in ``url`` is replaced."""
    lang = lang or current()
    base, _, fragment = url.partition("#")
    path, _, query = base.partition("?")
    params = [p for p in query.split("&") if p and not p.startswith(f"{KEY}=")]
    if lang != DEFAULT:
        params.append(f"{KEY}={lang}")
    return path + ("?" + "&".join(params) if params else "") + ("#" + fragment if fragment else "")


def po_path(lang: str, domain: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{domain}.po"


@functools.cache
def catalog(lang: str, domain: str) -> gettext.NullTranslations:
    """The compiled catalogue of ``domain`` in ``lang`` (read once per process; English, or a missing file,
    gives the messages as written). Fuzzy entries are not used (babel's ``write_mo`` leaves them out)."""
    path = po_path(lang, domain)
    if lang == DEFAULT or not path.is_file():
        return gettext.NullTranslations()
    with path.open("rb") as f:
        po = read_po(f, locale=BABEL_LOCALES[lang], domain=domain)
    buffer = io.BytesIO()
    write_mo(buffer, po, use_fuzzy=False)
    buffer.seek(0)
    return Translations(buffer, domain=domain)


def translator(module: str) -> tuple[Callable[[str], str], Callable[[str, str, int], str]]:
    """``(_, _n)``: gettext and ngettext of ``module``'s domain (:func:`domain_of`: a module name, or a page's
    ``__file__``), in the run's language."""
    domain = domain_of(module)

    def gettext_(message: str) -> str:
        return catalog(current(), domain).gettext(message)

    def ngettext_(singular: str, plural: str, n: int) -> str:
        return catalog(current(), domain).ngettext(singular, plural, n)

    return gettext_, ngettext_


# --- letters and the document ------------------------------------------------------------------------------

UPPER_CASE = {"tr": {"i": "İ", "ı": "I"}}
"""Where a language's capital letter is not Python's ``str.upper``: Turkish (dotted i -> İ, dotless ı -> I). The
rule is Unicode's SpecialCasing.txt for Turkish ("tr"); CLDR, and so babel, has no case mapping to read it from.
Portuguese capitals are Python's."""


def capitalize(text: str, lang: str | None = None) -> str:
    """``text`` with its first letter in upper case by the rules of ``lang`` (the run's language): ``"indüksiyon
    skoru"`` -> ``"İndüksiyon skoru"`` and ``"ışık"`` -> ``"Işık"`` in Turkish (``str.upper`` writes ``"I"`` for
    both i and ı), ``"índice"`` -> ``"Índice"`` in Portuguese. Only that letter changes (``str.capitalize`` would
    also lower the rest: ``"KV cache"`` -> ``"Kv cache"``); markup or a quote before it (``**``, ``“``) stays, and a
    text that starts with a number is left as it is. Explicit rule, no CLDR data: see :data:`UPPER_CASE`."""
    for i, ch in enumerate(text):
        if ch.isalnum():
            upper = (UPPER_CASE.get(lang or current(), {}).get(ch) or ch.upper()) if ch.isalpha() else ch
            return text[:i] + upper + text[i + 1:]
    return text


def document_language_js(lang: str | None = None) -> str:
    """A script that tells the browser the page's language: ``document.documentElement.lang = "pt-BR"`` (Streamlit's
    page says ``<html lang="en">`` whatever the app's language, so a screen reader read Portuguese with English
    pronunciation and the browser offered to translate it). The value is :data:`DOCUMENT_LANGUAGES`' tag; setting it
    again to the same value changes nothing."""
    return f'document.documentElement.lang = "{DOCUMENT_LANGUAGES[lang or current()]}";'


# --- numbers shown as text ---------------------------------------------------------------------------------


@functools.cache
def _locale(lang: str) -> Locale:
    return Locale.parse(BABEL_LOCALES[lang])


def number(x: float | None, digits: int = 4, *, lang: str | None = None) -> str:
    """``x`` with ``digits`` fixed decimals and the language's decimal mark (``0.1235`` / ``0,1235``), not
    grouped (``1234.5`` / ``1234,5``: a learner never mistakes a grouping mark for the decimal one), ``-0`` as
    ``0``, and ``—`` for ``None``, NaN or infinity. (:func:`integer` groups counts.)"""
    if x is None or not math.isfinite(x):
        return "—"
    text = f"{x:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    lang = lang or current()
    return text if lang == DEFAULT else text.replace(".", numbers.get_decimal_symbol(_locale(lang)))


def general(x: float, significant: int = 3, *, lang: str | None = None) -> str:
    """``x`` to ``significant`` digits as ``format(x, ".3g")`` writes it, with the language's decimal mark
    (``0.25`` / ``0,25``; a chart's tick label)."""
    text = f"{x:.{significant}g}"
    lang = lang or current()
    return text if lang == DEFAULT else text.replace(".", numbers.get_decimal_symbol(_locale(lang)))


def significant(x: float, digits: int = 3, *, lang: str | None = None) -> str:
    """``x`` to ``digits`` significant digits for a sentence or a table cell: as :func:`general`, except that a number
    with ``digits`` or more whole digits is written whole and ungrouped (``1224``, not ``1.22e+03``)."""
    text = general(x, digits, lang=lang)
    return number(x, 0, lang=lang) if "e+" in text else text


def scientific(x: float, digits: int = 1, *, lang: str | None = None) -> str:
    """``x`` in scientific notation with ``digits`` after the language's decimal mark: ``1.2e-06`` / ``1,2e-06`` (a
    shown number, not code)."""
    return f"{x:.{digits}e}".replace(".", plotly_separators(lang)[0])


def list_separator(lang: str | None = None) -> str:
    """What separates numbers listed in a sentence: ``", "`` (``0.5, 0.25``), or ``"; "`` where the decimal mark is
    a comma (``0,5; 0,25``: a comma between them would read as one more decimal mark)."""
    return ", " if numbers.get_decimal_symbol(_locale(lang or current())) == "." else "; "


def integer(n: int, *, lang: str | None = None) -> str:
    """``n`` with the language's thousands separator: ``46,080`` / ``46.080``."""
    return numbers.format_decimal(int(n), format="#,##0", locale=_locale(lang or current()))


def percent(x: float, digits: int = 1, *, lang: str | None = None) -> str:
    """``x`` (a fraction) as a percentage: ``93.1%`` / ``93,1%`` / ``%93,1`` (Turkish writes the sign first)."""
    pattern = "#,##0" + ("." + "0" * digits if digits > 0 else "") + "%"
    lang = lang or current()
    if lang == "tr":
        pattern = "%" + pattern[:-1]
    return numbers.format_percent(x, format=pattern, locale=_locale(lang), decimal_quantization=True)


def plotly_separators(lang: str | None = None) -> str:
    """Plotly's ``layout.separators`` for the language: the decimal mark, then the thousands mark
    (``".,"`` / ``",."``)."""
    loc = _locale(lang or current())
    return numbers.get_decimal_symbol(loc) + numbers.get_group_symbol(loc)
