"""The app's languages (:mod:`explorer.shell.i18n`): the catalogues are complete, numbers are written for the
language, and the language control lives in the link and keeps every other control."""

from __future__ import annotations

import ast
import re

import pytest

from explorer.lessons import LESSONS
from explorer.lessons.block import model as _block
from explorer.lessons.causes import model as _causes
from explorer.lessons.real_model import model as _real_model
from explorer.lessons.sinks import model as _sinks
from explorer.lessons.training import model as _training
from explorer.shell import i18n
from tests.apptest_utils import ROOT, app_at


def _tool():
    from tools import i18n as tool

    return tool


@pytest.mark.slow
def test_every_message_is_in_both_catalogues_translated_and_not_fuzzy():
    """A message added to the code and not extracted, an empty or fuzzy translation, or a translation that drops
    or renames a {placeholder} fails here, with the command that fixes it."""
    problems = _tool().problems()
    assert not problems, "\n".join(problems[:40]) + (f"\n… and {len(problems) - 40} more" if len(problems) > 40 else "")


def test_the_checker_catches_a_missing_a_fuzzy_and_a_broken_translation(tmp_path, monkeypatch):
    tool = _tool()
    module = tmp_path / "explorer" / "lessons" / "demo" / "page.py"
    module.parent.mkdir(parents=True)
    (module.parent / "page.py").write_text(
        'from explorer.shell.i18n import N_, translator\n_, _n = translator(__name__)\n'
        '_("Hello {name}").format(name="x")\n_n("{n} head", "{n} heads", 2)\nN_("marked")\n_("left out")\n')
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "domain_files", lambda: {"demo": [module]})
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path / "locale")
    tool.cmd_extract()
    for lang in ("pt", "tr"):
        catalog = tool.read(i18n.po_path(lang, "demo"), lang, "demo")
        for message in catalog:
            if message.id == "Hello {name}":
                message.string = "Olá {nome}"  # a renamed placeholder
            elif message.id == ("{n} head", "{n} heads"):
                message.string = ("{n} cabeça", "{n} cabeças")
            elif message.id == "marked":
                message.string, message.flags = "marcado", {"fuzzy"}
        tool.write(i18n.po_path(lang, "demo"), catalog)
    found = tool.problems()
    assert any("'Hello {name}': placeholders ['nome'], expected ['name']" in p for p in found)
    assert any("'marked': fuzzy" in p for p in found)
    assert any("'left out': untranslated" in p for p in found)
    assert not any("head" in p for p in found)


@pytest.mark.parametrize(("lang", "expected"), [
    ("en", ("0.1235", "1234.500", "0", "46,080", "93.1%", ".,", "1.2e-06", "-3.50e+02")),
    ("pt", ("0,1235", "1234,500", "0", "46.080", "93,1%", ",.", "1,2e-06", "-3,50e+02")),
    ("tr", ("0,1235", "1234,500", "0", "46.080", "%93,1", ",.", "1,2e-06", "-3,50e+02")),
])
def test_numbers_are_written_for_the_language(lang, expected):
    with i18n.using(lang):
        got = (i18n.number(0.12345), i18n.number(1234.5, 3), i18n.number(-0.0001, 0), i18n.integer(46080),
               i18n.percent(0.931), i18n.plotly_separators(), i18n.scientific(1.23e-6), i18n.scientific(-350, 2))
    assert got == expected
    assert i18n.number(float("nan")) == "—" and i18n.number(None) == "—"


def test_significant_writes_large_numbers_whole_and_small_ones_to_their_digits():
    assert [i18n.significant(x, 3, lang="en") for x in (1224.4, 999.6, 3.2571, 1e-5, -12345.6)] == [
        "1224", "1000", "3.26", "1e-05", "-12346"]
    assert i18n.significant(1224.4, 3, lang="pt") == "1224" and i18n.significant(75.08, 4, lang="tr") == "75,08"


def test_languages_domains_and_the_browsers_locale():
    assert list(i18n.LANGUAGES) == ["en", "pt", "tr"]
    assert i18n.domain_of("explorer.lessons.walkthrough.draw") == "walkthrough"
    assert i18n.domain_of("explorer.shell.controls") == i18n.domain_of("streamlit_app") == "shell"
    assert i18n.domain_of(str(ROOT / "explorer" / "lessons" / "causal" / "page.py")) == "causal"
    assert i18n.domain_of(str(ROOT / "streamlit_app.py")) == "shell"
    with pytest.raises(ValueError, match="pass translator\\(__file__\\)"):
        i18n.domain_of("__main__")
    assert [i18n.from_locale(x) for x in ("pt-BR", "pt_PT", "tr", "TR-tr", "en-GB", "de-DE", None, "")] == [
        "pt", "pt", "tr", "tr", "en", "en", "en", "en"]
    assert i18n.current() == "en"
    with i18n.using("tr"):
        assert i18n.current() == "tr"
    assert i18n.current() == "en"
    with pytest.raises(ValueError, match="lang must be one of en, pt, tr"):
        i18n.activate("de")


