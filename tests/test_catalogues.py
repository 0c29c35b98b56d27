"""The catalogues read as a reviewer reads them (``tools/i18n.py``'s :func:`catalogue_problems`, static: no page runs).

Every translation, every plural form, keeps its message's ``{placeholders}``, Plotly ``%{…}`` fields, ``$…$`` spans,
`` `code` `` spans, Markdown link targets, ``**`` bold markers, line breaks, list items, heading and outer spaces;
each catalogue's ``Plural-Forms`` gives the form CLDR (babel) gives for n = 0..12 and every plural entry has that
many forms; and no translation is its English message unless every word left is a shared term of the glossary
(``explorer/locale/glossary.toml``, ``[same_as_english]``). Each check is also shown failing on a broken catalogue.
"""

from __future__ import annotations

import io

import pytest
from babel.messages.catalog import Message
from babel.messages.pofile import PoFileError, read_po

from tools import i18n as tool

CATALOGUES = list(tool.catalogues())
SHARED = tool.glossary().shared


@pytest.mark.parametrize(("lang", "domain", "catalog"), CATALOGUES, ids=[f"{lang}-{d}" for lang, d, _c in CATALOGUES])
def test_every_translation_keeps_its_markup_agrees_with_cldr_and_is_not_left_in_english(lang, domain, catalog):
    found = tool.catalogue_problems(lang, domain, catalog, SHARED[lang])
    assert not found, "\n".join(found)


def test_every_catalogue_is_checked():
    assert {(lang, d) for lang, d, _c in CATALOGUES} == {
        (lang, p.stem) for p in tool.i18n.LOCALE_DIR.glob("*.pot") for lang in ("pt", "tr")}
    assert list(tool.PLURAL_NS) == list(range(13))


@pytest.mark.parametrize(("source", "broken", "named"), [
    ("Hello {name}", "Olá {nome}", "placeholders ['nome'], expected ['name']"),
    ("{n} heads of {total}", "{n} cabeças", "placeholders ['n'], expected ['n', 'total']"),
    ("weight %{z:.3f}<extra></extra>", "peso %{z:.2f}<extra></extra>", "Plotly %{…} fields"),
    ("the score $q \\cdot k$", "a pontuação $q \\times k$", "$…$ spans"),
    ("with `W_q` of shape `[d, k]`", "com `W_k` de forma `[d, k]`", "`code` spans"),
    ("open [the lesson](./scaling)", "abra [a lição](./escala)", "link targets"),
    ("open [the lesson]({link})", "abra a lição", "link targets"),
    ("**Measured:** 3", "Medido: 3", "** bold markers"),
    ("first\n\nsecond", "primeiro segundo", "line breaks"),
    ("a<br>b", "a b", "<br> breaks"),
    ("- one\n- two", "- um\n* dois", "- list items"),
    ("### Score", "Acertos", "# heading"),
    ("query {label} → ", "consulta {label} →", "spaces at the ends"),
])
def test_the_markup_check_names_what_a_translation_broke(source, broken, named):
    assert any(named in p for p in tool.markup_problems(Message(source, broken))), tool.markup_problems(
        Message(source, broken))
    fixed = Message(source, source)  # the message itself keeps everything
    assert tool.markup_problems(fixed) == []


def test_each_plural_form_is_read_against_its_own_english():
    message = Message(("{n} head: **{name}**", "{n} heads: **{name}**"),
                      ("{n} cabeça: **{name}**", "{n} cabeças: {name}"))
    assert tool.markup_problems(message) == ["form 1: ** bold markers 0, expected 2"]


def _catalogue(lang: str, plural_forms: str, entries: str = "") -> object:
    header = f'msgid ""\nmsgstr ""\n"Language: {lang}\\n"\n"Plural-Forms: {plural_forms}\\n"\n\n'
    return read_po(io.BytesIO((header + entries).encode()), locale=tool.i18n.BABEL_LOCALES[lang])


@pytest.mark.parametrize("lang", ["pt", "tr"])
def test_the_catalogues_plural_rule_is_cldrs_up_to_12(lang):
    assert tool.plural_problems(_catalogue(lang, tool.PLURAL_FORMS[lang]), lang) == []


@pytest.mark.parametrize(("lang", "plural_forms", "named"), [
    ("pt", "nplurals=2; plural=(n != 1);", "n = 1: Plural-Forms gives form 0, but n = 0 (CLDR's 'one' too) form 1"),
    ("tr", "nplurals=2; plural=(n > 1);", "n = 1: CLDR says 'one', n = 0 'other'"),
    ("tr", "nplurals=1; plural=0;", "n = 1: CLDR says 'one'"),
    ("pt", "nplurals=2; plural=(n > 2);", "n = 2: CLDR says 'other', n = 0 'one'"),
    ("pt", "nplurals=2; plural=(n > 1 ? 2 : 0);", "n = 2: Plural-Forms gives form 2 of 2"),
])
def test_the_plural_check_fails_on_a_rule_that_is_not_cldrs(lang, plural_forms, named):
    found = tool.plural_problems(_catalogue(lang, plural_forms), lang)
    assert any(named in p for p in found), found


def test_the_plural_check_counts_each_entrys_forms(tmp_path):
    entries = 'msgid "{n} head"\nmsgid_plural "{n} heads"\nmsgstr[0] "{n} cabeça"\n\n'
    found = tool.plural_problems(_catalogue("pt", tool.PLURAL_FORMS["pt"], entries), "pt")
    assert found == ["'{n} head': 1 forms, the header says 2"]
    path = tmp_path / "demo.po"  # one form too many: babel would drop it; the tool's reader refuses the file
    path.write_text(f'msgid ""\nmsgstr ""\n"Plural-Forms: {tool.PLURAL_FORMS["tr"]}\\n"\n\n' + entries
                    + 'msgid "{n} key"\nmsgid_plural "{n} keys"\nmsgstr[0] "a"\nmsgstr[1] "b"\nmsgstr[2] "c"\n',
                    encoding="utf-8")
    with pytest.raises(PoFileError, match="more translations than num_plurals"):
        tool.read(path, "tr", "demo")


@pytest.mark.parametrize(("lang", "text", "left_in_english"), [
    ("pt", "the token", True), ("tr", "Query token", True), ("pt", "Berlin", True),
    ("pt", "{n} token", False), ("pt", "{n} tokens", False), ("tr", "{n} token", False), ("tr", "Berlin", False),
    ("pt", "dim {j}", False), ("tr", "dim {j}", True), ("pt", "h{h}", False), ("tr", "logit {z} ({j})", False),
    ("pt", "1 · Embeddings X", False), ("tr", "top-k {k}", False), ("pt", "`W_q` = `X @ W`", False),
])
def test_a_translation_left_in_english_must_be_made_of_shared_terms(lang, text, left_in_english):
    found = tool.same_as_english(Message(text, text), SHARED[lang])
    assert bool(found) is left_in_english, found
    assert tool.same_as_english(Message(text, text + " ."), SHARED[lang]) == []  # translated: not compared
