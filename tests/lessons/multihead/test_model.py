"""Numbers the multi-head page relies on (issue 6): one head, concat @ W_o, PyTorch parity, the page's math.

PyTorch parity uses the recorded ``tests/data/torch_reference.npz`` (written by
``tools/make_torch_reference.py``; no PyTorch needed) and, when PyTorch is installed, a live check.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import attention as A
from explorer.lessons.multihead import model as smh
from explorer.shell import i18n
from explorer.shell.settings import Settings
from tests.conftest import require

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "torch_reference.npz"
TOL = {"rtol": 0, "atol": 1e-12}


def _x(n: int, d_model: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d_model))


# --- n_heads = 1 is single-head attention followed by W_o -----------------------------------


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("d_model", [1, 4, 8, 12])
def test_one_head_is_single_head_attention_then_w_o(d_model, is_causal):
    layer = A.MultiHeadAttention(d_model, 1, seed=7)
    X = _x(5, d_model, seed=d_model)
    steps = A.attention_steps(X, layer.W_q, layer.W_k, layer.W_v, is_causal=is_causal)  # d_k = d_v = d_model
    r = layer.steps(X, is_causal=is_causal)
    assert r.weights.shape == (1, 5, 5)
    np.testing.assert_allclose(r.weights[0], steps.weights, **TOL)
    np.testing.assert_allclose(r.mean_weights, steps.weights, **TOL)
    np.testing.assert_allclose(r.concat, steps.output, **TOL)
    np.testing.assert_allclose(r.output, steps.output @ layer.W_o, **TOL)
    np.testing.assert_allclose(r.scaled_scores[0], steps.scaled_scores, **TOL)


def test_one_head_differs_from_two_heads():
    """The check above can fail: with two heads the same matrices give other weights."""
    X = _x(5, 8)
    one, two = A.MultiHeadAttention(8, 1, seed=7), A.MultiHeadAttention(8, 2, seed=7)
    np.testing.assert_array_equal(one.W_q, two.W_q)  # same draw, only the grouping differs
    w1 = one.steps(X).weights[0]
    w2 = two.steps(X).weights
    assert not np.allclose(w1, w2[0]) and not np.allclose(w1, w2.mean(axis=0))


# --- concatenated per-head outputs @ W_o = final output -----------------------------------


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize(("d_model", "n_heads"), [(8, 1), (8, 2), (8, 4), (8, 8), (12, 3), (12, 6), (64, 16)])
def test_concat_of_head_outputs_times_w_o_is_the_output(d_model, n_heads, is_causal):
    layer = A.MultiHeadAttention(d_model, n_heads, seed=1)
    r = layer.steps(_x(6, d_model, seed=2), is_causal=is_causal)
    d_head = d_model // n_heads
    concat = np.concatenate(list(r.head_outputs), axis=-1)  # head 0 | head 1 | …  -> [n, d_model]
    np.testing.assert_array_equal(concat, r.concat)
    for h in range(n_heads):  # head h fills exactly the columns it owns
        np.testing.assert_array_equal(r.concat[:, h * d_head:(h + 1) * d_head], r.head_outputs[h])
    np.testing.assert_allclose(concat @ layer.W_o, r.output, **TOL)
    # each head's output is its weights times its slice of V
    v_h = r.v[:, None, :].reshape(6, n_heads, d_head).swapaxes(0, 1)
    np.testing.assert_allclose(r.weights @ v_h, r.head_outputs, **TOL)


def test_split_heads_takes_column_blocks():
    x = 100.0 * np.arange(3)[:, None] + np.arange(8)[None, :]
    heads = A.split_heads(x, 4)
    assert heads.shape == (4, 3, 2)
    np.testing.assert_array_equal(heads[1], [[2, 3], [102, 103], [202, 203]])
    np.testing.assert_array_equal(A.merge_heads(heads), x)


# --- PyTorch parity: per-head and averaged weights (recorded reference data) ----------------


def _reference() -> dict[str, dict[str, np.ndarray]]:
    cases: dict[str, dict[str, np.ndarray]] = {}
    with np.load(REFERENCE) as data:
        for key in data.files:
            case, field = key.split("/", 1)
            if case.startswith("mha_"):
                cases.setdefault(case, {})[field] = data[key]
    return cases


REF = _reference()  # committed; a missing file is an error, not a skip


def _ours(case):
    layer = A.MultiHeadAttention.from_torch(case["in_proj_weight"], case.get("in_proj_bias"),
                                            case["out_proj_weight"], case.get("out_proj_bias"), int(case["n_heads"]))
    attn, kpm = case.get("torch_attn_mask"), case.get("torch_key_padding_mask")
    return layer.steps(case["x"], attn_mask=None if attn is None else ~attn,  # torch True = blocked
                                  key_padding_mask=None if kpm is None else ~kpm)


@pytest.mark.parametrize("name", sorted(REF))
def test_per_head_and_mean_weights_equal_torch(name):
    case = REF[name]
    r = _ours(case)
    torch_w, torch_mean, torch_out = case["weights"], case["mean_weights"], case["output"]
    assert r.weights.shape == torch_w.shape  # [batch, n_heads, n, n] (average_attn_weights=False)
    live = np.isfinite(torch_w)  # torch gives NaN for a query that may attend to nothing; ours gives 0
    if name == "mha_fully_masked_row":
        assert (~live).any() and (r.weights[~live] == 0).all()
    np.testing.assert_allclose(r.weights[live], torch_w[live], **TOL)
    live_mean = np.isfinite(torch_mean)
    np.testing.assert_allclose(r.mean_weights[live_mean], torch_mean[live_mean], **TOL)
    np.testing.assert_allclose(r.weights.mean(axis=1)[live_mean], torch_mean[live_mean], **TOL)
    rows = np.isfinite(torch_out).all(axis=-1)
    np.testing.assert_allclose(r.output[rows], torch_out[rows], **TOL)


@pytest.mark.torch
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_live_torch_per_head_and_mean_weights(n_heads, is_causal):
    torch = require("torch")

    d_model, n = 8, 6
    rng = np.random.default_rng(n_heads)
    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True, dtype=torch.float64).eval()
    w_in, w_out = rng.normal(0, d_model**-0.5, (3 * d_model, d_model)), rng.normal(0, d_model**-0.5, (d_model,) * 2)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.from_numpy(w_in))
        mha.out_proj.weight.copy_(torch.from_numpy(w_out))
    x = rng.normal(size=(1, n, d_model))
    xt = torch.from_numpy(x)
    mask = torch.from_numpy(np.triu(np.ones((n, n), dtype=bool), 1)) if is_causal else None  # torch: True = blocked
    with torch.no_grad():
        out, w_heads = mha(xt, xt, xt, attn_mask=mask, need_weights=True, average_attn_weights=False)
        _, w_mean = mha(xt, xt, xt, attn_mask=mask, need_weights=True)  # the default: averaged over heads
    r = A.MultiHeadAttention.from_torch(w_in, None, w_out, None, n_heads).steps(x, is_causal=is_causal)
    np.testing.assert_allclose(r.weights, w_heads.numpy(), **TOL)
    np.testing.assert_allclose(r.mean_weights, w_mean.numpy(), **TOL)
    np.testing.assert_allclose(r.output, out.numpy(), **TOL)


# --- the page's own math (app/scenarios_multihead.py) -------------------------------------


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("n_heads", A.valid_head_counts(8))
def test_plain_loop_equals_vectorised(n_heads, is_causal):
    layer = A.MultiHeadAttention(8, n_heads, seed=3)
    X = _x(6, 8, seed=5)
    out, w, concat = smh.per_head_loop(X, layer.W_q, layer.W_k, layer.W_v, layer.W_o, n_heads, is_causal)
    r = layer.steps(X, is_causal=is_causal)
    np.testing.assert_allclose(w, r.weights, **TOL)
    np.testing.assert_allclose(concat, r.concat, **TOL)
    np.testing.assert_allclose(out, r.output, **TOL)
    if is_causal:
        assert (np.triu(w, 1) == 0).all()


def test_plain_loop_catches_a_wrong_split():
    """The loop is an independent check: a wrong head grouping would disagree with it."""
    layer = A.MultiHeadAttention(8, 2, seed=3)
    X = _x(6, 8, seed=5)
    _, w, _ = smh.per_head_loop(X, layer.W_q, layer.W_k, layer.W_v, layer.W_o, 2)
    q_wrong = (X @ layer.W_q).reshape(2, 6, 4)  # reshape without the transpose
    k_wrong = (X @ layer.W_k).reshape(2, 6, 4)
    _, w_wrong = A.scaled_dot_product_attention(q_wrong, k_wrong, k_wrong)
    assert np.abs(w - w_wrong).max() > 1e-3


def test_scenario_defaults_and_checks():
    sc = smh.multihead_scenario(Settings(("The", "cat", "sat", "on", "the", "mat"), 8, 4, 42, "lesson", False), 2)
    assert sc.seed == smh.DEFAULT_SEED and sc.result.head_outputs.shape[-1] == 4 and sc.mask is None
    X = A.embed_tokens(["The", "cat", "sat", "on", "the", "mat"], 8, 42, "lesson")
    np.testing.assert_array_equal(sc.X, X)
    r = A.MultiHeadAttention(8, 2, seed=smh.DEFAULT_SEED).steps(X)
    np.testing.assert_array_equal(sc.result.weights, r.weights)
    np.testing.assert_array_equal(sc.result.output, r.output)
    assert sc.max_diff_output <= 1e-12 and sc.max_diff_weights <= 1e-12
    np.testing.assert_allclose(sc.head_entropy, A.entropy(r.weights).mean(axis=-1), **TOL)
    assert sc.overlap.shape == (2, 2)
    top, top_w = sc.top_keys(3)
    np.testing.assert_array_equal(top, r.weights[:, 3].argmax(-1))
    np.testing.assert_array_equal(top_w, r.weights[:, 3].max(-1))
    causal_sc = smh.multihead_scenario(Settings(("a", "b", "c"), 8, 4, 42, "lesson", True), 4, seed=1, is_causal=True)
    np.testing.assert_array_equal(causal_sc.mask, np.tri(3, dtype=bool))
    assert (np.triu(causal_sc.result.weights, 1) == 0).all()
    assert causal_sc.row_entropy[:, 0].max() == 0  # the first query sees one key
    many = smh.multihead_scenario(Settings(("a", "b"), 128, 4, 0, "lesson", False), 128)
    assert many.overlap is None and many.result.weights.shape == (128, 2, 2)


def test_scenario_rejects_a_non_dividing_head_count():
    with pytest.raises(ValueError, match=r"valid n_heads for d_model=8: \[1, 2, 4, 8\]"):
        smh.multihead_scenario(Settings(("a", "b"), 8, 4, 0, "lesson", False), 3)


def test_head_overlap():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(5), size=(3, 4))  # [h=3, n_q=4, n_k=5], rows sum to 1
    o = smh.head_overlap(w)
    np.testing.assert_allclose(np.diag(o), 1.0, atol=1e-12)
    np.testing.assert_allclose(o, o.T, atol=0)
    assert ((o >= 0) & (o <= 1 + 1e-12)).all()
    a = np.eye(3)[None]  # query i -> key i
    b = np.roll(np.eye(3), 1, axis=1)[None]  # query i -> key i+1
    np.testing.assert_allclose(smh.head_overlap(np.concatenate([a, b, a])), [[1, 0, 1], [0, 1, 0], [1, 0, 1]])
    half = 0.5 * (a + b)
    assert smh.head_overlap(np.concatenate([a, half]))[0, 1] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="n_heads, n_q, n_k"):
        smh.head_overlap(np.ones((3, 3)))


def test_default_head_count():
    assert smh.default_head_count(8) == 2 and smh.default_head_count(7) == 1 and smh.default_head_count(512) == 2


@pytest.mark.parametrize(("d_model", "n_heads"), [(8, 1), (8, 2), (8, 4), (8, 8), (12, 3), (16, 16)])
def test_split_example_uses_the_page_sizes(d_model, n_heads):
    ex = smh.split_example(d_model, n_heads)
    d_head = d_model // n_heads
    assert not ex.stand_in and ex.d_model == d_model and ex.heads.shape == (n_heads, 3, d_head)
    for h in range(n_heads):
        for i in range(3):
            np.testing.assert_array_equal(ex.heads[h, i], 100 * i + h * d_head + np.arange(d_head))
    np.testing.assert_array_equal(ex.heads_owner, np.broadcast_to(np.arange(n_heads)[:, None, None], ex.heads.shape))
    np.testing.assert_array_equal(ex.wrong, ex.x.reshape(n_heads, 3, d_head))
    if n_heads > 1:  # without the transpose a "head" mixes tokens (hundreds digit) and heads
        assert len(np.unique(ex.wrong[0] // 100)) > 1 or len(np.unique(ex.wrong_owner[0])) > 1


@pytest.mark.parametrize(("d_model", "n_heads", "ex_heads", "ex_width"),
                         [(512, 16, 4, 8), (512, 1, 1, 8), (48, 3, 3, 6)])
def test_split_example_stand_in_for_wide_d_model(d_model, n_heads, ex_heads, ex_width):
    ex = smh.split_example(d_model, n_heads)
    assert ex.stand_in and ex.n_heads == ex_heads and ex.d_model == ex_width
    np.testing.assert_array_equal(A.merge_heads(ex.heads), ex.x)


def test_split_example_rejects_non_divisor():
    with pytest.raises(ValueError, match="valid n_heads"):
        smh.split_example(8, 3)


def test_scaled_scores_use_d_head():
    layer = A.MultiHeadAttention(8, 4, seed=0)
    r = layer.steps(_x(3, 8))
    np.testing.assert_allclose(r.scaled_scores, r.q_heads @ r.k_heads.swapaxes(-1, -2) / math.sqrt(2), **TOL)


def test_scenario_keeps_only_what_the_page_draws():
    """Issue 26 item 8: at 512 heads x 64 tokens x d_model 512 a cached scenario was 43 MiB, 16 of them the scaled
    scores the page never draws. Its arrays now hold the weights [512, 64, 64] and eight [64, 512]-sized ones."""
    tokens = tuple(f"w{i}" for i in range(64))
    sc = smh.multihead_scenario(Settings(tokens, 512, 128, 42, "lesson", False), 512)
    r = A.MultiHeadAttention(512, 512, seed=smh.DEFAULT_SEED).steps(sc.X)
    np.testing.assert_array_equal(sc.result.head_outputs, r.head_outputs)
    np.testing.assert_array_equal(sc.result.concat, r.concat)
    np.testing.assert_array_equal(sc.result.mean_weights, r.mean_weights)
    held = sum(a.nbytes for a in (*vars(sc).values(), *vars(sc.result).values()) if isinstance(a, np.ndarray))
    assert held <= 16 * 2**20 + 16 * 64 * 512 * 8 + 4 * 512 * 512 * 8 + 4096  # weights, W_q..W_o, the rest
    assert not any(isinstance(a, np.ndarray) and a.shape == r.scaled_scores.shape and a is not sc.result.weights
                   for a in (*vars(sc).values(), *vars(sc.result).values()))


def test_the_random_weights_note_states_this_runs_numbers_in_each_language():
    """The claim under part 4, from the live scenario: the mean entropy as a share of the uniform level, the mean
    overlap of two different heads, the link it is given; with one token and one head neither number (no
    spread to share, no pair of heads)."""

    sc = smh.multihead_scenario(sentence(), 4, 42, False)
    ceiling = np.log(6)  # 6 tokens, bidirectional: log n
    share = sc.head_entropy.mean() / ceiling
    overlap = sc.overlap[~np.eye(4, dtype=bool)].mean()
    note = smh.random_weights_note(sc.head_entropy, sc.overlap, 6, is_causal=False, link="./real-model")
    assert f"averages {100 * share:.0f}% of the uniform level" in note and f"overlap {overlap:.2f} on" in note
    assert "](./real-model)" in note
    causal = smh.multihead_scenario(sentence(), 4, 42, True)
    note = smh.random_weights_note(causal.head_entropy, None, 6, is_causal=True, link="x")
    assert f"averages {100 * causal.head_entropy.mean() / np.mean(np.log(np.arange(1, 7))):.0f}%" in note
    assert "overlap" not in note
    one = smh.random_weights_note(np.array([0.0]), np.ones((1, 1)), 1, is_causal=False, link="x")
    assert "random weights" in one and "%" not in one and "overlap" not in one
    for lang in ("pt", "tr"):
        with i18n.using(lang):
            shown = smh.random_weights_note(sc.head_entropy, sc.overlap, 6, is_causal=False, link="./real-model")
        assert "random weights" not in shown and "](./real-model)" in shown, (lang, shown)
        assert i18n.number(overlap, 2, lang=lang) in shown, (lang, shown)


def test_tables_are_sized_labelled_and_exported_without_being_computed_twice():
    from explorer.shell import i18n

    mh = smh.MultiHead(sentence(), 4, 42, False)
    sc = smh.multihead_scenario(mh.settings, 4, 42, False)
    assert smh.table_size(mh, "head_weights") == (4 * 6, 6) and smh.table_size(mh, "head_weights", (1, 3)) == (12, 6)
    assert smh.table_size(mh, "W_o") == (8, 8) and smh.table_size(mh, "concat") == (6, 8)
    view = smh.View(mh, sc, (1, 3))
    heads = smh.frame(view, "head_weights")
    assert heads.shape == (12, 6) and heads.index[0] == ("head 1", mh.settings.labels[0])
    np.testing.assert_array_equal(heads.to_numpy(), sc.result.weights[1:3].reshape(-1, 6))
    assert smh.frame(smh.View(mh, sc), "output").to_csv().splitlines()[0].startswith(",dim 0,dim 1")
    assert smh.numbers_title("head_weights", smh.GRID_MAX + 1).endswith("(the heads shown)")
    assert smh.View(mh, sc).grid_cols == 2 and smh.View(mh, sc, (0, 3)).grid_cols == 3
    with i18n.using("pt"):
        assert smh.diff_text(1.5e-16) == "1,5e-16" and smh.head_labels([2]) != ["head 2"]
    assert smh.diff_text(0.0) == "0 (same bits)"


def sentence() -> Settings:
    """The lesson's six tokens at d_model = 8 (the page's settings at a small width)."""
    return Settings(("The", "cat", "sat", "on", "the", "mat"), 8, 4, 42, "lesson", False)


def test_loop_check_agrees_up_to_1e_12_and_says_by_how_much():
    from explorer.shell import i18n
    assert smh.loop_check(0.0, 0.0) == ("agree", "success", "Vectorised and loop results agree: largest difference "
                                        "0 (same bits) (float64, tolerance 1e-12).", "✅")
    verdict, kind, text, icon = smh.loop_check(3e-13, 1e-12)  # the worst of the two, at the tolerance
    assert (verdict, kind, icon) == ("agree", "success", "✅") and "1.0e-12" in text
    verdict, kind, text, icon = smh.loop_check(2e-12, 1e-15)
    assert (verdict, kind, icon) == ("DIFFER", "error", "❌")
    assert text == "Vectorised and loop results differ by 2.0e-12 (tolerance 1e-12)."
    with i18n.using("pt"):
        shown = smh.loop_check(2e-12, 0.0)
    assert shown[0] != "DIFFER" and shown[1] == "error" and "2,0e-12" in shown[2] and shown[2] != text
