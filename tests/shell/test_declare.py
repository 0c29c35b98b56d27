"""Every declared control of every lesson, without Streamlit: what each odd link value gets, valid values round trip,
its messages render in every language, and links built from the declarations hold values the pages accept.

The expected outcomes are written here from the spec (README, "Sharing a view"), independently of the parsers in
:mod:`explorer.shell.controls.declare`: a number counts only as the app writes it (ASCII digits, an optional ``-``,
for a non-integer control a fraction without trailing zeros; no leading zeros, ``-0``, exponent, padding), in range
and on the control's step; a switch only as ``true``/``false`` (any case); an option only as its code
(:class:`Options`, or an old alias) or its text (:class:`Choice`, in any language when its text is translated); a
text box any text within its length; a token only as one of the sentence's labels. Anything else opens at the
control's default (a :class:`Choice` with ``bad="nearest"``: the nearest option to a whole number) and warns.
``tests/lessons/test_contract.py`` shows on each page that the widgets go through these parsers.
"""

from __future__ import annotations

import importlib
import re
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from explorer.lessons import LESSONS, lesson
from explorer.shell import controls, i18n
from explorer.shell.controls import Choice, Heads, Number, NumberInput, Options, Text, Toggle, TokenPicker
from explorer.shell.controls.link_values import _canonical

ODD = ["nan", "inf", "-inf", "1e309", "9e18", "-0", "1e2", "0x10", " 5 ", "", "5.0", "\u0663", "1_000",
       "Infinity", "+5", "007"]
"""The odd link values (as ``tests/shell/test_controls.py`` names them)."""
ID_BOXES = {"rm_then": "vocab"}
"""Text boxes that hold token ids, not free text: ``{key: the context's vocabulary size}``. They take only ids as the
app writes them: ASCII digits without leading zeros, single spaces between, each below the vocabulary's size (spaces
around the whole ignored; an empty box is no ids)."""


def package(name: str):
    return importlib.import_module(f"explorer.lessons.{name}")


def manifests() -> dict[str, dict]:
    """``{where: CONTROLS}``: the shell's shared controls and every lesson that declares its own."""
    out = {"shell": controls.SHARED}
    for entry in LESSONS:
        declared = getattr(package(entry.name), "CONTROLS", None)
        if declared is not None:
            out[entry.name] = declared
    return out


DECLARED = [(where, name) for where, table in manifests().items() for name in table]


def control(where: str, name: str):
    return manifests()[where][name]


# --- the spec, written independently of the parsers --------------------------------------------------------------

_INT = re.compile(r"-?(0|[1-9][0-9]*)", flags=re.ASCII)
_DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?", flags=re.ASCII)


def spec_number(c: Number, raw: str, ctx):
    """The number ``raw`` stands for, or ``None``."""
    lo, hi, default, step = (v(ctx) if callable(v) else v for v in (c.lo, c.hi, c.default, c.step))
    integer = all(type(v) is int for v in (lo, hi, default))
    if not (_INT if integer else _DECIMAL).fullmatch(raw) or raw == "-0":
        return None
    x = int(raw) if integer else float(raw)
    if not lo <= x <= hi:
        return None
    if step and abs((x - lo) / step - round((x - lo) / step)) > 1e-6:
        return None
    return x


def choice_texts(c: Choice, ctx) -> dict[str, object]:
    """``{text: option}`` in the run's language, and in every language when the texts are translated."""
    options = c.options(ctx) if callable(c.options) else c.options
    out = {}
    for lang in (i18n.LANGUAGES if c.translated else ("en",)):
        with i18n.using(lang):
            out |= {(str(o) if c.shown_as is None else c.shown_as(o, ctx)): o for o in options}
    return out


