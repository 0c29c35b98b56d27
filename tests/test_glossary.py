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

PART_2 = {"real_model", "causes", "kv_cache", "sinks", "training"}
"""The lessons whose shared messages are moving into the shell's catalogue (issue 46): translated once after the
move (issue 48, part 2), so their drift is listed below instead of fixed here."""

# (language, catalogue, glossary term, message): the drift the translation review of 2026-12-07 found in the
# lessons of PART_2 and that is still there. The message is named by its start ("…[…]…": its start and its end when
# the start alone is not one message). Part 2 of issue 48 fixes these translations and REMOVES THESE LINES; a line
# whose drift is gone fails test_every_known_drift_still_exists, so the list cannot go stale.
KNOWN_DRIFT = [
    # review tr #5 ("kafalı ve kafasız") and minor ("Kafa kafa")
    ('tr', 'causes', 'head (attention head)', 'Per head: which head carries i'),
    ('tr', 'causes', 'head (attention head)', 'running the {n}-token prompt w'),
    # review tr #3: "tümevarım kafası"
    ('tr', 'causes', 'induction head', 'Here the induction heads matte'),
    ('tr', 'causes', 'induction head', "Here the induction heads' knoc"),
    ('tr', 'causes', 'induction head', 'Induction heads on a repeated '),
    ('tr', 'causes', 'induction head', 'Induction heads to knock out'),
    ('tr', 'causes', 'induction head', 'The top {n} induction head by '),
    ('tr', 'causes', 'induction head', 'induction score of every head'),
    ('tr', 'causes', 'induction head', 'top {n} induction head'),
    ('tr', 'causes', 'induction head', '{n} random word tokens written'),
    # review tr #3: "tümevarım skoru"
    ('tr', 'causes', 'induction score', 'The top {n} induction head by '),
    ('tr', 'causes', 'induction score', 'induction score of every head'),
    ('tr', 'causes', 'induction score', '{n} random word tokens written'),
    # not in the review: the link's text differs from the sinks lesson's title
    ('tr', 'kv_cache', 'lesson title', 'Why most heads look at the fir'),
    # review tr minor: "çıkış matrisi" (output is çıktı)
    ('tr', 'kv_cache', 'output', 'The weights file stores the token embedding ({share} of the parameters;[…]others}.'),
    ('tr', 'kv_cache', 'output', 'The weights file stores the to[…]t) as {stored}.'),
    # review tr minor: "denetimleri"
    ('tr', 'real_model', 'control (a widget of the app)', 'This lesson reads its own prom'),
    # review tr minor: "et al." (vd.)
    ('tr', 'real_model', 'et al.', 'Each pair of coordinates of a '),
    ('tr', 'real_model', 'et al.', '{model} has {heads} query head'),
    # review tr minor: "çıkış matrisi", "çıkış izdüşümü" (output is çıktı)
    ('tr', 'real_model', 'output', "The last position's logits ove"),
    ('tr', 'real_model', 'output', 'the output matrix behind every'),
    ('tr', 'real_model', 'output', 'the token embedding (also the '),
    # review tr minor: "biçim" (şekil)
    ('tr', 'real_model', 'shape', 'shape [n, d_head] = [{n}, {dh}'),
    ('tr', 'real_model', 'shape', 'shape [n, {half}] · pair 0 tur'),
    ('tr', 'real_model', 'shape', 'shape [n_q, n_k] = [{n}, {n}] '),
    ('tr', 'real_model', 'shape', 'shape [{n}, {n}] · every cell,'),
    ('tr', 'real_model', 'shape', 'shape [{n}, {n}] · masked cell'),
    ('tr', 'real_model', 'shape', 'x: the residual stream enterin'),
    # review tr #14: "şaşkınlık" alone
    ('tr', 'sinks', 'perplexity', '**Measured on your text**: wit[…]s after the window.'),
    ('tr', 'sinks', 'perplexity', '**Measured on your text**: wit[…]} after the window.'),
    ('tr', 'sinks', 'perplexity', 'A window stops the cache growi'),
    ('tr', 'sinks', 'perplexity', 'At rank {rank} the latent cach'),
    ('tr', 'sinks', 'perplexity', 'At the same {floats} floats per token per layer, M'),
    ('tr', 'sinks', 'perplexity', 'At the same {floats} floats per token per layer, o'),
    ('tr', 'sinks', 'perplexity', 'Here you would see how much of'),
    ('tr', 'sinks', 'perplexity', 'Perplexity = exp(mean next-tok'),
    ('tr', 'sinks', 'perplexity', 'The model keeps {bytes} bytes '),
    ('tr', 'sinks', 'perplexity', 'These bytes come from the form'),
    ('tr', 'sinks', 'perplexity', "With {kept}, StreamingLLM's nu[…]s. This page shows the positions kept."),
    ('tr', 'sinks', 'perplexity', "With {kept}, StreamingLLM's nu[…]y. This page shows the positions kept."),
    ('tr', 'sinks', 'perplexity', 'perplexity'),
    ('tr', 'sinks', 'perplexity', 'perplexity (log)'),
    ('tr', 'sinks', 'perplexity', 'perplexity over the positions '),
    ('tr', 'sinks', 'perplexity', 'the model as trained: perplexi'),
    ('tr', 'sinks', 'perplexity', '{name}: {bytes} bytes per toke'),
    # review tr minor: "softmax'tir", "softmax'in"
    ('tr', 'sinks', 'softmax', 'Each row of an attention map i'),
    # review tr #6: "geniş kafalı"
    ('tr', 'training', 'head (attention head)', 'The lessons say dividing the s'),
    # review tr #11: "tekdüze"
    ('tr', 'training', 'uniform', 'Freshly initialised ({init}, s'),
    ('tr', 'training', 'uniform', 'Until step {start} the loss st'),
    ('tr', 'training', 'uniform', 'ln {vocab} = {value}: a unifor'),
]


def _names(key: str, msgid: str) -> bool:
    if "[…]" in key:
        start, end = key.split("[…]")
        return msgid.startswith(start) and msgid.endswith(end)
    return msgid == key or (len(key) >= 30 and msgid.startswith(key))


def _known(d: tool.Drift) -> bool:
    return any((d.lang, d.domain, d.term) == k[:3] and _names(k[3], d.msgid) for k in KNOWN_DRIFT)


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
    wrong = [d for d in DRIFT if (d.lang, d.domain) == (lang, domain) and not _known(d)]
    assert not wrong, "\n".join(map(str, wrong))


def test_known_drift_is_only_in_the_lessons_part_2_translates():
    assert {k[1] for k in KNOWN_DRIFT} <= PART_2
    assert len(set(KNOWN_DRIFT)) == len(KNOWN_DRIFT)


def test_every_known_drift_still_exists():
    """Each line names one message of its catalogue, and that message still breaks that term."""
    msgids = {(lang, d): [m.id[0] if isinstance(m.id, tuple) else m.id for m in c if m.id] for lang, d, c in CATALOGUES}
    gone = []
    for lang, domain, term, key in KNOWN_DRIFT:
        named = [m for m in msgids[(lang, domain)] if _names(key, m)]
        assert len(named) == 1, f"{(lang, domain, term, key)} names {len(named)} messages"
        if not any((d.lang, d.domain, d.term, d.msgid) == (lang, domain, term, named[0]) for d in DRIFT):
            gone.append((lang, domain, term, key))
    assert not gone, "fixed: remove from KNOWN_DRIFT:\n" + "\n".join(map(repr, gone))


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
