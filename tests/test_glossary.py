"""The glossary (``explorer/locale/glossary.toml``, shown as ``docs/glossary.pt.md`` and ``docs/glossary.tr.md``): each
term of the field has ONE translation per language, and every catalogue uses it. Where an English message uses a
term, its translation uses the glossary's word (a stem, any ending: "kafa" covers kafası, kafaların); no translation
uses a word the glossary rules out ("engelli", "tümevarım", "token'ı", an attention head called "baş"); a lesson is
named as the sidebar names it. Reads the .po files only, no app. Grown from the Turkish "kafa, never baş" test.
"""

from __future__ import annotations

import io

import pytest
from babel.messages.pofile import read_po

from tools import i18n as tool

GLOSSARY = tool.glossary()
CATALOGUES = list(tool.catalogues())
TITLES = {lang: tool.lesson_titles(lang) for lang in ("pt", "tr")}
DRIFT = [d for lang, domain, catalog in CATALOGUES
         for d in tool.glossary_drift(lang, domain, catalog, GLOSSARY.terms, TITLES[lang])]


def test_the_catalogues_and_the_glossary_are_found():
    assert {lang for lang, _d, _c in CATALOGUES} == {"pt", "tr"}
    assert len(CATALOGUES) >= 26 and ("tr", "sinks") in {(lang, d) for lang, d, _c in CATALOGUES}
    names = {t.en.split(" (")[0] for t in GLOSSARY.terms}
    assert names >= {"query", "key", "value", "attention weights", "score", "logit", "head", "multi-head attention",
                     "induction head", "attention sink", "causal mask", "padding", "KV cache", "embedding",
                     "residual stream", "token", "batch", "uniform", "layer", "softmax", "rank", "shape"}
    assert all(t.why["pt"] and t.why["tr"] for t in GLOSSARY.terms)


@pytest.mark.parametrize(("lang", "domain"), [(lang, d) for lang, d, _c in CATALOGUES], ids=lambda x: x)
def test_every_catalogue_follows_the_glossary(lang, domain):
    wrong = [d for d in DRIFT if (d.lang, d.domain) == (lang, domain)]
    assert not wrong, "\n".join(map(str, wrong))


@pytest.mark.parametrize("lang", ["pt", "tr"])
def test_the_glossary_documents_are_current(lang):
    path = tool.ROOT / "docs" / f"glossary.{lang}.md"
    assert path.read_text(encoding="utf-8") == tool.glossary_markdown(lang, GLOSSARY), (
        f"{path.name} is not what explorer/locale/glossary.toml says: run python tools/i18n.py glossary")


def _catalogue(lang: str, pairs: list[tuple[str, str]]):
    body = "".join(f'msgid "{a}"\nmsgstr "{b}"\n\n' for a, b in pairs)
    header = f'msgid ""\nmsgstr ""\n"Language: {lang}\\n"\n\n'
    return read_po(io.BytesIO((header + body).encode()), locale=lang)


BROKEN = {  # (English, translation) -> the glossary term the check must name
    "tr": [(("top induction heads", "en iyi tümevarım kafaları"), "induction head"),
           (("False (blocked)", "False (engelli)"), "blocked (by a mask)"),
           (("the query token", "sorgu token'ı"), "token"),
           (("the query token", "sorgu tokenı"), "token"),
           (("uniform: {x}", "tekdüze: {x}"), "uniform"),
           (("the strongest head", "en güçlü baş"), "head (attention head)"),
           (("Sentences in a batch", "Bir toplu işteki cümleler"), "batch"),
           (("the softmax of the scores", "skorların softmax'idir"), "softmax"),
           (("h{h}", "k{h}"), "head code (h0, L18H6)"),
           (("Why divide by √d_k", "Neden bölünür"), tool.LESSON_TITLE),
           (("See [Why divide by √d_k]({link}).", "[Neden bölünür]({link}) bakın."), tool.LESSON_TITLE)],
    "pt": [(("rank", "posto"), "rank (of a token)"),
           (("the token embedding", "a embedding de tokens"), "embedding"),
           (("induction score", "escore de indução"), "induction score"),
           (("shape [n, n]", "formato [n, n]"), "shape"),
           (("The new query attends over every key", "A nova consulta atende a todas as chaves"), "attend (to)")],
}
FINE = {
    "tr": [("top induction heads", "en iyi indüksiyon kafaları"), ("False (blocked)", "False (engellenmiş)"),
           ("the query token", "sorgu tokeni"), ("the tokens", "tokenler"), ("token per head", "kafa başına token"),
           ("the softmax of the scores", "skorların softmax'ıdır"),
           ("Multi-head attention runs several", "Çok kafalı dikkat (literatürde *çok başlı dikkat*) birkaçını"),
           ("h{h}", "h{h}"), ("Why divide by √d_k", "Neden √d_k'ye bölüyoruz")],
    "pt": [("rank", "posição"), ("the token embedding", "o embedding de tokens"), ("shape [n, n]", "forma [n, n]"),
           ("The new query attends over every key", "A nova consulta presta atenção a todas as chaves")],
}


@pytest.mark.parametrize("lang", ["pt", "tr"])
def test_the_check_names_each_broken_translation_and_passes_a_right_one(lang):
    titles = TITLES[lang]
    for (english, text), term in BROKEN[lang]:
        found = tool.glossary_drift(lang, "demo", _catalogue(lang, [(english, text)]), GLOSSARY.terms, titles)
        assert term in {d.term for d in found}, (english, text, [str(d) for d in found])
    found = tool.glossary_drift(lang, "demo", _catalogue(lang, FINE[lang]), GLOSSARY.terms, titles)
    assert not found, [str(d) for d in found]


HEAD_AS_BAS = next(n for t in GLOSSARY.terms if t.en.startswith("head (") for n in t.never["tr"]
                   if "aş" in n.pattern.pattern)


@pytest.mark.parametrize(("text", "flagged"), [
    ("en güçlü baş", True), ("{heads} baştan {over} tanesi", True), ("anahtar/değer başıyla", True),
    ("eşit dağıtan başlar için", True), ("Çok başlı dikkat", True),
    ("token başına", False), ("başka bir token", False), ("Başlıyor…", False), ("Fransa'nın başkenti", False),
    ("{new} başa geçer", False), ("başa hangi token gelirse", False), ("Baştan başla", False),
    ("bu x̂ ile başlar.", False), ("en güçlü kafa", False), ("(literatürde *çok başlı dikkat*)", False),
])
def test_the_search_tells_a_head_from_the_other_words(text, flagged):
    assert bool(HEAD_AS_BAS.find(tool.prose(text))) is flagged
