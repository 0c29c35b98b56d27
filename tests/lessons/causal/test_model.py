"""The causal mask's numbers: lower-triangular weights, no peeking, key padding, fully masked rows."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention as A
from explorer.lessons.causal import model as C
from explorer.shell import i18n
from explorer.shell.settings import Settings
from tests.conftest import require

TOKENS = ("The", "cat", "sat", "on", "the", "mat")


def sentence(tokens=TOKENS, d_model=8, d_k=4, seed=42, embedding="lesson", positional=False) -> Settings:
    return Settings(tuple(tokens), d_model, d_k, seed, embedding, positional)


def layer_and_x(n=6, d_model=8, d_k=4, seed=42):
    X = np.random.default_rng(seed).normal(0, 1, (n, d_model))
    return A.SelfAttention(d_model, d_k, d_k, seed=seed), X


def test_causal_weights_are_lower_triangular_row0_onehot_rows_sum_to_one():
    layer, X = layer_and_x()
    steps = layer.steps(X, is_causal=True)
    w = steps.weights
    assert np.all(w[np.triu_indices(6, 1)] == 0.0)  # exactly 0, not merely small
    assert w[0].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(w[np.tril_indices(6)] > 0)


def test_bidirectional_weights_are_not_triangular():
    layer, X = layer_and_x()
    w = layer.steps(X).weights
    assert np.all(w[np.triu_indices(6, 1)] > 0)


def test_explicit_causal_mask_equals_is_causal_and_additive_mask():
    layer, X = layer_and_x()
    a = layer.steps(X, is_causal=True)
    b = layer.steps(X, A.causal_mask(6))
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_array_equal(a.output, b.output)
    out, w = A.scaled_dot_product_attention(a.Q, a.K, a.V, A.additive_mask(A.causal_mask(6)))
    np.testing.assert_array_equal(w, a.weights)


def test_scenario_runs_the_shared_layer_on_the_shared_embeddings():
    s = sentence(positional=True)
    sc = C.causal_scenario(s)
    np.testing.assert_allclose(sc.causal_steps.output, s.steps(is_causal=True).output, rtol=0, atol=1e-15)
    np.testing.assert_allclose(sc.bidirectional_steps.output, s.steps().output, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(sc.causal_mask, A.causal_mask(6))
    assert sc.tokens == TOKENS and sc.n == 6


@pytest.mark.parametrize("embedding", ["lesson", "per-token"])
@pytest.mark.parametrize("n_pad", [0, 2, 6])
def test_no_peeking_rows_up_to_t_are_bit_for_bit_unchanged(embedding, n_pad):
    for t in range(6):
        sc = C.causal_scenario(sentence(embedding=embedding), n_pad, t)
        before, after = sc.causal_steps.output, sc.causal_perturbed_steps.output
        assert np.array_equal(before[: t + 1], after[: t + 1]), (t, n_pad)
        assert np.array_equal(sc.causal_steps.weights[: t + 1], sc.causal_perturbed_steps.weights[: t + 1])
        assert sc.unchanged_through_t(True)
        assert np.all(sc.row_change(True)[: t + 1] == 0.0)


def test_bidirectional_rows_before_t_change():
    for t in range(5):  # t = 5 replaces nothing
        sc = C.causal_scenario(sentence(), 0, t)
        assert np.all(sc.row_change(False)[: t + 1] > 1e-6), t
        assert not sc.unchanged_through_t(False)
        assert np.all(sc.row_change(True)[t + 1:] > 0)  # the replaced rows themselves do change


def test_perturbation_keeps_rows_up_to_t_and_replaces_the_rest():
    X = np.arange(12.0).reshape(4, 3)
    Y = C.perturb_after(X, 1, seed=0)
    assert np.array_equal(Y[:2], X[:2]) and not np.any(Y[2:] == X[2:])
    np.testing.assert_array_equal(C.perturb_after(X, 1, seed=0), Y)  # reproducible
    np.testing.assert_array_equal(C.perturb_after(X, 3, seed=0), X)  # nothing after the last position
    with pytest.raises(ValueError, match="t must lie"):
        C.perturb_after(X, 4, seed=0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 9), data=st.data())
def test_no_peeking_holds_for_random_inputs_with_padding(n, data):
    t = data.draw(st.integers(0, n - 1))
    n_pad = data.draw(st.integers(0, n))
    seed = data.draw(st.integers(0, 2**16))
    tokens = tuple(f"w{i % 3}" for i in range(n))
    sc = C.causal_scenario(sentence(tokens, 6, 3, seed, "per-token", True), n_pad, t)
    assert np.array_equal(sc.causal_steps.output[: t + 1], sc.causal_perturbed_steps.output[: t + 1])
    for s in (sc.causal_steps, sc.bidirectional_steps, sc.causal_perturbed_steps, sc.bidirectional_perturbed_steps):
        assert np.all(np.isfinite(s.weights)) and np.all(np.isfinite(s.output))
        assert np.all(s.weights[:, n - n_pad:] == 0.0)  # padded key columns: exactly 0


@pytest.mark.parametrize("n_pad", range(7))
def test_padding_every_amount(n_pad):
    sc = C.causal_scenario(sentence(), n_pad, 0)
    n_real = 6 - n_pad
    assert sc.key_valid.tolist() == [True] * n_real + [False] * n_pad
    for is_causal in (False, True):
        s = sc.steps(is_causal)
        assert np.all(s.weights[:, n_real:] == 0.0)
        full = sc.fully_masked(is_causal)
        assert full.tolist() == [n_pad == 6] * 6  # only "padding everything" leaves a query with no key
        np.testing.assert_array_equal(s.weights[full], 0.0)
        np.testing.assert_array_equal(s.output[full], 0.0)
        sums = s.weights.sum(axis=-1)
        np.testing.assert_allclose(sums[~full], 1.0, atol=1e-12)
        assert sc.max_row_sum_error(is_causal) < 1e-12
    np.testing.assert_array_equal(sc.mask(True), A.causal_mask(6) & sc.key_valid[None, :])
    assert sc.max_above_diagonal(True) == 0.0


def test_fully_masked_query_has_zero_weights_and_output_in_the_core():
    layer, X = layer_and_x(n=4)
    mask = np.ones((4, 4), dtype=bool)
    mask[2] = False  # query 2 may attend to nothing
    s = layer.steps(X, mask)
    assert s.weights[2].tolist() == [0.0] * 4 and s.output[2].tolist() == [0.0] * 4
    np.testing.assert_allclose(s.weights[[0, 1, 3]].sum(-1), 1.0)


def test_additive_mask_holds_only_zero_and_minus_infinity():
    sc = C.causal_scenario(sentence(), 2, 0)
    add = sc.additive(True)
    assert np.all((add == 0) == sc.mask(True)) and np.all(np.isneginf(add[~sc.mask(True)]))


def test_masking_rules_large_negative_versus_minus_infinity():
    scores = np.array([0.5, 0.7, 1.4, 2.0])
    allowed = np.array([True, False, True, False])
    r = C.masking_rules(scores, allowed)
    np.testing.assert_array_equal(r.neg_inf, r.large_negative)  # exp(-1e9) underflows to exactly 0
    assert r.neg_inf[1] == 0.0 and r.neg_inf[3] == 0.0
    # every key blocked: -1e9 silently becomes the unmasked softmax, the rule gives zeros
    np.testing.assert_allclose(r.all_blocked_large_negative, A.softmax(scores), atol=1e-6)
    assert r.all_blocked_rule.tolist() == [0.0] * 4
    with pytest.raises(ValueError):
        C.masking_rules(scores, allowed.astype(int))


@pytest.mark.parametrize("kwargs", [{"n_pad": 7}, {"n_pad": -1}, {"t": 6}, {"t": -1}])
def test_scenario_rejects_out_of_range_controls(kwargs):
    with pytest.raises(ValueError):
        C.causal_scenario(sentence(), **kwargs)
    with pytest.raises(ValueError):
        C.causal_scenario(sentence(()))


@pytest.mark.torch
def test_matches_torch_sdpa_with_causal_and_padding():
    torch = require("torch")
    sc = C.causal_scenario(sentence(), 2, 0)
    s = sc.causal_steps
    q, k, v = (torch.tensor(a) for a in (s.Q, s.K, s.V))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(sc.mask(True)))
    np.testing.assert_allclose(out.numpy(), s.output, atol=1e-12)


def test_mode_names_are_the_chart_keys_codes():
    assert (C.mode_name(True), C.mode_name(False)) == ("causal", "bidirectional")


def test_no_peeking_claims_say_what_the_run_shows():
    """Part 3's two statements, chosen and numbered from the live scenario."""
    s = sentence()  # 6 tokens
    causal, bidi = C.no_peeking_claims(C.causal_scenario(s, 0, 2))
    assert (causal.kind, causal.icon) == ("success", "✅") and "rows 0..2 are bit-for-bit unchanged" in causal.text
    assert "(largest difference 0.0)" in causal.text
    sc = C.causal_scenario(s, 0, 2)
    moved = float(sc.row_change(False)[:3].max())
    assert moved > 0 and bidi.kind == "warning" and f"up to {moved:.3g}:" in bidi.text
    first, _ = C.no_peeking_claims(C.causal_scenario(s, 0, 0))
    assert "output row 0 is bit-for-bit" in first.text
    # every key after t is padding: nothing can leak, and the page says the test shows nothing
    padded = C.causal_scenario(s, 3, 2)
    causal, bidi = C.no_peeking_claims(padded)
    assert causal.kind == "info" and "shows nothing here" in causal.text and "Reduce the padding" in causal.text
    assert bidi.kind == "info" and "every token after t = 2 is padding" in bidi.text
    last, bidi = C.no_peeking_claims(C.causal_scenario(s, 0, 5))
    assert "nothing after t was replaced" in last.text and "Move t to the left" in bidi.text
    one = C.causal_scenario(sentence(("word",)), 0, 0)
    causal, bidi = C.no_peeking_claims(one)
    assert "Type a sentence of two or more tokens" in causal.text and "with one token" in bidi.text


