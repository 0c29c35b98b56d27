"""Extract the app's messages, keep the translation catalogues in step (babel), and check them as a reviewer would.

    python tools/i18n.py extract     # write explorer/locale/<domain>.pot, update every <lang>/LC_MESSAGES/<domain>.po
    python tools/i18n.py check       # list what is missing, untranslated, fuzzy or broken (exit 1 if anything is)
    python tools/i18n.py glossary    # write docs/glossary.<lang>.md from explorer/locale/glossary.toml; list drifts

A domain is a lesson's folder (``explorer/lessons/<lesson>/``) or ``shell`` (``explorer/shell/``, the
entrypoint and ``explorer/lessons/__init__.py``): see :mod:`explorer.shell.i18n`. Messages are the first
arguments of ``_()``, ``N_()`` and the first two of ``_n()`` (babel's Python extractor). A message that
is new gets an empty translation in every ``.po`` file; one that changed is marked fuzzy (babel's fuzzy
matching) so a translator looks at it again; one that is gone is kept as obsolete (``#~``) and dropped
at the next update. Translate by editing the ``.po`` files (any PO editor, or a text editor).

``check`` also reads every translation as a reviewer would (:func:`catalogue_problems`, no app run): it keeps its
message's markup (:func:`markup`), its catalogue's plural forms agree with CLDR (:func:`plural_problems`), and it
differs from the English unless every word left is a shared term (:func:`same_as_english`). The glossary
(``explorer/locale/glossary.toml``: one translation per term of the field, :func:`glossary`) is enforced by
:func:`glossary_drift`; ``tests/test_catalogues.py`` and ``tests/test_glossary.py`` run both.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gettext
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from babel import Locale
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.shell import i18n  # noqa: E402

KEYWORDS = {"_": None, "N_": None, "_n": (1, 2)}
HEADER = "# {lang} messages of Attention Explorer ({domain}); translate with any PO editor. See tools/i18n.py.\n"
PLURAL_FORMS = {"pt": "nplurals=2; plural=(n > 1);", "tr": "nplurals=2; plural=(n != 1);"}
"""gettext's classic plural rules (Brazilian Portuguese: 0 and 1 are singular; Turkish: 1 only; nouns after a
number stay singular in Turkish, so both forms are often the same), instead of CLDR's three Portuguese forms."""
FIXED_DATE = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)  # headers stay the same from one extract to the next
LANGS = [lang for lang in i18n.LANGUAGES if lang != i18n.DEFAULT]
PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)(?:[:!][^{}]*)?\}(?!\})")


def domain_files() -> dict[str, list[Path]]:
    """Each domain's source files, in a stable order."""
    out = {i18n.SHELL_DOMAIN: sorted((ROOT / "explorer" / "shell").rglob("*.py"))
           + [ROOT / "streamlit_app.py", ROOT / "explorer" / "lessons" / "__init__.py"]}
    for folder in sorted(p for p in (ROOT / "explorer" / "lessons").iterdir() if (p / "page.py").is_file()):
        out[folder.name] = sorted(folder.rglob("*.py"))
    return out


def extract(domain: str, files: list[Path]) -> Catalog:
    """The template catalogue of ``domain``: every message of ``files``, with its locations."""
    template = Catalog(domain=domain, project="Attention Explorer", version="1", charset="utf-8", fuzzy=False,
                       creation_date=FIXED_DATE, revision_date=FIXED_DATE,
                       header_comment=HEADER.format(lang="English (template)", domain=domain))
    if domain == i18n.SHELL_DOMAIN:  # the navigation's titles and groups (streamlit_app.py translates them)
        from explorer.lessons import LESSONS

        for entry in LESSONS:
            for text in (entry.title, entry.group):
                template.add(text, None, [("explorer/lessons/__init__.py", 0)])
    for path in files:
        for lineno, message, comments, context in extract_from_file(
                "python", str(path), keywords=KEYWORDS, comment_tags=("TRANSLATORS:",)):
            template.add(message, None, [(str(path.relative_to(ROOT)), lineno)], auto_comments=comments,
                         context=context, flags=("python-brace-format",) if _has_placeholders(message) else ())
    return template


