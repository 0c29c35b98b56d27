"""The hand-written backward pass of ``attention.training.AttentionOnly``: every parameter's gradient against
central finite differences in float64 (relative error <= 1e-6), and against ``torch.autograd`` on the same
parameters (a test dependency; slow and torch marked, as ``tests/core/test_llama_live.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from attention import training
from tests.conftest import require

TINY = dict(n_layers=2, n_heads=2, d_model=4, d_head=2, vocab=5, n_ctx=5, dtype="float64")
CASES = {  # every branch of the forward pass: positions, scaling, a knocked-out head, a loss mask, the init
    "learned": dict(positions="learned"),
    "sinusoidal-unscaled": dict(positions="sinusoidal", scale=False, init="unit-variance"),
    "no-positions-3-layers": dict(positions="none", n_layers=3, n_heads=1),
}


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """``max |a - b| / max |b|``: the error relative to the gradient's scale."""
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-300))


def numeric_grad(model: training.AttentionOnly, tokens, name: str, eps: float = 1e-5, **kw) -> np.ndarray:
    """Central differences of ``model.loss`` with respect to every entry of ``model.params[name]``."""
    p = model.params[name]
    out = np.zeros_like(p)
    for i in np.ndindex(p.shape):
        old = p[i]
        p[i] = old + eps
        plus = model.loss(tokens, **kw)
        p[i] = old - eps
        minus = model.loss(tokens, **kw)
        p[i] = old
        out[i] = (plus - minus) / (2 * eps)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_every_gradient_matches_finite_differences(case):
    cfg = training.Config(**{**TINY, **CASES[case]}, seed=3)
    model = training.AttentionOnly(cfg)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, cfg.vocab, (2, cfg.n_ctx))
    kw = {}
    if case == "learned":  # a knocked-out head and a loss over some positions only
        kw = dict(knockout=[(1, 0)], loss_mask=rng.random((2, cfg.n_ctx - 1)) < 0.6)
    loss, grads = model.loss_and_grads(tokens, **kw)
    assert loss == pytest.approx(model.loss(tokens, **kw), rel=1e-12)
    assert set(grads) == set(model.params)
    for name, g in grads.items():
        assert g.shape == model.params[name].shape and g.dtype == np.float64, name
        assert relative_error(g, numeric_grad(model, tokens, name, **kw)) <= 1e-6, name
    if kw:  # the knocked-out head's own weights get no gradient
        assert not grads["layers.1.W_o"][0].any() and not grads["layers.1.W_q"][0].any()


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("case", list(CASES))
def test_every_gradient_matches_torch_autograd(case):
    torch = require("torch")
    cfg = training.Config(**{**TINY, **CASES[case]}, seed=5)
    model = training.AttentionOnly(cfg)
    tokens = np.random.default_rng(1).integers(0, cfg.vocab, (3, cfg.n_ctx))
    mask = np.random.default_rng(2).random((3, cfg.n_ctx - 1)) < 0.7
    loss, grads = model.loss_and_grads(tokens, loss_mask=mask)

    P = {k: torch.tensor(v, requires_grad=True) for k, v in model.params.items()}
    t = torch.tensor(tokens)
    n = cfg.n_ctx
    x = P["W_E"][t]
    if cfg.positions == "learned":
        x = x + P["W_pos"][:n]
    elif cfg.positions == "sinusoidal":
        from attention.embeddings import sinusoidal_positional_encoding

        x = x + torch.tensor(sinusoidal_positional_encoding(n, cfg.d_model))
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for layer in range(cfg.n_layers):
        q, k, v = (torch.einsum("bnd,hde->bhne", x, P[f"layers.{layer}.{w}"]) for w in ("W_q", "W_k", "W_v"))
        s = q @ k.transpose(-1, -2) * cfg.score_scale
        a = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
        x = x + torch.einsum("bhne,hed->bnd", a @ v, P[f"layers.{layer}.W_o"])
    logits = x @ P["W_U"]
    per_position = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, cfg.vocab), t[:, 1:].reshape(-1),
                                                     reduction="none")
    ref = per_position[torch.tensor(mask).reshape(-1)].mean()
    ref.backward()
    assert loss == pytest.approx(ref.item(), rel=1e-12)
    for name, g in grads.items():
        assert relative_error(g, P[name].grad.numpy()) <= 1e-10, name


@pytest.mark.slow
@pytest.mark.torch
def test_adam_matches_torch():
    torch = require("torch")
    rng = np.random.default_rng(0)
    params = {"w": rng.normal(size=(4, 3))}
    ref = torch.tensor(params["w"].copy(), requires_grad=True)
    opt = torch.optim.Adam([ref], lr=1e-2)
    adam = training.Adam(params, lr=1e-2)
    for _ in range(5):
        g = rng.normal(size=(4, 3))
        adam.step({"w": g})
        ref.grad = torch.tensor(g)
        opt.step()
    np.testing.assert_allclose(params["w"], ref.detach().numpy(), rtol=1e-12, atol=1e-14)