@pytest.mark.slow
def test_the_language_is_in_the_link_and_keeps_every_other_control():
    at = app_at("walkthrough", query={"lang": "pt", "seed": "9", "d_k": "8"})
    assert not at.exception
    assert at.selectbox(key="_lang_choice").value == "pt" and at.query_params["lang"] == "pt"
    at.selectbox(key="_lang_choice").set_value("tr").run()
    assert at.query_params["lang"] == "tr" and at.query_params["seed"] == "9" and at.query_params["d_k"] == "8"
    assert at.number_input(key="seed").value == 9


def test_a_language_the_app_does_not_have_warns_and_leaves_the_link():
    at = app_at("walkthrough", query={"lang": "de"})
    assert not at.exception and at.selectbox(key="_lang_choice").value == "en"
    assert any("`lang=de` is not valid (lang must be one of en, pt, tr)" in w.value for w in at.warning)
    assert "lang" not in at.query_params


def test_a_section_recorded_in_one_language_is_not_replayed_in_another():
    from explorer.shell.cache import section

    calls = []

    @section
    def say(x: int) -> None:
        calls.append((x, i18n.current()))

    say(1)
    say(1)
    with i18n.using("pt"):
        say(1)
        say(1)
    assert calls == [(1, "en"), (1, "pt")]


def test_links_to_other_lessons_keep_the_language():
    assert i18n.with_lang("./scaling?scale_d_k=256") == "./scaling?scale_d_k=256"
    with i18n.using("pt"):
        assert i18n.with_lang("./scaling?scale_d_k=256") == "./scaling?scale_d_k=256&lang=pt"
        assert i18n.with_lang("./real-model") == "./real-model?lang=pt"
        assert i18n.with_lang("./quiz?lang=tr&seed=3#q2") == "./quiz?seed=3&lang=pt#q2"
    assert i18n.with_lang("./quiz?lang=tr&seed=3") == "./quiz?seed=3"


def test_every_fragment_runs_in_the_pages_language():
    """A fragment's rerun runs without the entrypoint, so its language came back as English (issue 30): every part
    that reruns alone is a ``controls.fragment``, which hands the run's language to its reruns
    (``tests/e2e/test_fragments.py`` checks the reruns on the real server)."""
    direct = [f"{path.relative_to(ROOT)}:{i}" for path in sorted((ROOT / "explorer").rglob("*.py"))
              for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if "st.fragment" in line and path != ROOT / "explorer" / "shell" / "controls" / "sidebar.py"]
    assert not direct, f"st.fragment used directly (use controls.fragment): {direct}"
    used = [path for path in (ROOT / "explorer" / "lessons").glob("*/page.py")
            if "@controls.fragment" in path.read_text(encoding="utf-8")]
    assert len(used) >= 7, used  # the pages with a part that reruns alone


@pytest.mark.parametrize(("lang", "text", "expected"), [
    ("tr", "indüksiyon skoru", "İndüksiyon skoru"),  # str.upper: "Indüksiyon skoru"
    ("tr", "ilk tokene dikkat", "İlk tokene dikkat"),
    ("tr", "ışık", "Işık"),
    ("tr", "**önceki token**", "**Önceki token**"),
    ("tr", "“en önemli” kafa", "“En önemli” kafa"),
    ("pt", "índice", "Índice"),
    ("pt", "ilha", "Ilha"),
    ("en", "induction score", "Induction score"),
    ("en", "KV cache", "KV cache"),  # str.capitalize: "Kv cache"
    ("tr", "3 kafa", "3 kafa"),
    ("tr", "", ""),
])
def test_capitalising_follows_the_languages_rules(lang, text, expected):
    assert i18n.capitalize(text, lang) == expected
    with i18n.using(lang):
        assert i18n.capitalize(text) == expected


