"""The real model's door (``explorer.shell.llm``) in Português and Türkçe (issue 31): the prompt box's label,
its warnings (a prompt cut at the lesson's limit, an empty prompt, a link too long for the box), the missing-weights
note, the loading spinner and the model's description speak the run's language, with no English sentence left.

The AppTests run the door alone, on the model the door serves in tests (the tiny SmolLM2 with SmolLM2's tokenizer,
``tests/conftest.py``; the shipped door for the missing-weights note): the messages are the door's, whichever lesson
opens it."""

from __future__ import annotations

import contextlib

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from explorer.shell import i18n, llm
from tests.apptest_utils import english_left
from tests.shell.test_llm import SMOLLM2

LANGS = ("pt", "tr")
WHAT = {"en": "", "pt": "", "tr": ""}  # the lesson's own sentence (its domain, not the door's): left out here
LONG = "the cat sat " * 6  # 19 tokens of SmolLM2's tokenizer: more than the door's limit below (8)


def door() -> None:
    """A page that is only the door: :func:`llm.model_or_explain` and the prompt box (a lesson's declared prompt
    control, here the KV cache lesson's under its own key and default)."""
    from dataclasses import replace

    import streamlit as st

    from explorer.lessons.kv_cache import CONTROLS
    from explorer.shell import i18n, llm

    i18n.activate(st.query_params.get("lang", "en"))
    llm.model_or_explain("")
    llm.prompt_input(replace(CONTROLS["prompt"], key="door_prompt", default="the cat sat"), max_tokens=8)


def run(lang: str, *, query: dict | None = None, prompt: str | None = None) -> AppTest:
    at = AppTest.from_function(door, default_timeout=60)
    if lang != "en":
        at.query_params["lang"] = lang
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    if prompt is not None:
        at.text_area(key="door_prompt").set_value(prompt).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def visitor_text(at: AppTest) -> tuple[str, ...]:
    """What the door shows as plain text: the visitor's prompt (or where a cut prompt ends), the loader's message."""
    return tuple(t.value.lstrip("…") for t in at.text)


def warnings(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning)


@pytest.mark.slow
@pytest.mark.parametrize(("state", "english"), [
    ("cut", "Your prompt is 19 tokens; this lesson reads the first 8"),
    ("empty", "The prompt is empty"),
    ("too-long-link", "text of at most 2000 characters"),
])
def test_the_prompt_boxs_warnings_speak_the_language(state, english):
    kwargs = {"cut": dict(prompt=LONG), "empty": dict(prompt=""),
              "too-long-link": dict(query={"door_prompt": "x" * (llm.PROMPT_MAX_CHARS + 1)})}[state]
    en = run("en", **kwargs)
    assert english in warnings(en), warnings(en)
    assert en.text_area(key="door_prompt").label == "Prompt"
    for lang, label in (("pt", "Prompt"), ("tr", "İstem (prompt)")):
        other = run(lang, **kwargs)
        assert english_left(en, other, allowed=visitor_text(en)) == [], lang
        assert warnings(other) and warnings(other) != warnings(en), lang
        assert other.text_area(key="door_prompt").label == label
    if state == "cut":  # the true length and the limit, in the sentence
        assert "Seu prompt tem 19 tokens; esta lição lê os primeiros 8" in warnings(run("pt", **kwargs))
        assert "İsteminiz 19 token uzunluğunda; bu ders ilk 8 tokeni" in warnings(run("tr", **kwargs))
    if state == "too-long-link":
        assert "no máximo 2000 caracteres" in warnings(run("pt", **kwargs))


@pytest.mark.slow
@pytest.mark.smollm2  # the door as shipped: no weights where ATTENTION_MODEL_PATH points
def test_the_missing_weights_note_speaks_the_language(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_MODEL_PATH", str(tmp_path / "nothing-here.gguf"))
    st.cache_resource.clear()
    try:
        en = run("en")
        assert "whose weights are not available on this server" in warnings(en)
        assert [c.value for c in en.code] == [llm.INSTALL_COMMAND]
        for lang, words in (("pt", "não estão disponíveis neste servidor"), ("tr", "ağırlıkları bu sunucuda yok")):
            other = run(lang)
            assert english_left(en, other, allowed=visitor_text(en)) == [], lang
            assert words in warnings(other) and [c.value for c in other.code] == [llm.INSTALL_COMMAND]
            assert [e.label for e in other.expander] == [{"pt": "O que deu errado", "tr": "Ne ters gitti"}[lang]]
    finally:
        monkeypatch.delenv("ATTENTION_MODEL_PATH")
        st.cache_resource.clear()


def test_the_spinner_and_the_description_speak_the_language(monkeypatch):
    shown = []

    @contextlib.contextmanager
    def spinner(text, **_kwargs):
        shown.append(text)
        yield

    monkeypatch.setattr(llm, "missing_weights", lambda: None)
    monkeypatch.setattr(llm, "load_model", lambda weights: "the model")
    monkeypatch.setattr(llm.st, "spinner", spinner)
    assert llm.model_or_explain("") == "the model"
    for lang in LANGS:
        with i18n.using(lang):
            assert llm.model_or_explain("") == "the model"
    assert shown[0].startswith("Loading SmolLM2-135M-Instruct (a 98 MB file")
    assert shown[1].startswith("Carregando o SmolLM2-135M-Instruct (um arquivo de 98 MB")
    assert shown[2].startswith("SmolLM2-135M-Instruct yükleniyor (4 ve 8 bitlik")
    with i18n.using("pt"):
        assert llm.describe(SMOLLM2) == ("30 camadas, 9 cabeças de consulta de d_head 64 que compartilham 3 cabeças "
                                        "de chave/valor, d_model 576")
    with i18n.using("tr"):
        assert llm.describe(SMOLLM2) == ("30 katman, 3 anahtar/değer kafasını paylaşan d_head 64 genişliğinde 9 sorgu "
                                        "kafası, d_model 576")
    assert llm.describe(SMOLLM2).startswith("30 layers, 9 query heads")  # outside a run: English