def _has_placeholders(message) -> bool:
    texts = message if isinstance(message, tuple) else (message,)
    return any(PLACEHOLDER.search(t) for t in texts)


def placeholders(text: str) -> set[str]:
    """The ``{names}`` a message or its translation uses."""
    return set(PLACEHOLDER.findall(text or ""))


def read(path: Path, lang: str, domain: str) -> Catalog:
    """The catalogue at ``path``; babel's ``PoFileError`` for a broken file (a plural entry with more forms than its
    header's ``nplurals``, which babel would otherwise drop with a printed warning)."""
    with path.open("rb") as f:
        return read_po(f, locale=i18n.BABEL_LOCALES[lang], domain=domain, abort_invalid=True)


def write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog, width=120, sort_output=False, include_previous=False)


def cmd_extract() -> None:
    for domain, files in domain_files().items():
        template = extract(domain, files)
        write(i18n.LOCALE_DIR / f"{domain}.pot", template)
        for lang in LANGS:
            path = i18n.po_path(lang, domain)
            catalog = read(path, lang, domain) if path.is_file() else Catalog(
                locale=i18n.BABEL_LOCALES[lang], domain=domain, project="Attention Explorer", version="1",
                fuzzy=False, creation_date=FIXED_DATE, revision_date=FIXED_DATE,
                header_comment=HEADER.format(lang=i18n.LANGUAGES[lang], domain=domain))
            catalog.update(template, no_fuzzy_matching=False, update_creation_date=False)
            catalog.mime_headers = [(k, PLURAL_FORMS[lang] if k == "Plural-Forms" else v)
                                    for k, v in catalog.mime_headers]
            catalog.obsolete.clear()
            write(path, catalog)
        print(f"{domain}: {len(template)} messages")


def problems() -> list[str]:
    """Every message missing from a catalogue, untranslated, fuzzy, or with other placeholders than its source."""
    found = []
    for domain, files in domain_files().items():
        template = extract(domain, files)
        for lang in LANGS:
            path = i18n.po_path(lang, domain)
            if not path.is_file():
                found.append(f"{path.relative_to(ROOT)}: missing (run: python tools/i18n.py extract)")
                continue
            catalog = read(path, lang, domain)
            for message in template:
                if not message.id:
                    continue
                entry = catalog.get(message.id, context=message.context)
                where = f"{path.relative_to(ROOT)}: {str(message.id)[:70]!r}"
                if entry is None:
                    found.append(f"{where}: not in the catalogue (run: python tools/i18n.py extract)")
                    continue
                strings = entry.string if isinstance(entry.string, tuple) else (entry.string,)
                if not all(strings):
                    found.append(f"{where}: untranslated")
                elif entry.fuzzy:
                    found.append(f"{where}: fuzzy (check the translation, then remove the fuzzy flag)")
                else:
                    sources = message.id if isinstance(message.id, tuple) else (message.id,)
                    expected = set().union(*(placeholders(s) for s in sources))
                    for s in strings:
                        if placeholders(s) != expected:
                            found.append(f"{where}: placeholders {sorted(placeholders(s))}, expected "
                                         f"{sorted(expected)}")
            stale = {m.id for m in catalog if m.id} - {m.id for m in template if m.id}
            found += [f"{path.relative_to(ROOT)}: {str(s)[:70]!r}: no longer in the code (run extract)"
                      for s in stale]
    return found


# --- what a reviewer checks in every translation (no app run) -----------------------------------------------------

PLOTLY_FIELD = re.compile(r"%\{[^}]*\}")  # a Plotly hover field: %{z:.3f}, %{customdata[0]}
LATEX_SPAN = re.compile(r"\$[^$]+\$")
CODE_SPAN = re.compile(r"`[^`]*`")
LINK_TARGET = re.compile(r"\]\(([^)]*)\)")