CASE_CHANGES = {"upper", "lower", "capitalize", "title", "casefold", "swapcase"}
NOT_TRANSLATED = {  # (file, call): a call by one of those names that does not change a translated text's case
    ("explorer/lessons/block/page.py", "draw.title()"): "the lesson's function that draws its title",
    ("explorer/lessons/causes/page.py", "draw.title()"): "the lesson's function that draws its title",
    ("explorer/lessons/kv_cache/page.py", "draw.title()"): "the lesson's function that draws its title",
    ("explorer/lessons/real_model/page.py", "draw.title()"): "the lesson's function that draws its title",
    ("explorer/lessons/sinks/page.py", "draw.title()"): "the lesson's function that draws its title",
    ("explorer/lessons/training/model.py", "str(value).lower()"): "a bool written as a link value: true/false",
    ("explorer/lessons/two_sentences/draw.py", "name.lower()"): "sentence A/B in a widget key",
    ("explorer/shell/blas.py", "raw.lower()"): "an environment variable's value",
    ("explorer/shell/models.py", "name.lower()"): "a model's name made a link id (a slug)",
    ("explorer/shell/models.py", 'env.get(LOCAL_ENV, "").strip().lower()'): "an environment variable's value",
    ("explorer/shell/controls/link_values.py", "str(value).lower()"): "a bool written as a link value",
    ("explorer/shell/controls/link_values.py", "given.strip().lower()"): "a link value read back",
    ("explorer/shell/controls/declare.py", "raw.lower()"): "a link value read back",
    ("explorer/shell/i18n.py", 'str(locale).replace("_", "-").split("-")[0].strip().lower()'): "a browser's locale",
    ("explorer/shell/i18n.py", "ch.upper()"): "capitalize itself",
    ("explorer/shell/llm.py", 'os.environ.get(llama.WEIGHTS_ENV, "").strip().lower()'): "an environment",
}
PART_2 = {  # issue 48 part 2 (the lesson is being rewritten): these go through i18n.capitalize, then leave this list
    ("explorer/lessons/real_model/draw.py", "name[0].upper()"): "a statistic's name as a heading: 'Ilk'",
}
REWRITTEN = ("explorer/lessons/real_model/", "explorer/lessons/causes/", "explorer/lessons/kv_cache/",
             "explorer/lessons/sinks/", "explorer/lessons/training/", "explorer/shell/llm.py")


def test_no_translated_text_changes_case_but_through_capitalize():
    """``str.upper`` and its kin write Turkish capitals wrong ("Ilk" for "İlk"): every such call in the app is
    listed above as not touching a translation, or waits for part 2 of issue 48."""
    found = set()
    for path in sorted((ROOT / "explorer").rglob("*.py")) + [ROOT / "streamlit_app.py"]:
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CASE_CHANGES
                    and not node.args and not node.keywords):
                found.add((str(path.relative_to(ROOT)), ast.get_source_segment(source, node)))
    allowed = set(NOT_TRANSLATED) | set(PART_2)
    assert found <= allowed, f"use i18n.capitalize (or list why it is no translation): {sorted(found - allowed)}"
    stale = {k for k in allowed - found if not k[0].startswith(REWRITTEN)}  # the rewritten files may change anyway
    assert not stale, f"no longer in the code, remove from the list: {sorted(stale)}"


# --- no English sentence outside _() ------------------------------------------------------------------------------

