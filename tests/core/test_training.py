"""``attention.training``: the tasks, the shapes and checks of the model, the measurements, and (slow) the
training runs the lesson is built on: an induction head forms with two layers and not with one, knocking it
out breaks it, and the fixed-period task is solved by the positional shortcut."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from attention import heads, training

SMALL = training.Config(n_layers=2, n_heads=2, d_model=8, d_head=4, vocab=16, n_ctx=12, seed=0)


def run(cfg: training.Config, steps: int, task: str = "repeat", seed: int = 0, **kw):
    """All records of a training run and the trained model."""
    gen = training.train(cfg, steps=steps, task=task, seed=seed, **kw)
    records = []
    while True:
        try:
            records.append(next(gen))
        except StopIteration as stop:
            return records, stop.value


# --- the tasks ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", training.TASKS)
def test_a_batch_is_filler_then_a_run_of_distinct_tokens_written_twice(task):
    b = training.make_batch(task, 64, 20, 30, np.random.default_rng(0))
    assert b.tokens.shape == (64, 20) and b.tokens.dtype == np.int64
    assert b.tokens.min() >= 0 and b.tokens.max() < 30
    for t, p, pred, src in zip(b.tokens, b.period, b.predictable, b.source, strict=True):
        r = t[20 - 2 * p: 20 - p]
        assert np.array_equal(t[20 - p:], r) and len(set(r.tolist())) == p  # distinct, repeated
        assert not set(t[: 20 - 2 * p].tolist()) & set(r.tolist())  # the filler never uses the run's tokens
        assert np.array_equal(np.flatnonzero(pred), np.arange(20 - p, 19))
        for i in np.flatnonzero(pred):  # the source key holds the answer: the token after i's earlier occurrence
            assert t[src[i] - 1] == t[i] and t[src[i]] == t[i + 1]
    if task == "repeat_fixed":
        assert (b.period == 10).all()
    else:
        assert b.period.min() >= training.P_MIN and b.period.max() <= 10 and len(set(b.period.tolist())) > 3


def test_make_batch_errors_name_the_argument():
    rng = np.random.default_rng(0)
    for kwargs, name in ((dict(task="copy"), "task"), (dict(vocab=8), "vocab"), (dict(n=3), "n"),
                         (dict(batch=0), "batch")):
        args = dict(task="repeat", batch=2, n=16, vocab=20) | kwargs
        with pytest.raises(ValueError, match=name):
            training.make_batch(args["task"], args["batch"], args["n"], args["vocab"], rng)


# --- the model ------------------------------------------------------------------------------------------------
def test_params_attention_and_loss_have_the_documented_shapes():
    m = training.AttentionOnly(SMALL)
    assert {k: v.shape for k, v in m.params.items()} == training.param_shapes(SMALL)
    assert all(v.dtype == np.float32 for v in m.params.values())
    tokens = np.arange(10) % 16
    w = m.attention(tokens)
    assert w.shape == (2, 2, 10, 10)
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-5)
    assert not np.triu(w, 1).any()  # the causal mask: no weight on the future
    assert m.attention(np.stack([tokens, tokens])).shape == (2, 2, 2, 10, 10)
    assert m.logits(tokens).shape == (10, 16)
    # a freshly initialised model is close to a uniform guess
    assert abs(m.loss(tokens) - math.log(16)) < 0.5


def test_the_same_seed_gives_the_same_weights_and_the_same_run():
    assert all(np.array_equal(a, b) for a, b in zip(training.AttentionOnly(SMALL).params.values(),
                                                    training.AttentionOnly(SMALL).params.values(), strict=True))
    first, _ = run(SMALL, 4, snapshot_steps=[0, 4])
    again, _ = run(SMALL, 4, snapshot_steps=[0, 4])
    assert [r.loss for r in first] == [r.loss for r in again]
    assert np.array_equal(first[-1].attention, again[-1].attention)
    assert [r.step for r in first] == [0, 1, 2, 3, 4] and first[1].attention is None
    assert first[0].prefix_match.shape == first[0].previous_token.shape == (2, 2)
    assert first[0].score_grad.shape == first[0].max_weight.shape == first[0].score_std.shape == (2,)
    assert first[0].saturated.shape == (2,)


def test_the_scores_spread_and_the_saturated_share_are_measured_row_by_row():
    """``Record.score_std`` against a loop over rows (the std of the softmax's input over the keys j <= i, rows
    i >= 1), with and without ÷√d_head; ``Record.saturated`` against the rows' top weights."""
    rng = np.random.default_rng(0)
    s = rng.normal(size=(3, 2, 6, 6)) * 5  # [B, H, n, n]
    want = np.mean([np.std(s[b, h, i, :i + 1]) for b in range(3) for h in range(2) for i in range(1, 6)])
    assert training.loop.row_score_std(s) == pytest.approx(want)
    cfg = training.Config(**{**SMALL.__dict__, "d_head": 16})
    b = training.make_batch("repeat", 32, cfg.n_ctx, cfg.vocab, np.random.default_rng(0))
    spreads = []
    for scale in (True, False):
        fw = training.AttentionOnly(replace(cfg, scale=scale)).forward(b.tokens)
        raw = [qq @ kk.swapaxes(-1, -2) for qq, kk in zip(fw.q, fw.k, strict=True)]  # q·k, [B, H, n, n]
        np.testing.assert_allclose(fw.scores, [r / (4 if scale else 1) for r in raw], rtol=1e-5)  # ÷√16
        rec = training.loop.measure(fw, [np.zeros(1)] * 2, b, 0, 0.0)
        np.testing.assert_allclose(rec.score_std, [training.loop.row_score_std(x) for x in fw.scores])
        top = [w[:, :, 1:].max(axis=-1) for w in fw.weights]
        np.testing.assert_allclose(rec.saturated, [(t > training.SATURATED_WEIGHT).mean() for t in top])
        spreads.append(rec.score_std)
    assert spreads[0][0] * 4 == pytest.approx(spreads[1][0], rel=1e-4)  # layer 0 reads the same x: the factor √16
    one_hot = np.zeros((1, 1, 4, 4))
    one_hot[..., 0] = 1.0
    assert training.loop._max_weight([one_hot])[1].tolist() == [1.0]