def markup(text: str) -> dict[str, object]:
    """What a translation must keep of its message, by name: Plotly ``%{…}`` fields, ``$…$`` spans (LaTeX, as
    written), `` `code` `` spans, Markdown link targets ``](…)``, ``**`` bold markers, line breaks and ``<br>``,
    ``- `` list items, a ``#`` heading, and the spaces a message starts or ends with (``"query {label} → "``)."""
    return {
        "Plotly %{…} fields": sorted(PLOTLY_FIELD.findall(text)),
        "$…$ spans": sorted(LATEX_SPAN.findall(text)),
        "`code` spans": sorted(CODE_SPAN.findall(text)),
        "link targets": sorted(LINK_TARGET.findall(text)),
        "** bold markers": text.count("**"),
        "line breaks": text.count("\n"),
        "<br> breaks": text.count("<br>"),
        "- list items": len(re.findall(r"(?m)^- ", text)),
        "# heading": re.match(r"#*", text).group(),
        "spaces at the ends": (text[:len(text) - len(text.lstrip())], text[len(text.rstrip()):]),
    }


def forms(message) -> Iterator[tuple[int, str, str]]:
    """``(i, source, translation)`` for each form of a catalogue entry: a plural entry's form 0 is read against its
    singular, every other form against its plural."""
    ids = message.id if isinstance(message.id, tuple) else (message.id,)
    strings = message.string if isinstance(message.string, tuple) else (message.string,)
    for i, text in enumerate(strings):
        yield i, ids[min(i, len(ids) - 1)], text or ""


def markup_problems(message) -> list[str]:
    """How each translated form of ``message`` (a babel catalogue entry) differs from its source in
    :func:`placeholders` (the names of every form together) or :func:`markup`; untranslated forms are left to
    :func:`problems`."""
    ids = message.id if isinstance(message.id, tuple) else (message.id,)
    expected = set().union(*(placeholders(s) for s in ids))
    found = []
    for i, source, text in forms(message):
        if not text:
            continue
        form = f"form {i}: " if isinstance(message.id, tuple) else ""
        if placeholders(text) != expected:
            found.append(f"{form}placeholders {sorted(placeholders(text))}, expected {sorted(expected)}")
        want, got = markup(source), markup(text)
        found += [f"{form}{k} {got[k]!r}, expected {want[k]!r}" for k in want if got[k] != want[k]]
    return found


PLURAL_NS = range(13)
"""The counts whose plural form is checked against CLDR (every count a lesson shows is small)."""


def plural_problems(catalog: Catalog, lang: str) -> list[str]:
    """Where ``catalog``'s ``Plural-Forms`` header disagrees with CLDR's plural rule for ``lang`` (babel's
    ``Locale.plural_form``) for n in :data:`PLURAL_NS`: two counts CLDR puts in one category must get one form,
    two counts in different categories two forms; and every plural entry translated has the header's number of
    forms (an untranslated one is :func:`problems`'; more forms than the header says: :func:`read` refuses).
    (CLDR's Portuguese "many" starts at a million: gettext's two forms agree with it up to there.)"""
    rule = gettext.c2py(catalog.plural_expr)
    category = Locale.parse(i18n.BABEL_LOCALES[lang]).plural_form
    found, form_of, category_of = [], {}, {}
    for n in PLURAL_NS:
        form, cat = rule(n), category(n)
        if form >= catalog.num_plurals:
            found.append(f"n = {n}: Plural-Forms gives form {form} of {catalog.num_plurals}")
        seen_form, seen_n = form_of.setdefault(cat, (form, n))
        if seen_form != form:
            found.append(f"n = {n}: Plural-Forms gives form {form}, but n = {seen_n} (CLDR's '{cat}' too) form "
                         f"{seen_form} ({catalog.plural_forms})")
        seen_cat, seen_n = category_of.setdefault(form, (cat, n))
        if seen_cat != cat:
            found.append(f"n = {n}: CLDR says '{cat}', n = {seen_n} '{seen_cat}', but Plural-Forms gives both "
                         f"form {form} ({catalog.plural_forms})")
    for message in catalog:
        if message.id and isinstance(message.id, tuple):
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            given = sum(1 for x in strings if x)  # babel's read_po pads a missing form with ""
            if len(strings) != catalog.num_plurals or (given and given != catalog.num_plurals):
                found.append(f"{message.id[0][:60]!r}: {given} forms, the header says {catalog.num_plurals}")
    return found