@pytest.mark.parametrize("t", [0, 2, 4])
def test_no_peeking_claims_name_the_padding_truly_for_every_padding(t):
    """Every padding 0..n with t < n - 1: the sentence names exactly the padded positions (at n_pad = n it said "every
    token after t = 2 is padding" and left out tokens 0..2)."""
    s = sentence()  # 6 tokens
    n = 6
    for n_pad in range(n + 1):
        causal, bidi = C.no_peeking_claims(C.causal_scenario(s, n_pad, t))
        first = n - n_pad
        if first > t + 1:  # a replaced token is not padding: the test tests the mask
            assert "padding" not in causal.text and causal.kind == "success", (n_pad, causal.text)
            continue
        said = ("every token is padding" if first == 0 else
                "every token from position {first} on is padding, t = {t} included" if first <= t else
                "every token after t = {t} is padding").format(first=first, t=t)
        assert said in causal.text and said in bidi.text, (n_pad, causal.text, bidi.text)
        assert causal.kind == bidi.kind == "info" and "Reduce the padding" in causal.text


def test_no_peeking_claims_report_a_leak_and_speak_each_language():
    from types import SimpleNamespace


    leaking = SimpleNamespace(key_valid=np.ones(3, bool), n_pad=0, t=1, unchanged_through_t=lambda is_causal: False,
                              row_change=lambda is_causal: np.array([0.0, 0.25, 0.5]))
    causal, bidi = C.no_peeking_claims(leaking)
    assert causal.kind == "error" and causal.text == "Causal: rows 0..1 changed by up to 0.25: the mask leaks."
    assert bidi.kind == "warning" and "up to 0.25:" in bidi.text
    sc = C.causal_scenario(sentence(), 0, 2)
    english = C.no_peeking_claims(sc)
    for lang in ("pt", "tr"):
        with i18n.using(lang):
            shown = C.no_peeking_claims(sc)
            assert C.exact(0.0) == "0,0" and i18n.general(0.125) == "0,125"
        assert [c.kind for c in shown] == [c.kind for c in english]
        assert all(a.text != b.text for a, b in zip(shown, english, strict=True)), lang  # translated
        assert "0,0" in shown[0].text and "2" in shown[0].text, shown[0].text


