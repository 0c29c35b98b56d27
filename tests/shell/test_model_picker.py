"""The sidebar's "Model" picker, the model in the link, and files the loader refuses (issue 50).

A server lists a folder of tiny GGUF files (``$ATTENTION_MODELS``) written by the core's own fixture writer: a
Llama and a Qwen2 it reads, and bad files: one cut in half, one with flipped header bytes, one of an architecture
the core refuses. The door's part runs in a one-line page (``AppTest.from_function``: the same ``model_or_explain``
the lessons call); the picker and the link run in the whole app on its default page (no model loaded there).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from explorer.lessons import LESSONS, ROOT, model_lessons
from explorer.shell import controls, models
from tests.apptest_utils import app_at, assert_clean, figures
from tests.core.llama_support import TINY, TINY_QWEN2, qwen_vocabulary, write_tiny_gguf


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("operator-models")
    write_tiny_gguf(folder / "tiny-llama.gguf", name="tiny-llama")
    write_tiny_gguf(folder / "tiny-qwen2.gguf", config=TINY_QWEN2, vocabulary=qwen_vocabulary(), name="tiny-qwen2")
    data = (folder / "tiny-llama.gguf").read_bytes()
    (folder / "cut.gguf").write_bytes(data[:len(data) // 2])
    flipped = bytearray(data)
    flipped[8:12] = bytes(b ^ 0xFF for b in flipped[8:12])  # the tensor count
    (folder / "flipped.gguf").write_bytes(bytes(flipped))
    write_tiny_gguf(folder / "mamba.gguf", config={**TINY, "arch": "mamba"})
    return folder


@pytest.fixture
def served(folder, monkeypatch) -> dict[str, str]:
    """The server lists ``folder``: ``{name: id}`` of its catalogue."""
    monkeypatch.setenv(models.MODELS_ENV, str(folder))
    monkeypatch.delenv(models.LOCAL_ENV, raising=False)
    return {e.name: e.id for e in models.catalogue()} | {"_folder": str(folder)}


def door_page():
    import streamlit as st

    from explorer.shell import llm

    lm = llm.model_or_explain("what the lesson shows")
    st.markdown(f"shown: {llm.model_name(lm)} / {lm.config.architecture} / {lm.config.n_layers} layers")


def shown(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("shown: "))


def run_door(query: dict | None = None, session: dict | None = None) -> AppTest:
    at = AppTest.from_function(door_page, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for k, v in (session or {}).items():
        at.session_state[k] = v
    return at.run()


def test_the_link_loads_the_model_it_names(served):
    at = run_door({"model": served["tiny-qwen2"]})
    assert_clean(at)
    assert shown(at) == "shown: tiny-qwen2 / qwen2 / 2 layers"
    assert at.session_state["_model_shown"] == served["tiny-qwen2"]
    assert not at.warning


def test_without_a_choice_the_built_in_model_opens(served):
    at = run_door()
    assert_clean(at)
    assert shown(at).startswith("shown: tiny-smollm2-test / llama / 30 layers")  # the tests' built-in (conftest)


@pytest.mark.parametrize("bad, reason", [("cut", "truncated GGUF file"), ("flipped", "GGUF"),
                                         ("mamba", "unsupported model architecture: general.architecture is 'mamba'")])
def test_a_file_the_loader_refuses_keeps_the_model_shown_before(served, bad, reason):
    at = run_door(session={controls.MODEL_WIDGET: served["tiny-qwen2"]})
    assert shown(at).startswith("shown: tiny-qwen2")
    at.session_state[controls.MODEL_WIDGET] = served[bad]
    at.run()
    assert_clean(at)
    assert shown(at).startswith("shown: tiny-qwen2")  # the model it had
    warning = [w.value for w in at.warning]
    assert len(warning) == 1 and warning[0].startswith(f"**{bad} could not be loaded**"), warning
    assert any(reason in t.value for t in at.text), [t.value for t in at.text]  # the core's reason, as text
    assert not any(str(served) in t.value or "/" in t.value for t in at.text)  # no path
    assert "qwen2" in at.caption[0].value and "gemma3" in at.caption[0].value  # what this app reads
    at.run()
    assert not at.warning and shown(at).startswith("shown: tiny-qwen2")  # said once


def test_a_refused_first_choice_opens_the_built_in(served):
    at = run_door({"model": served["mamba"]})
    assert_clean(at)
    assert shown(at).startswith("shown: tiny-smollm2")
    assert any("could not be loaded" in w.value for w in at.warning)


def test_a_file_too_big_for_the_memory_is_refused_with_the_estimate(served, monkeypatch):
    """The header is fine: the load itself refuses (the core's memory check), and the page keeps its model."""
    from attention.llama import memory

    st.cache_resource.clear()  # the tiny Llama may be loaded by an earlier test
    monkeypatch.setattr(memory, "available_bytes", lambda: 10**6)
    at = run_door({"model": served["tiny-llama"]})
    assert_clean(at)
    assert shown(at).startswith("shown: tiny-smollm2")
    assert any("too big for this server's memory: needs about" in t.value and "0.0 GB free" in t.value
               for t in at.text), [t.value for t in at.text]


def test_the_sidebar_lists_the_catalogue_and_the_link_follows_the_choice(served):
    at = app_at()
    picker = at.sidebar.selectbox(key=controls.MODEL_WIDGET)
    assert picker.value == models.DEFAULT_ID and "model" not in at.query_params
    labels = picker.proto.options
    assert labels[0].startswith("SmolLM2-135M-Instruct · llama · 98 MB")
    assert any(label.startswith("tiny-qwen2 · qwen2 · ") for label in labels)
    assert any(label.startswith("mamba · mamba · ") and label.endswith("cannot be read here") for label in labels)
    assert not any("/" in label for label in labels)  # names, never paths
    assert picker.proto.help.startswith('The lessons "Inside one transformer block", "Inside a real model", ')
    assert all(f'"{lesson.title}"' in picker.proto.help for lesson in model_lessons())
    picker.set_value(served["tiny-qwen2"]).run()
    assert at.query_params["model"] == served["tiny-qwen2"]
    at.sidebar.selectbox(key=controls.MODEL_WIDGET).set_value(models.DEFAULT_ID).run()
    assert "model" not in at.query_params  # the default leaves the link


def test_a_file_the_header_refuses_is_refused_on_every_page_by_the_picker_and_by_a_link(served):
    """On a page that loads no model (the default lesson) a file the catalogue cannot read is refused at once: the
    picker keeps its model (the link too), and a link's first run opens the default, saying so."""
    at = app_at()
    at.sidebar.selectbox(key=controls.MODEL_WIDGET).set_value(served["tiny-qwen2"]).run()
    at.sidebar.selectbox(key=controls.MODEL_WIDGET).set_value(served["cut"]).run()
    assert_clean(at)
    assert at.sidebar.selectbox(key=controls.MODEL_WIDGET).value == served["tiny-qwen2"]
    assert at.query_params["model"] == served["tiny-qwen2"]
    warning = [w.value for w in at.warning]
    assert any(w.startswith("**cut could not be loaded**, so this page keeps the model it had") for w in warning)
    assert any("truncated GGUF file" in t.value for t in at.text)
    at = app_at(query={"model": served["mamba"]})
    assert_clean(at)
    assert at.sidebar.selectbox(key=controls.MODEL_WIDGET).value == models.DEFAULT_ID and "model" not in at.query_params
    warning = [w.value for w in at.warning]
    assert any(w.startswith("**mamba could not be loaded**, so the default model, SmolLM2-135M-Instruct, opens")
               for w in warning), warning


def test_the_model_lessons_are_the_pages_that_run_the_model():
    """The picker's help names :func:`model_lessons`: exactly the lessons whose page runs the chosen model."""
    runs = {entry.name for entry in LESSONS
            if "llm.model_or_explain(" in (ROOT / entry.page).read_text(encoding="utf-8")}
    assert {entry.name for entry in model_lessons()} == runs


def test_a_link_to_a_model_this_server_does_not_have_warns_and_opens_the_default(served):
    at = app_at(query={"model": "llama-3-8b-0123abcd"})
    assert_clean(at)
    assert at.sidebar.selectbox(key=controls.MODEL_WIDGET).value == models.DEFAULT_ID
    warning = " ".join(w.value for w in at.warning)
    assert "model=llama-3-8b-0123abcd" in warning and served["tiny-qwen2"] in warning
    assert not any(served[bad] in warning for bad in ("cut", "flipped", "mamba"))  # only models a link may open
    assert "model" not in at.query_params


def test_a_server_with_the_built_in_model_alone_draws_no_picker_but_still_warns(monkeypatch):
    monkeypatch.delenv(models.MODELS_ENV, raising=False)
    monkeypatch.delenv(models.LOCAL_ENV, raising=False)
    at = app_at(query={"model": "tiny-qwen2-00000000"})
    assert_clean(at)
    assert not [s for s in at.sidebar.selectbox if s.key == controls.MODEL_WIDGET]
    assert any("model=tiny-qwen2-00000000" in w.value for w in at.warning)


@pytest.mark.slow
def test_the_real_model_lesson_runs_the_chosen_model_and_keeps_it_across_pages(served):
    at = app_at("real_model", query={"model": served["tiny-qwen2"]})
    assert_clean(at)
    assert at.session_state["_model_shown"] == served["tiny-qwen2"]
    assert at.sidebar.selectbox(key=controls.MODEL_WIDGET).value == served["tiny-qwen2"]
    assert at.query_params["model"] == served["tiny-qwen2"]


@pytest.mark.slow
def test_in_the_app_a_refused_choice_puts_the_picker_back_on_the_model_shown(served):
    at = app_at("real_model", query={"model": served["tiny-qwen2"]}, opened_by_link=True)
    assert at.session_state["_model_shown"] == served["tiny-qwen2"]
    at.sidebar.selectbox(key=controls.MODEL_WIDGET).set_value(served["cut"]).run()
    assert_clean(at)
    assert at.sidebar.selectbox(key=controls.MODEL_WIDGET).value == served["tiny-qwen2"]
    assert at.query_params["model"] == served["tiny-qwen2"] and at.session_state["_model_shown"] == served["tiny-qwen2"]
    assert any(w.value.startswith("**cut could not be loaded**") for w in at.warning)
    assert at.title[0].value == "Inside a real model"



@pytest.mark.slow
def test_compare_two_models_shows_both_grids_and_a_sentence_measured_from_them(served, door_model):
    from explorer.lessons.real_model import model as rm
    from explorer.shell import llm

    at = app_at("real_model")
    assert at.selectbox(key="rm_compare").value == "none" and "rm_compare" not in at.query_params
    at.selectbox(key="rm_compare").set_value(served["tiny-qwen2"]).run()
    assert_clean(at)
    assert at.query_params["rm_compare"] == served["tiny-qwen2"]  # a teacher can share the comparison
    assert {"rm_compare_a", "rm_compare_b"} <= set(figures(at))
    qwen = llm.load_model("float32", str(Path(served["_folder"]) / "tiny-qwen2.gguf"))
    ids_a = llm.prompt(door_model, rm.DEFAULT_PROMPT).ids
    ids_b = llm.prompt(qwen, llm.text(door_model, ids_a).text).ids
    sink_a, sink_b = (rm.statistics(m, i).get("sink") for m, i in ((door_model, ids_a), (qwen, ids_b)))
    sentence = next(m.value for m in at.markdown if m.value.startswith("Averaged over every head"))
    la, ha = np.unravel_index(int(np.argmax(sink_a)), sink_a.shape)
    lb, hb = np.unravel_index(int(np.argmax(sink_b)), sink_b.shape)
    assert f"is {sink_a.mean():.3f} in `tiny-smollm2-test` and {sink_b.mean():.3f} in `tiny-qwen2`" in sentence
    assert f"layer {la}, head {ha} in `tiny-smollm2-test` ({sink_a.max():.3f})" in sentence, sentence
    assert f"layer {lb}, head {hb} in `tiny-qwen2` ({sink_b.max():.3f})" in sentence, sentence
    memory = next(c.value for c in at.caption if c.value.startswith("Memory: both models are loaded at once"))
    sizes = [llm.megabytes(llm.weights_bytes(m)) for m in (door_model, qwen)]  # the picker's MB: small files read
    assert f"their weights about {sizes[0]} MB and {sizes[1]} MB in" in memory and "0.00" not in memory, memory


@pytest.mark.slow
def test_a_link_opens_the_comparison_it_names(served):
    at = app_at("real_model", query={"rm_compare": served["tiny-qwen2"]}, opened_by_link=True)
    assert_clean(at)
    assert at.selectbox(key="rm_compare").value == served["tiny-qwen2"]
    assert {"rm_compare_a", "rm_compare_b"} <= set(figures(at))
    assert at.query_params["rm_compare"] == served["tiny-qwen2"] and not at.warning
    at.selectbox(key="rm_compare").set_value("none").run()
    assert "rm_compare" not in at.query_params and "rm_compare_b" not in figures(at)


@pytest.mark.slow
@pytest.mark.parametrize("given", ["/etc/passwd", "../x", "", ["tiny", "tiny"], "none-0123abcd", "cut"])
def test_a_link_s_unknown_or_hostile_second_model_is_named_as_text_and_nothing_is_compared(served, given):
    """Like ``model=``: a value that is no id of another listed model (a path, a repeated key, an empty one) is
    warned about, shown as text, and no second model is chosen; the server reads no file for it."""
    given = served["cut"] if given == "cut" else given  # a listed id the picker offers is taken (then refused)
    at = app_at("real_model", query={"rm_compare": given}, opened_by_link=True)
    assert_clean(at)
    if given == served["cut"]:
        assert at.selectbox(key="rm_compare").value == given
        assert any(w.value.startswith("**cut could not be loaded.**") for w in at.warning)
        return
    assert at.selectbox(key="rm_compare").value == "none" and "rm_compare" not in at.query_params
    assert "rm_compare_b" not in figures(at)
    warning = [w.value for w in at.warning if "rm_compare" in w.value]
    assert len(warning) == 1, [w.value for w in at.warning]
    shown = ("2 times" if isinstance(given, list) else f"`rm_compare={given or repr(given)}`")
    assert shown in warning[0], warning[0]
    assert served["tiny-qwen2"] in warning[0] and served["cut"] not in warning[0]  # readable models as examples


@pytest.mark.slow
def test_choosing_the_compared_model_for_the_page_leaves_nothing_compared(served):
    """The page's own model is never its second: when the sidebar chooses the model compared, the comparison closes
    (no second model chosen, none in the link) and no error shows."""
    at = app_at("real_model", query={"rm_compare": served["tiny-qwen2"]}, opened_by_link=True)
    at.sidebar.selectbox(key=controls.MODEL_WIDGET).set_value(served["tiny-qwen2"]).run()
    assert_clean(at)
    assert at.selectbox(key="rm_compare").value == "none" and "rm_compare" not in at.query_params
    assert not any(o.startswith("tiny-qwen2 ·") for o in at.selectbox(key="rm_compare").options)


@pytest.fixture
def uploads_on(monkeypatch, tmp_path) -> int:
    """A server of the built-in model alone whose operator turns uploads on (a 1 MB cap), uploads saved in a
    temporary folder of this test."""
    monkeypatch.delenv(models.MODELS_ENV, raising=False)
    monkeypatch.delenv(models.LOCAL_ENV, raising=False)
    monkeypatch.setenv(models.UPLOAD_ENV, "1")
    folder = tmp_path / "uploads"
    folder.mkdir()
    monkeypatch.setattr(models, "upload_folder", lambda: folder)
    return 1


def upload_widget(at):
    return next(u for u in at.sidebar.get("file_uploader") if u.key == "_model_upload")


def test_without_the_operator_s_setting_there_is_no_upload(monkeypatch):
    monkeypatch.delenv(models.UPLOAD_ENV, raising=False)
    at = app_at()
    assert not [u for u in at.sidebar.get("file_uploader")]


def test_an_uploaded_file_is_chosen_in_this_session_only_and_its_id_is_in_the_link(uploads_on, folder):
    at = app_at()
    uploader = upload_widget(at)
    assert uploader.proto.max_upload_size_mb == 1 and "at most 1 MB" in uploader.label  # the browser's cap too
    data = (folder / "tiny-qwen2.gguf").read_bytes()
    uploader.set_value(("my qwen.gguf", data, "application/octet-stream")).run()
    assert_clean(at)
    picker = at.sidebar.selectbox(key=controls.MODEL_WIDGET)
    assert picker.value.startswith("my-qwen-") and at.query_params["model"] == picker.value
    assert any(label.startswith("my qwen · qwen2 · ") for label in picker.proto.options)
    other = app_at(query={"model": picker.value})  # another visitor: not listed, the link says so
    assert not [s for s in other.sidebar.selectbox if s.key == controls.MODEL_WIDGET]
    assert any(f"model={picker.value}" in w.value for w in other.warning)


@pytest.mark.parametrize("bad, reason", [("cut", "truncated GGUF file"), ("mamba", "unsupported model architecture"),
                                         ("big", "more than this server's upload limit of 1 MB")])
def test_a_bad_upload_is_refused_with_the_loader_s_reason_and_the_model_stays(uploads_on, folder, bad, reason):
    at = app_at()
    data = (folder / "tiny-llama.gguf").read_bytes() * 4 if bad == "big" else (folder / f"{bad}.gguf").read_bytes()
    upload_widget(at).set_value((f"{bad}.gguf", data, "application/octet-stream")).run()
    assert_clean(at)
    assert not [s for s in at.sidebar.selectbox if s.key == controls.MODEL_WIDGET]  # still the built-in alone
    assert "model" not in at.query_params
    assert any(w.value.startswith(f"**{bad}.gguf could not be loaded.**") for w in at.warning)
    assert any(reason in t.value for t in at.text), [t.value for t in at.text]