def test_knocking_out_every_head_leaves_the_direct_path():
    m = training.AttentionOnly(SMALL)
    tokens = np.arange(12) % 16
    all_heads = [(layer, head) for layer in range(2) for head in range(2)]
    x0 = m.params["W_E"][tokens] + m.params["W_pos"][:12]
    np.testing.assert_allclose(m.logits(tokens, knockout=all_heads), x0 @ m.params["W_U"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tokens, message", [
    (np.zeros((2, 3, 4), int), "shape"),
    (np.zeros((2, 0), int), "shape"),
    (np.array([0.5, 1.0]), "integer"),
    (np.array([True, False]), "integer"),
    (np.array([0, 16]), "vocab"),
    (np.array([-1, 2]), "vocab"),
    (np.zeros(13, int), "n_ctx"),
])
def test_bad_tokens_raise_a_value_error_naming_tokens(tokens, message):
    m = training.AttentionOnly(SMALL)
    with pytest.raises(ValueError, match=f"tokens.*{message}|{message}.*tokens|tokens"):
        m.loss(tokens)
    with pytest.raises(ValueError, match=message):
        m.attention(tokens)


def test_other_bad_arguments_raise_a_value_error_naming_them():
    m = training.AttentionOnly(SMALL)
    tokens = np.arange(6)
    with pytest.raises(ValueError, match="tokens must hold at least 2"):
        m.loss(np.array([3]))
    with pytest.raises(ValueError, match="loss_mask"):
        m.loss(tokens, loss_mask=np.ones(6, bool))
    with pytest.raises(ValueError, match="loss_mask"):
        m.loss(tokens, loss_mask=np.zeros(5, bool))
    with pytest.raises(ValueError, match="knockout"):
        m.loss(tokens, knockout=[(2, 0)])
    with pytest.raises(ValueError, match="knockout"):
        m.loss(tokens, knockout=["x"])
    with pytest.raises(ValueError, match="params"):
        training.AttentionOnly(SMALL, params={"W_E": np.zeros((16, 8))})
    for field, value in (("n_layers", 0), ("d_head", 1.5), ("vocab", 1), ("n_ctx", True), ("seed", -1),
                         ("positions", "rope"), ("dtype", "float16"), ("init", "zeros"), ("scale", 1)):
        with pytest.raises(ValueError, match=field):
            training.Config(**{field: value})


@pytest.mark.parametrize("kwargs, name", [
    (dict(steps=-1), "steps"), (dict(batch=0), "batch"), (dict(lr=0.0), "lr"), (dict(lr=float("nan")), "lr"),
    (dict(task="copy"), "task"), (dict(seed=-2), "seed"), (dict(snapshot_steps=[5]), "snapshot_steps"),
    (dict(loss_on="some"), "loss_on"),
])
def test_bad_train_arguments_raise_on_the_first_step(kwargs, name):
    with pytest.raises(ValueError, match=name):
        next(training.train(SMALL, **({"steps": 3} | kwargs)))


def test_a_vocabulary_too_small_for_the_run_is_refused():
    with pytest.raises(ValueError, match="vocab"):
        next(training.train(training.Config(vocab=10, n_ctx=32), steps=1))