def test_causal_checks_state_the_row_sums_the_rows_have():
    row0 = np.array([1.0, 0.0, 0.0])
    none = C.causal_checks(0.0, row0, np.zeros(3, bool), 2.2e-16)
    assert none == ("**Checks (causal):** largest weight above the diagonal = `0.0` · row 0 = `[1.0, 0.0, 0.0]` · "
                    "largest |row sum − 1| = `2.2e-16`")
    some = C.causal_checks(0.0, row0, np.array([False, True, False]), 0.0)
    assert some.endswith("largest |row sum − 1| = `0.0e+00` (over the rows that have a key)")
    every = C.causal_checks(0.0, np.zeros(9), np.ones(9, bool), 0.0)
    assert every.endswith("every row is fully masked, so every row sums to 0") and "0.0, …]`" in every  # 8 shown
    with i18n.using("pt"):
        shown = C.causal_checks(0.0, row0, np.array([False, True, False]), 0.0)
    assert shown != some and "`[1.0, 0.0, 0.0]`" in shown  # translated; code spans keep the point


def test_padded_columns_say_exactly_0_only_when_the_largest_padded_weight_is_0():
    key_valid = np.array([True, True, False])  # the last key is padding
    blocked = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.25, 0.75, 0.0]])
    assert C.padded_columns(blocked, key_valid, True) == ("Padded key columns get weight exactly 0 in the causal "
                                                          "weights: largest weight in a padded column = `0.0`.")
    assert "in the bidirectional weights" in C.padded_columns(blocked, key_valid, False)
    leaking = blocked + np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1e-300]])
    for is_causal in (True, False):
        assert C.padded_columns(leaking, key_valid, is_causal) == (
            "Padded key columns do not get weight exactly 0 here: largest weight in a padded column = `1e-300`.")
    assert "exactly 0 in the causal" in C.padded_columns(blocked, np.ones(3, bool), True)  # no padding: 0.0
    padded = C.causal_scenario(sentence(), 2, 0)
    for is_causal in (True, False):
        assert "`0.0`" in C.padded_columns(padded.steps(is_causal).weights, padded.key_valid, is_causal)
    with i18n.using("pt"):
        assert "Padded" not in C.padded_columns(leaking, key_valid, True) + C.padded_columns(blocked, key_valid, True)