IDENTIFIER = re.compile(r"\w*_\w*|\{[^{}]*\}")  # d_model, W_q, {placeholders}: names, not words


def words(text: str) -> list[str]:
    """The words of ``text`` a learner reads: not in `` `code` ``, ``$…$``, ``{placeholders}`` or identifiers
    (``d_model``), two letters or more (one letter is a name: ``X``, ``h``); ``top-k`` is one word."""
    prose = IDENTIFIER.sub(" ", LATEX_SPAN.sub(" ", CODE_SPAN.sub(" ", LINK_TARGET.sub("](", text))))
    return [w for w in re.findall(r"[^\W\d_]+(?:-[^\W\d_]+)*", prose) if len(w) > 1]


def same_as_english(message, shared: set[str]) -> list[str]:
    """The forms of ``message`` that are its English source unchanged although a word in them is not a shared
    term (``shared``: casefolded words the glossary lists as the same in both languages)."""
    return [f"{'form ' + str(i) + ': ' if isinstance(message.id, tuple) else ''}identical to English "
            f"({', '.join(unshared)} not in the glossary's same_as_english)"
            for i, source, text in forms(message)
            if text == source and (unshared := [w for w in words(text) if w.casefold() not in shared])]


def catalogue_problems(lang: str, domain: str, catalog: Catalog, shared: set[str] | None = None) -> list[str]:
    """Every markup, plural and identical-to-English problem of one catalogue, as ``"<lang>/<domain>: …"`` lines.
    ``shared``: the words allowed to stay English (default: the glossary's, :func:`glossary`)."""
    shared = glossary().shared[lang] if shared is None else shared
    found = [f"{lang}/{domain}: plural forms: {p}" for p in plural_problems(catalog, lang)]
    for message in catalog:
        if message.id:
            found += [f"{lang}/{domain}: {str(message.id)[:70]!r}: {p}"
                      for p in markup_problems(message) + same_as_english(message, shared)]
    return found


def catalogues() -> Iterator[tuple[str, str, Catalog]]:
    """``(lang, domain, catalogue)`` for every ``.po`` file of every language but English."""
    for lang in LANGS:
        for path in sorted((i18n.LOCALE_DIR / lang / "LC_MESSAGES").glob("*.po")):
            yield lang, path.stem, read(path, lang, path.stem)


# --- the glossary: one translation per term of the field -----------------------------------------------------------

GLOSSARY = i18n.LOCALE_DIR / "glossary.toml"
GLOSSARY_DOC = ROOT / "docs" / "glossary.{lang}.md"


def prose(text: str) -> str:
    """``text`` as the glossary searches it: ``{placeholder}`` -> ``{}``, `` `code` `` -> ````` `` `````, ``$…$``
    -> ``$$``, a link's target -> ``]()`` (a name in code or a formula is not a word of the sentence)."""
    text = LINK_TARGET.sub("]()", text)
    return re.sub(r"(?<!\{)\{[^{}]*\}(?!\})", "{}", LATEX_SPAN.sub("$$", CODE_SPAN.sub("``", text)))


@dataclasses.dataclass(frozen=True)
class Never:
    """A word a translation must not use: ``pattern`` (case-sensitive) once ``unless`` (the same spellings with
    another meaning) is removed."""
    pattern: re.Pattern
    unless: re.Pattern | None
    why: str

    def find(self, text: str) -> list[str]:
        """The ruled-out words in ``text`` (already :func:`prose`)."""
        return self.pattern.findall(self.unless.sub(" ", text) if self.unless else text)