def expected_outcome(c, raw: str, ctx) -> tuple[object, bool]:
    """``(value, warns)`` the spec gives ``c`` for the link value ``raw``."""
    default = c.default(ctx) if callable(c.default) else c.default
    if isinstance(c, TokenPicker):
        labels = ctx["labels"]
        return (raw, False) if raw in labels else (labels[min(max(c.default, 0), len(labels) - 1)], True)
    if isinstance(c, Number):
        x = spec_number(c, raw, ctx)
        return (default, True) if x is None else (x, False)
    if isinstance(c, Toggle):
        return ({"true": True, "false": False}[raw.lower()], False) if raw.lower() in ("true", "false") \
            else (default, True)
    if isinstance(c, Options):
        codes = list(c.options(ctx) if callable(c.options) else c.options)
        code = (c.aliases or {}).get(raw, raw)
        return (code, False) if code in codes else (default, True)
    if isinstance(c, Choice):
        texts = choice_texts(c, ctx)
        if raw in texts:
            return texts[raw], False
        if c.bad == "nearest" and _INT.fullmatch(raw) and raw != "-0":
            x = int(raw)
            return min(texts.values(), key=lambda o: (abs(o - x), o)), True
        return default, True
    if isinstance(c, Text):
        ok = len(raw) <= c.max_chars
        if c.key in ID_BOXES and raw.strip():
            ids = raw.strip()
            ok = ok and bool(re.fullmatch(r"(0|[1-9][0-9]*)( (0|[1-9][0-9]*))*", ids, flags=re.ASCII)) \
                and all(int(i) < ctx[ID_BOXES[c.key]] for i in ids.split(" "))
        return (raw, False) if ok else (default, True)
    if isinstance(c, Heads):  # codes of heads joined by commas, each a head of the model, none twice, not too many
        codes = raw.split(",") if raw else []
        heads = [re.fullmatch(r"L(0|[1-9][0-9]*)H(0|[1-9][0-9]*)", code, flags=re.ASCII) for code in codes]
        ok = all(m and int(m[1]) < ctx["n_layers"] and int(m[2]) < ctx["n_heads"] for m in heads) \
            and len(set(codes)) == len(codes) and len(codes) <= c.max_selections
        return (codes, False) if ok else (list(default), True)
    raise AssertionError(f"no spec for {type(c).__name__}")


def valid_values(c, ctx) -> list[str]:
    """Link values the control can use, as the app writes them (besides odd ones that happen to be valid)."""
    if isinstance(c, TokenPicker):
        return list(ctx["labels"])
    if isinstance(c, Number):
        lo, hi, _d, integer = c.bounds(ctx)
        step = c.step_at(ctx)
        values = [lo, hi] + ([lo + 3 * step] if step else [])
        return [_canonical(c.nearest(v, ctx)) for v in values]
    if isinstance(c, Toggle):
        return ["true", "false", "TRUE", "False"]
    if isinstance(c, Options):
        return list(c.options(ctx) if callable(c.options) else c.options) + list(c.aliases or {})
    if isinstance(c, Choice):
        return list(choice_texts(c, ctx))
    if isinstance(c, Text):
        if c.key in ID_BOXES:
            return ["30 198 198", "0", " 7 ", f"{ctx[ID_BOXES[c.key]] - 1} 0"]
        return ["a b c", "x" * c.max_chars]
    if isinstance(c, Heads):
        last = f"L{ctx['n_layers'] - 1}H{ctx['n_heads'] - 1}"
        return ["", "L0H0", f"L0H0,{last}", ",".join(f"L{i}H0" for i in range(c.max_selections))]
    raise AssertionError(type(c).__name__)


# --- the tests ---------------------------------------------------------------------------------------------------


def test_every_lesson_declares_its_controls():
    missing = {e.name for e in LESSONS if not hasattr(package(e.name), "CONTROLS")}
    assert not missing
    assert all(hasattr(package(name), "STATES") for name in manifests() if name != "shell")


def test_the_walk_finds_every_kind_and_the_controls_the_issues_named():
    """So the tests below cannot pass on nothing: each kind is declared somewhere, with the keys issue 19 named."""
    kinds = {type(control(w, n)).__name__ for w, n in DECLARED}
    assert {"Slider", "NumberInput", "Toggle", "Expander", "Options", "Choice", "Text", "Heads", "TokenPicker"} <= kinds
    keys = {control(w, n).key for w, n in DECLARED}
    assert {"sentence", "seed", "d_model", "d_k", "scale_seed", "two_shuffle_seed", "n_heads", "mh_head_window",
            "rm_steps", "rm_then", "ca_heads", "tr_step"} <= keys