_LATEX = re.compile(r"\\[A-Za-z]+")
_NOT_WORDS = re.compile(r"%\{[^}]*\}|\{[^{}]*\}|`[^`]*`|<[^>]+>|https?://\S+")
_ENGLISH_WORD = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?![\w(.])")
MARKERS = {"_", "N_", "_n"}
NOT_SHOWN_AS_IS = {  # (file, literal): an English sentence in the code that is no message, and why
    **{("explorer/lessons/__init__.py", e.title): "a lesson's title: the navigation shows _(title) (shell catalogue)"
       for e in LESSONS},
    ("explorer/lessons/two_sentences/__init__.py", "The dog sat on the rug"):
        "the lesson's example sentence B: a visitor's text, never translated",
    ("explorer/shell/controls/sidebar.py", "The cat sat on the mat"): "the example sentence: a visitor's text",
    ("explorer/shell/controls/sidebar.py", "O gato sentou no tapete"): "the example sentence's Portuguese twin",
    ("explorer/lessons/two_sentences/page.py", "O cachorro sentou no tapete"): "sentence B's Portuguese twin",
    ("explorer/shell/controls/sidebar.py", "🌐 Language · Idioma · Dil"): "the language control, in every language",
    ("explorer/lessons/walkthrough/page.py", "lesson pipeline example"): "a value in the downloaded JSON",
    ("explorer/shell/blas.py", "BLAS not reachable (library default)"): "a benchmark's header",
    ("explorer/shell/blas.py", "{} unset: the app's default"): "a benchmark's header",
    ("explorer/shell/charts/geometry.py", '"Open Sans", verdana, arial, sans-serif'): "Plotly's font family",
    ("explorer/lessons/kv_cache/model.py", "The capital of France is"):
        "the default prompt: the model's input, a visitor's text (SmolLM2 reads English), never translated",
    **{(f"explorer/lessons/{file}", prompt): "a default prompt: the model's input, a visitor's text, never translated"
       for file, prompt in (("real_model/model.py", _real_model.DEFAULT_PROMPT),
                            ("block/model.py", _block.DEFAULT_PROMPT), ("causes/model.py", _causes.DEFAULT_PROMPT),
                            ("causes/model.py", _causes.DEFAULT_CLEAN),
                            ("causes/model.py", _causes.DEFAULT_CORRUPTED))},
    ("explorer/lessons/sinks/model.py", _sinks.DEFAULT_PROMPT): "the default text: a visitor's text",
    ("explorer/lessons/training/model.py", _training.REAL_PROMPT): "the prompt SmolLM2 reads: the model's input",
    ("explorer/lessons/causes/__init__.py", "The capital of the United Kingdom is"):
        "a corrupted prompt of another length in the manifest's TEXT_STATES: a visitor's text",
}


def _is_sentence(text: str) -> bool:
    """``text`` holds at least 3 English words (formulas, {placeholders}, %{fields}, code spans and tags aside)."""
    if _LATEX.search(text):
        return False
    words = [w for w in _NOT_WORDS.sub(" ", text).split() if _ENGLISH_WORD.fullmatch(w.strip(",.;:!?()*\"'“”"))]
    return len(words) >= 3


def english_literals(path) -> list[tuple[int, str]]:
    """``[(line, text)]``: the string literals of ``path`` that hold an English sentence and are not marked for
    translation (``_()``, ``N_()``, ``_n()``); docstrings and exceptions' messages (the core's, for developers:
    the app shows its own message) aside."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    skip: set[int] = set()
    for node in ast.walk(tree):
        for statement in getattr(node, "body", None) if isinstance(getattr(node, "body", None), list) else ():
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                skip.add(id(statement.value))  # a docstring, or an attribute's
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MARKERS:
            skip |= {id(n) for arg in node.args for n in ast.walk(arg)}
        if isinstance(node, ast.Raise) and node.exc is not None:
            skip |= {id(n) for n in ast.walk(node.exc)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) not in skip:  # an f-string: its text with {} for each field
            skip |= {id(part) for part in node.values}
            text = "".join(p.value if isinstance(p, ast.Constant) else "{}" for p in node.values)
            out += [(node.lineno, text)] if _is_sentence(text) else []
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out += [(node.lineno, node.value)] if _is_sentence(node.value) else []
    return out


def test_no_english_sentence_is_shown_without_a_translation():
    """Every sentence a learner reads goes through ``_()`` (or ``N_()``/``_n()``): an English literal anywhere else in
    the app is listed above as no message."""
    found = {(str(path.relative_to(ROOT)), text): line
             for path in sorted((ROOT / "explorer").rglob("*.py")) + [ROOT / "streamlit_app.py"]
             for line, text in english_literals(path)}
    unmarked = [f"{file}:{line}: {text!r}" for (file, text), line in sorted(found.items())
                if (file, text) not in NOT_SHOWN_AS_IS]
    assert not unmarked, "mark with _() (or list why it is no message):\n" + "\n".join(unmarked)
    stale = [k for k in NOT_SHOWN_AS_IS if k not in found and k[1] not in {e.title for e in LESSONS}]
    assert not stale, f"no longer in the code, remove from the list: {stale}"


def test_the_literal_check_sees_a_sentence_outside_underscore(tmp_path):
    module = tmp_path / "page.py"
    module.write_text('"""A docstring is no message at all."""\nimport streamlit as st\n'
                      'st.caption(_("Marked for translation, as it should be."))\n'
                      'st.caption("Left in English by mistake.")\n'
                      'st.info(f"Also left {n} times in English")\n'
                      'st.latex(r"\\text{softmax of the scores}")\n'
                      'raise ValueError("n must be a positive whole number")\n', encoding="utf-8")
    assert english_literals(module) == [(4, "Left in English by mistake."), (5, "Also left {} times in English")]
