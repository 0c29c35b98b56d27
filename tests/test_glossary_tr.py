"""The Turkish glossary: an attention head is a "kafa" in every catalogue, never a "baş" (two words for one thing
confuse a learner). Reads the .po files only, no app."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

TR = Path(__file__).resolve().parents[1] / "explorer" / "locale" / "tr" / "LC_MESSAGES"
CATALOGUES = sorted(TR.glob("*.po"))

HEAD = re.compile(r"\bheads?\b", re.IGNORECASE)
NOT_PROSE = re.compile(r"\{[^{}]*\}|`[^`]*`")  # {placeholders} and `code` name no head in words
# "baş" and the inflections a head took (başı, başın, başını, başının, başıyla, başa, baştan, başlar, başları,
# başların, başlarının, başlı as in "çok başlı"); "başına" (per), başka, başla-, başar-, başkent are other words.
BAS_AS_HEAD = re.compile(r"\bbaş(?:ı|ın|ını|ının|ıyla|a|tan|lar|ları|ların|larının|lı)?\b", re.IGNORECASE)
# The same spellings with another meaning, removed before the search above:
NOT_A_HEAD = re.compile(
    r"\bbaşa (?:geç|gel|kon|dön|başka|hangi)"  # başa geçer/gelir/konan/döner, "başa hangi token gelirse": first
    r"|\bbaştan başla"  # "Baştan başla": start over
    r"|\bbaşlar(?=[.:;)]|$)",  # the verb "başlar" (begins) ends its clause: "… ile başlar.", "… konumunda başlar)"
    re.IGNORECASE,
)


def _messages():
    for path in CATALOGUES:
        with path.open("rb") as f:
            catalog = read_po(f, locale="tr")
        for message in catalog:
            if not message.id:
                continue
            ids = message.id if isinstance(message.id, tuple) else (message.id,)
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            yield path.name, ids, [s or "" for s in strings]


def test_the_catalogues_are_found():
    assert len(CATALOGUES) >= 10 and (TR / "sinks.po") in CATALOGUES


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: p.stem)
def test_every_message_about_a_head_says_kafa(path):
    wrong = [(ids[0], s) for name, ids, strings in _messages() if name == path.name
             if any(HEAD.search(NOT_PROSE.sub(" ", i)) for i in ids)
             for s in strings if "kafa" not in s.lower()]
    assert not wrong, "\n".join(f"{msgid!r} -> {s!r}" for msgid, s in wrong)


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: p.stem)
def test_no_message_calls_a_head_bas(path):
    wrong = [(ids[0], found) for name, ids, strings in _messages() if name == path.name
             for s in strings if (found := BAS_AS_HEAD.findall(NOT_A_HEAD.sub(" ", s)))]
    assert not wrong, "\n".join(f"{msgid!r}: {found}" for msgid, found in wrong)


@pytest.mark.parametrize(("text", "flagged"), [
    ("en güçlü baş", True), ("{heads} baştan {over} tanesi", True), ("anahtar/değer başıyla", True),
    ("eşit dağıtan başlar için", True), ("Çok başlı dikkat", True),
    ("token başına", False), ("başka bir token", False), ("Başlıyor…", False), ("Fransa'nın başkenti", False),
    ("{new} başa geçer", False), ("başa hangi token gelirse", False), ("Baştan başla", False),
    ("bu x̂ ile başlar.", False), ("en güçlü kafa", False),
])
def test_the_search_tells_a_head_from_the_other_words(text, flagged):
    assert bool(BAS_AS_HEAD.search(NOT_A_HEAD.sub(" ", text))) is flagged