@pytest.mark.parametrize(("where", "name"), DECLARED)
def test_every_odd_link_value_gets_the_declared_outcome(where, name):
    c = control(where, name)
    for raw in ODD:
        assert tuple(c.outcome(raw, c.example)) == expected_outcome(c, raw, c.example), (c.key, raw)
    assert tuple(c.outcome(None, c.example)) == (c.default_value(c.example), False)  # no link value


@pytest.mark.parametrize(("where", "name"), DECLARED)
def test_valid_link_values_are_taken_as_written_and_round_trip(where, name):
    c = control(where, name)
    for raw in valid_values(c, c.example):
        value, warns = c.outcome(raw, c.example)
        assert (value, warns) == expected_outcome(c, raw, c.example) and not warns, (c.key, raw)
        if not isinstance(c, Options) or raw not in (c.aliases or {}):
            with i18n.using("en"):
                assert c.parse(c.text(value, c.example), c.example) == value, (c.key, raw)


NUMBERS = [(where, name) for where, name in DECLARED if isinstance(control(where, name), Number)]


@pytest.mark.parametrize(("where", "name"), NUMBERS)
def test_a_number_one_step_outside_its_range_or_off_its_grid_opens_at_the_default(where, name):
    """The slips at a range's ends: one step (or 1) below ``lo`` and above ``hi``, written as the app writes
    numbers, and a value between two steps of the grid, each warn and open at the default (the spec above; the odd
    values never reach the ends: an off-by-one in the range check passed every other test here)."""
    c = control(where, name)
    lo, hi, _default, integer = c.bounds(c.example)
    step = c.step_at(c.example)
    outside = [lo - (step or 1), hi + (step or 1)]
    if step and (not integer or step > 1):
        outside.append(lo + (step // 2 if integer else step / 2))
    for x in outside:
        raw = _canonical(int(x) if integer else round(float(x), 10) + 0.0)
        assert expected_outcome(c, raw, c.example)[1], (c.key, raw)  # the spec refuses it
        assert tuple(c.outcome(raw, c.example)) == expected_outcome(c, raw, c.example), (c.key, raw)


@pytest.mark.parametrize("lang", list(i18n.LANGUAGES))
@pytest.mark.parametrize(("where", "name"), DECLARED)
def test_every_declared_message_renders_in_every_language(where, name, lang):
    """Label, help, the warning's description and a notice, formatted with the control's example context: no
    placeholder left, no KeyError; translated (not English) in Portuguese and Turkish where the catalogue has it."""
    c = control(where, name)
    with i18n.using(lang):
        texts = [c.say(m, c.example, lo="0", hi="1", low="0", high="1", step="1", valid="1, 2", values="1, 2",
                       options="1, 2", current=3, nearest=2) for m in (c.label, c.help, c.expected,
                                                                       getattr(c, "notice", None))]
        for m in [m for m in (c.label, c.help) if isinstance(m, str) and lang != "en"]:
            assert i18n.catalog(lang, c.domain).gettext(m) != m or not re.search(r"[a-z]{3} [a-z]{3}", m), (c.key, m)
    assert all(t is None or not re.search(r"\{[a-z_]+\}", t) for t in texts), (c.key, texts)


@pytest.mark.parametrize(("d_model", "asked", "expected"),
                         [(8, 3, 2), (8, 6, 4), (8, 100, 8), (8, 0, 1), (8, -5, 1), (12, 5, 4), (7, 3, 1),
                          (512, 16, 16), (512, 20, 16), (1, 4, 1), (360, 7, 6)])
def test_a_head_count_that_does_not_divide_d_model_opens_at_the_nearest_that_does(d_model, asked, expected):
    """Ties go to the smaller count."""
    n_heads = package("multihead").CONTROLS["n_heads"]
    assert n_heads.outcome(str(asked), {"d_model": d_model}) == (expected, d_model % asked != 0 if asked > 0 else True)
    assert d_model % expected == 0


def test_a_choice_corrects_a_whole_number_to_the_nearest_option_and_anything_else_to_the_default():
    n_heads = package("multihead").CONTROLS["n_heads"]
    assert n_heads.outcome("3", {"d_model": 8}) == (2, True)  # ties go to the smaller count
    assert n_heads.outcome("7", {"d_model": 12}) == (6, True)
    assert n_heads.outcome("100", {"d_model": 8}) == (8, True)
    assert n_heads.outcome("4", {"d_model": 8}) == (4, False)
    assert n_heads.outcome("4.0", {"d_model": 8}) == (2, True) and n_heads.outcome("abc", {"d_model": 12}) == (2, True)
    assert n_heads.outcome("5", {"d_model": 5}) == (5, False) and n_heads.default_value({"d_model": 5}) == 1


def test_a_translated_choice_takes_its_text_in_any_language():
    window = package("multihead").CONTROLS["head_window"]
    ctx = {"n_heads": 40}
    labels = {}
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            labels[lang] = window.text(16, ctx)
    assert labels["en"] == "heads 16-31" and len(set(labels.values())) == 3, labels
    with i18n.using("pt"):
        assert all(window.outcome(text, ctx) == (16, False) for text in labels.values())
        assert window.text(32, ctx) == labels["pt"].replace("16", "32").replace("31", "39")
    assert window.outcome("heads 16-32", ctx) == (0, True)


def test_a_box_of_token_ids_takes_ids_as_the_app_writes_them_and_nothing_else():
    then = package("real_model").CONTROLS["then"]
    ctx = {"vocab": 100}
    for raw in ("", "0", "30 99 0", " 7 8 "):
        assert then.outcome(raw, ctx) == (raw, False), raw
    for raw in ("100", "01", "1  2", "1,2", "-1", "1.0", "\u0663", "a", "9" * 300):
        assert then.outcome(raw, ctx) == ("", True), raw
    assert set(ID_BOXES) == {c.key for w, n in DECLARED if isinstance(c := control(w, n), Text) and c.valid}


def test_heads_are_codes_of_the_model_joined_by_commas():
    heads = package("causes").CONTROLS["heads"]
    ctx = {"n_layers": 30, "n_heads": 9, "top": ["L23H4"]}
    assert heads.outcome("L18H6,L17H4", ctx) == (["L18H6", "L17H4"], False)
    assert heads.outcome("", ctx) == ([], False)
    for raw in ("L30H0", "L0H9", "L18H6,L18H6", "L018H6", "l18h6", "L18H6,", "L18H6 ,L17H4"):
        assert heads.outcome(raw, ctx) == (["L23H4"], True), raw
    assert controls.link(package("causes"), ctx, heads=[(0, 0)]) == "./causes"  # codes, not pairs
    assert controls.link(package("causes"), ctx, heads=["L1H2", "L3H4"]) == "./causes?ca_heads=L1H2%2CL3H4"


def test_a_switch_takes_true_or_false_in_any_case_and_nothing_else():
    scale = package("walkthrough").CONTROLS["scale"]  # on by default
    assert [scale.outcome(raw, {}) for raw in ("false", "FALSE", "True")] == [(False, False), (False, False),
                                                                               (True, False)]
    for raw in (" false", "false ", "no", "0", "off", "f", "falsch"):
        assert scale.outcome(raw, {}) == (True, True), raw


def test_options_take_old_aliases_without_a_warning():
    walk_input = package("walkthrough").CONTROLS["input"]
    assert walk_input.outcome("Lesson example", {}) == ("lesson", False)
    assert walk_input.outcome("lesson", {}) == ("lesson", False)
    assert walk_input.outcome("Lesson", {}) == ("sentence", True)


# --- links from the declarations -------------------------------------------------------------------------------


def params(url: str, name: str) -> dict[str, str]:
    parts = urlsplit(url)
    assert parts.path == f"./{lesson(name).url_path}", url
    query = parse_qs(parts.query, keep_blank_values=True)
    assert all(len(v) == 1 for v in query.values()), query
    return {k: unquote(v[0]) for k, v in query.items()}


@pytest.mark.parametrize("name", [n for n in manifests() if n != "shell"])
def test_a_link_built_from_the_declarations_holds_values_the_page_takes(name):
    """Every control at its default, at a valid value and (numbers) beyond its range: each value in the link is one
    the control takes without a warning."""
    declared = package(name).CONTROLS
    ctx_all = {k: v for c in declared.values() for k, v in c.example.items()}
    linked = {n: c for n, c in declared.items() if c.linked}
    for pick in ("default", "valid", "beyond"):
        values = {}
        for n, c in linked.items():
            value = c.default_value(c.example)
            if pick == "valid":
                value = c.outcome(valid_values(c, c.example)[-1], c.example).value
            elif pick == "beyond" and isinstance(c, Number):
                value = c.bounds(c.example)[1] * 10 + 7
            values[n] = value
        got = params(controls.link(package(name), ctx_all, **values), name)
        empty = {c.key for n, c in linked.items() if isinstance(c, Text | Heads) and len(values[n]) == 0}
        assert set(got) == {c.key for c in linked.values()} - empty, (pick, got)  # an empty text: the default
        for c in linked.values():
            assert c.key in empty or c.outcome(got[c.key], c.example).warns is False, (pick, c.key, got.get(c.key))


def test_a_link_clamps_numbers_and_takes_the_nearest_numeric_option():
    scaling = package("scaling")
    assert params(controls.link(scaling, d_k=100, n_keys=40, seed=-1, n_samples=3000), "scaling") == {
        "scale_d_k": "128", "scale_n_keys": "32", "scale_seed": "0", "scale_samples": "2048"}
    assert controls.link(scaling) == "./scaling"
    assert params(controls.link(scaling, temperature=0.55, hist_log=True), "scaling") == {
        "scale_temperature": "0.5", "scale_hist_log": "true"}
    lookup = package("lookup")
    assert params(controls.link(lookup, qx=1.23456, qy=-9), "lookup") == {"lookup_qx": "1.23", "lookup_qy": "-5"}
    with i18n.using("tr"):
        assert controls.link(scaling, d_k=4) == "./scaling?scale_d_k=4&lang=tr"


def test_a_link_writes_text_percent_encoded_and_leaves_out_what_no_control_takes():
    two = package("two_sentences")
    url = controls.link(two, sentence_b="a [b](c) & <i>", shuffle="yes")
    assert url == "./two-sentences?two_sentence=a%20%5Bb%5D%28c%29%20%26%20%3Ci%3E"
    assert "walk_input" not in controls.link(package("walkthrough"), input="nope")


def test_a_link_says_what_it_cannot_build():
    with pytest.raises(ValueError, match="declares no control"):
        controls.link(package("scaling"), width=3)
    with pytest.raises(ValueError, match="context"):
        controls.link(package("multihead"), n_heads=3)
    with pytest.raises(ValueError, match="context"):
        controls.link(package("causal"), padding=3)
    with pytest.raises(ValueError, match="sentence's tokens"):
        controls.link(package("causal"), query="cat (1)")
    assert params(controls.link(package("multihead"), {"d_model": 12}, n_heads=5), "multihead") == {"n_heads": "4"}


def test_declarations_refuse_what_they_cannot_be():
    with pytest.raises(ValueError, match="link keys"):
        controls.declare(__name__, a=Toggle(key="k", label="a"), b=Toggle(key="k", label="b"))
    with pytest.raises(ValueError, match="bad"):
        Choice(key="k", label="a", options=(1, 2), default=1, bad="clamp")
    assert controls.declare("explorer.lessons.causal.x", a=NumberInput(key="k", label="a", lo=0, hi=1, default=0)
                            )["a"].domain == "causal"