@dataclasses.dataclass(frozen=True)
class Term:
    """One entry of ``glossary.toml`` (its header says what each field means)."""
    en: str
    match: re.Pattern
    not_here: tuple[re.Pattern, ...]
    only_with: re.Pattern | None
    word: dict[str, str]
    stems: dict[str, re.Pattern | None]
    why: dict[str, str]
    never: dict[str, tuple[Never, ...]]

    def used_in(self, english: str) -> bool:
        """Whether the English message ``english`` (already :func:`prose`) uses this term."""
        if not self.match.search(english) or (self.only_with and not self.only_with.search(english)):
            return False
        text = english
        for other in self.not_here:
            text = other.sub(" ", text)
        return bool(self.match.search(text))

    def said_in(self, lang: str, translation: str) -> bool:
        """Whether ``translation`` (already :func:`prose`) uses the term's word in ``lang`` (one of its stems starts a
        word)."""
        stems = self.stems[lang]
        return stems is None or bool(stems.search(translation))


@dataclasses.dataclass(frozen=True)
class Glossary:
    terms: tuple[Term, ...]
    shared: dict[str, set[str]]
    """Per language, the casefolded words a translation may leave in English."""
    shared_why: dict[str, list[tuple[list[str], str]]]


def glossary(path: Path = GLOSSARY) -> Glossary:
    """The glossary read from ``path`` (TOML). ``ValueError`` names a term whose regex does not compile."""
    with path.open("rb") as f:
        data = tomllib.load(f)

    def rx(pattern: str | None, flags=re.IGNORECASE) -> re.Pattern | None:
        return None if pattern is None else re.compile(pattern, flags)

    terms = []
    for t in data["term"]:
        try:
            terms.append(Term(
                en=t["en"], match=rx(t["match"]), not_here=tuple(rx(p) for p in t.get("not_here", ())),
                only_with=rx(t.get("only_with")),
                word={lang: t[lang] for lang in LANGS}, why={lang: t[f"{lang}_why"] for lang in LANGS},
                stems={lang: rx(r"(?<!\w)(?:" + "|".join(t[f"{lang}_stems"]) + ")")
                       if t.get(f"{lang}_stems") else None for lang in LANGS},
                never={lang: tuple(Never(re.compile(n["pattern"]), rx(n.get("unless"), 0), n["why"])
                                   for n in t.get(f"{lang}_never", ())) for lang in LANGS}))
        except (re.error, KeyError) as exc:
            raise ValueError(f"{path.name}: term {t.get('en')!r}: {exc}") from exc
    same = data["same_as_english"]
    shared_why = {lang: [(e["words"], e["why"]) for e in same["both"] + same.get(lang, [])] for lang in LANGS}
    shared = {lang: {w.casefold() for ws, _why in shared_why[lang] for w in ws} for lang in LANGS}
    return Glossary(tuple(terms), shared, shared_why)


@dataclasses.dataclass(frozen=True)
class Drift:
    """A translation that breaks the glossary: ``found`` is ``"missing"`` (the English uses the term, the
    translation not its word) or the words it should not use."""
    lang: str
    domain: str
    term: str
    msgid: str
    translation: str
    found: str

    def __str__(self) -> str:
        return f"{self.lang}/{self.domain}: {self.term}: {self.found}: {self.msgid[:70]!r} -> {self.translation[:90]!r}"


LESSON_TITLE = "lesson title"


def lesson_titles(lang: str) -> dict[str, str]:
    """Each lesson's title (and group) in English -> as the sidebar shows it in ``lang`` (the shell's catalogue)."""
    from explorer.lessons import LESSONS

    shell = read(i18n.po_path(lang, i18n.SHELL_DOMAIN), lang, i18n.SHELL_DOMAIN)
    return {text: shell.get(text).string for entry in LESSONS for text in (entry.title, entry.group)
            if shell.get(text) is not None and shell.get(text).string}


def title_drift(source: str, text: str, titles: dict[str, str]) -> str | None:
    """How ``text`` names a lesson otherwise than the sidebar: as its title, or as a link's text ``[Title](…)``."""
    if source in titles and text != titles[source]:
        return f"the sidebar says {titles[source]!r}"
    for title in re.findall(r"\[([^\]]+)\]\(", source):
        if title in titles and f"[{titles[title]}](" not in text:
            return f"the link should read [{titles[title]}]"
    return None


