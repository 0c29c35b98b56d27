"""attention.training.mechanism measures a batch a chunk of sequences at a time (issue 26, item 8: the server's
memory): the same numbers as one pass over the whole batch, a fraction of the memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from attention import training
from attention.training import loop


def trained(task: str, **cfg) -> tuple[training.Config, training.AttentionOnly]:
    config = training.Config(**cfg)
    model = training.AttentionOnly(config)
    for _ in training.train(config, steps=20, batch=8, task=task, seed=1, model=model):
        pass
    return config, model


@pytest.mark.parametrize("task", ["repeat", "repeat_fixed"])
def test_mechanism_equals_one_pass_over_the_whole_batch(task):
    config, model = trained(task, n_layers=2, n_heads=2, d_model=16, d_head=8, n_ctx=16, vocab=64)
    mech = training.mechanism(model, task, seed=3, batch=80)  # 80 = 2.5 chunks: a short last chunk
    b = loop.mechanism_batch(config, task, 3, 80)
    with loop.one_blas_thread():
        whole = model.forward(b.tokens)
        knocked = model.forward(b.tokens, knockout=[(1, 1)])
    assert mech.accuracy == loop.accuracy(whole.logits, b)
    assert np.array_equal(mech.prefix_match, loop.prefix_match(whole.weights, b))
    assert np.array_equal(mech.previous_token, loop.previous_token(whole.weights))
    assert mech.knockout_accuracy[1, 1] == loop.accuracy(knocked.logits, b)
    if task == "repeat_fixed":  # the random-period batch, measured the same way
        rb = loop.mechanism_batch(config, "repeat", 3, 80)
        with loop.one_blas_thread():
            rfw = model.forward(rb.tokens)
        assert mech.random_period_accuracy == loop.accuracy(rfw.logits, rb)
        assert np.array_equal(mech.random_period_prefix_match, loop.prefix_match(rfw.weights, rb))


@pytest.mark.slow
def test_mechanism_keeps_one_chunk_of_intermediates_at_a_time():
    """n = 64, 2 layers of 4 heads: one pass over the 256 sequences keeps about 260 MB of intermediates."""
    _, model = trained("repeat", n_layers=2, n_heads=4, d_model=32, d_head=32, n_ctx=64, vocab=128)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        training.mechanism(model, "repeat", seed=0)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20, f"{peak / 2**20:.0f} MiB"
