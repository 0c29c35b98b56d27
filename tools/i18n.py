"""Extract the app's messages and keep the translation catalogues in step (babel).

    python tools/i18n.py extract     # write explorer/locale/<domain>.pot, update every <lang>/LC_MESSAGES/<domain>.po
    python tools/i18n.py check       # list what is missing, untranslated or fuzzy (exit 1 if anything is)

A domain is a lesson's folder (``explorer/lessons/<lesson>/``) or ``shell`` (``explorer/shell/``, the
entrypoint and ``explorer/lessons/__init__.py``): see :mod:`explorer.shell.i18n`. Messages are the first
arguments of ``_()``, ``N_()`` and the first two of ``_n()`` (babel's Python extractor). A message that
is new gets an empty translation in every ``.po`` file; one that changed is marked fuzzy (babel's fuzzy
matching) so a translator looks at it again; one that is gone is kept as obsolete (``#~``) and dropped
at the next update. Translate by editing the ``.po`` files (any PO editor, or a text editor).
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from pathlib import Path

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
    with path.open("rb") as f:
        return read_po(f, locale=i18n.BABEL_LOCALES[lang], domain=domain)


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["extract", "check"])
    args = parser.parse_args()
    if args.command == "extract":
        cmd_extract()
        return 0
    found = problems()
    print("\n".join(found) or "every message is translated in " + ", ".join(LANGS))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