def glossary_drift(lang: str, domain: str, catalog: Catalog, terms: tuple[Term, ...] | None = None,
                   titles: dict[str, str] | None = None) -> list[Drift]:
    """Every translation in ``catalog`` that does not use a term's word where its English uses the term, uses a
    word the glossary rules out, or names a lesson otherwise than the sidebar (``titles``: :func:`lesson_titles`),
    each plural form on its own."""
    terms = glossary().terms if terms is None else terms
    titles = lesson_titles(lang) if titles is None else titles
    found = []
    for message in catalog:
        if not message.id:
            continue
        msgid = message.id[0] if isinstance(message.id, tuple) else message.id
        for _i, source, text in forms(message):
            if not text:
                continue
            if problem := title_drift(source, text, titles):
                found.append(Drift(lang, domain, LESSON_TITLE, msgid, text, problem))
            english, translation = prose(source), prose(text)
            for term in terms:
                if term.used_in(english) and not term.said_in(lang, translation):
                    found.append(Drift(lang, domain, term.en, msgid, text, f"missing {term.word[lang]!r}"))
                for never in term.never[lang]:
                    if words_found := never.find(translation):
                        found.append(Drift(lang, domain, term.en, msgid, text, f"uses {', '.join(words_found)}"))
    return list(dict.fromkeys(found))  # two forms with one text count once


def glossary_markdown(lang: str, g: Glossary | None = None) -> str:
    """``docs/glossary.<lang>.md``: the glossary's table for ``lang`` (written by ``python tools/i18n.py
    glossary``; ``tests/test_glossary.py`` checks it is current)."""
    g = g or glossary()
    name = i18n.LANGUAGES[lang]

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [f"# Glossary: {name} ({i18n.BABEL_LOCALES[lang]})", "",
             f"One {name} word for each term of the field, and why. Written by `python tools/i18n.py glossary` "
             "from `explorer/locale/glossary.toml` (edit that file, not this one); `tests/test_glossary.py` "
             "checks every catalogue: where an English message uses a term, its translation uses the word below "
             "(any ending), and no translation uses a word ruled out below.", "",
             f"| English | {name} | Why |", "|---|---|---|"]
    lines += [f"| {cell(t.en)} | {cell(t.word[lang])}{'' if t.stems[lang] else ' (not required)'} | "
              f"{cell(t.why[lang])} |" for t in g.terms]
    ruled_out = [(t, n) for t in g.terms for n in t.never[lang]]
    lines += ["", "## Words not used", "", "| Term | Not | Why |", "|---|---|---|"]
    lines += [f"| {cell(t.en)} | `{cell(n.pattern.pattern)}` | {cell(n.why)} |" for t, n in ruled_out]
    lines += ["", "## The same as in English", "",
              "A translation may equal its English message only when every word left in it is one of these:", ""]
    lines += [f"- {', '.join(ws)}: {why}" for ws, why in g.shared_why[lang]]
    return "\n".join(lines) + "\n"


def cmd_glossary() -> None:
    g = glossary()
    for lang in LANGS:
        path = Path(str(GLOSSARY_DOC).format(lang=lang))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(glossary_markdown(lang, g), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    titles = {lang: lesson_titles(lang) for lang in LANGS}
    drift = [d for lang, domain, catalog in catalogues()
             for d in glossary_drift(lang, domain, catalog, g.terms, titles[lang])]
    print("\n".join(map(str, drift)) or "every catalogue follows the glossary")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["extract", "check", "glossary"])
    args = parser.parse_args()
    if args.command == "extract":
        cmd_extract()
        return 0
    if args.command == "glossary":
        cmd_glossary()
        return 0
    found = problems() + [p for lang, domain, po in catalogues() for p in catalogue_problems(lang, domain, po)]
    print("\n".join(found) or "every message is translated in " + ", ".join(LANGS))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