def test_the_scores_measure_what_they_say():
    """Both scores are attention.heads' (pooled over the batch): prefix-match is the induction score, whose targets
    on this task are the second copy's keys i - p + 1 (runs of p >= 3) and any repeated filler token's."""
    b = training.make_batch("repeat", 4, 12, 16, np.random.default_rng(1))
    n = 12
    # attention that always looks at the previous token (row 0 at itself)
    prev = np.zeros((4, 1, n, n))
    prev[:, :, 0, 0] = 1
    prev[:, :, np.arange(1, n), np.arange(n - 1)] = 1
    assert training.previous_token([prev])[0, 0] == 1.0
    # attention that looks at an induction target wherever a row has one (else at the first token)
    ind = np.zeros((4, 1, n, n))
    ind[:, :, :, 0] = 1
    for s in range(4):
        targets = heads.induction_targets(b.tokens[s])
        for i, t in targets.items():
            ind[s, 0, i] = 0
            ind[s, 0, i, t[0]] = 1
        for i in np.nonzero(b.predictable[s])[0]:  # the task's answer key is a target when the run is 3 or longer
            assert (b.period[s] < 3) or b.source[s, i] in targets[i]
    assert training.prefix_match([ind], b)[0, 0] == 1.0
    assert training.prefix_match([prev], b)[0, 0] == 0.0
    assert training.previous_token([ind])[0, 0] < 1.0
    logits = np.zeros((4, n, 16))
    logits[np.arange(4)[:, None], np.arange(n - 1)[None], b.tokens[:, 1:]] = 1.0  # always right
    assert training.accuracy(logits, b) == 1.0


def test_emergence_step_reads_the_layers_it_is_told():
    def rec(step, pm):
        z = np.zeros((2, 1))
        return training.Record(step, 0.0, 0.0, np.array(pm), z, z[:, 0], z[:, 0], z[:, 0], z[:, 0])
    records = [rec(0, [[0.9], [0.1]]), rec(1, [[0.9], [0.5]])]
    assert training.emergence_step(records) == 1
    assert training.emergence_step(records, min_layer=0) == 0
    assert training.emergence_step(records[:1]) is None


# --- the training runs the lesson shows (slow: 1-3 s each) -----------------------------------------------------
DEFAULT = training.Config(n_layers=2, n_heads=2, d_model=32, d_head=16, vocab=64, n_ctx=32)


@pytest.mark.slow
def test_an_induction_head_forms_by_step_300_in_at_least_4_of_5_seeds():
    formed = []
    for seed in range(5):
        records, _ = run(training.Config(**{**DEFAULT.__dict__, "seed": seed}), 300, seed=seed)
        assert records[0].loss == pytest.approx(math.log(64), abs=0.3)  # starts at a uniform guess
        formed.append(max(float(r.prefix_match[1:].max()) for r in records) > 0.4)
    assert sum(formed) >= 4, formed


@pytest.mark.slow
def test_one_layer_stays_at_most_0_3_accurate_after_600_steps():
    records, model = run(training.Config(**{**DEFAULT.__dict__, "n_layers": 1}), 600)
    assert records[-1].accuracy <= 0.3
    assert training.mechanism(model, "repeat").accuracy <= 0.3


@pytest.mark.slow
def test_knocking_out_the_induction_head_or_the_previous_token_head_breaks_it():
    """One head per layer: the circuit is one previous-token head and one induction head."""
    cfg = training.Config(**{**DEFAULT.__dict__, "n_heads": 1})
    _, model = run(cfg, 400)
    mech = training.mechanism(model, "repeat")
    assert mech.label == "induction" and mech.accuracy > 0.8
    assert mech.induction_head == (1, 0) and mech.knockout_accuracy[mech.induction_head] < 0.3
    assert mech.knockout_accuracy[mech.previous_head] < 0.3
    assert mech.previous_token[0, 0] > 0.5 and mech.prefix_match[1, 0] > 0.5


@pytest.mark.slow
def test_with_two_heads_knocking_out_layer_1_breaks_it_and_the_fixed_period_is_the_shortcut():
    _, model = run(DEFAULT, 400)
    mech = training.mechanism(model, "repeat")
    assert mech.label == "induction"
    assert mech.layer_knockout_accuracy[1] < 0.3 and mech.layer_knockout_accuracy[0] < 0.3
    records, fixed = run(DEFAULT, 400, task="repeat_fixed")
    shortcut = training.mechanism(fixed, "repeat_fixed")
    assert shortcut.label == "shortcut"
    assert shortcut.prefix_match[1:].max() > 0.9 and shortcut.previous_token[0].max() < 0.3
    assert shortcut.random_period_accuracy < 0.3 < shortcut.accuracy
