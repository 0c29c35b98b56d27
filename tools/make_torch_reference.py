"""Record PyTorch's attention outputs (float64) into ``tests/data/torch_reference.npz``.

Every case stores its inputs next to PyTorch's outputs, so ``tests/test_torch_parity.py``
can recompute it with ``attention`` without PyTorch installed. Run from the repo root:

    python tools/make_torch_reference.py

Keys are ``"<case>/<field>"``. Inputs come from ``np.random.default_rng(seed)`` (fixed
per case), so re-running the script gives the same file for the same PyTorch.

Mask conventions (they differ, so every conversion below is explicit):
    * ours (``attention``): boolean ``True`` = MAY attend;
    * ``torch.nn.functional.scaled_dot_product_attention``: boolean ``True`` = MAY attend
      (the same as ours, stored as-is under ``attn_mask``);
    * ``torch.nn.MultiheadAttention`` ``attn_mask`` / ``key_padding_mask``: boolean
      ``True`` = BLOCKED (stored as-is under ``torch_attn_mask`` /
      ``torch_key_padding_mask``; ours is the logical NOT of it).

SDPA does not return its weights; they are recorded by running PyTorch's SDPA a second
time with ``v = I[n_k]`` (``weights @ I = weights``), so they are PyTorch's own numbers.

What PyTorch 2.13 does with a fully masked query row (recorded, and checked by the tests):
    * SDPA (math path, CPU float64), boolean or ``-inf`` float mask: zero weights and a
      zero output row (as ours);
    * ``nn.MultiheadAttention`` with ``need_weights=True`` (recorded here): NaN weights and a
      NaN output row. (With ``need_weights=False`` it gives a zero head output in training
      mode, which goes through SDPA, but NaN again on the eval/no-grad fast path.) Ours gives
      zero weights, so that row's output is just the output bias ``b_o``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "torch_reference.npz"


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def _sdpa_case(seed: int, q_shape, k_shape, v_shape, attn_mask=None, *, is_causal=False, scale=None):
    """One SDPA case: inputs, torch output ``[..., n_q, d_v]`` and torch weights ``[..., n_q, n_k]``."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s) for s in (q_shape, k_shape, v_shape))
    kwargs = {"is_causal": is_causal, "scale": scale}
    mask_t = None if attn_mask is None else _t(attn_mask)  # SDPA bool: True = may attend (= ours)
    out = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=mask_t, **kwargs)
    eye = torch.eye(k.shape[-2], dtype=torch.float64)  # weights @ I = weights
    weights = F.scaled_dot_product_attention(_t(q), _t(k), eye, attn_mask=mask_t, **kwargs)
    case = {"q": q, "k": k, "v": v, "output": _np(out), "weights": _np(weights),
            "is_causal": np.array(is_causal), "scale": np.array(np.nan if scale is None else scale)}
    if attn_mask is not None:
        case["attn_mask"] = attn_mask
    return case


def _mha_case(seed: int, batch: int, n: int, d_model: int, n_heads: int, *, bias: bool,
              causal: bool = False, lengths=None, left_pad=None):
    """One ``nn.MultiheadAttention(batch_first=True)`` case with random (non-zero) biases."""
    rng = np.random.default_rng(seed)
    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True, dtype=torch.float64)
    params = {
        "in_proj_weight": rng.normal(0, d_model**-0.5, (3 * d_model, d_model)),
        "out_proj_weight": rng.normal(0, d_model**-0.5, (d_model, d_model)),
    }
    if bias:  # torch initialises both biases to 0, which would test nothing
        params["in_proj_bias"] = rng.normal(0, 0.5, 3 * d_model)
        params["out_proj_bias"] = rng.normal(0, 0.5, d_model)
    with torch.no_grad():
        mha.in_proj_weight.copy_(_t(params["in_proj_weight"]))
        mha.out_proj.weight.copy_(_t(params["out_proj_weight"]))
        if bias:
            mha.in_proj_bias.copy_(_t(params["in_proj_bias"]))
            mha.out_proj.bias.copy_(_t(params["out_proj_bias"]))
    mha.eval()
    x = rng.standard_normal((batch, n, d_model))
    case = {"x": x, "n_heads": np.array(n_heads), **params}
    kwargs = {}
    if causal:
        # torch MHA: True = BLOCKED, so the causal mask is the strict upper triangle (key j > query i).
        case["torch_attn_mask"] = np.triu(np.ones((n, n), dtype=bool), k=1)
        kwargs["attn_mask"] = _t(case["torch_attn_mask"])
    if lengths is not None or left_pad is not None:
        # torch MHA: True = padding (BLOCKED). Right padding: key j of item b is padding iff
        # j >= lengths[b]; left padding: iff j < left_pad[b].
        j = np.arange(n)[None, :]
        if lengths is not None:
            case["torch_key_padding_mask"] = j >= np.asarray(lengths)[:, None]
        else:
            case["torch_key_padding_mask"] = j < np.asarray(left_pad)[:, None]
        kwargs["key_padding_mask"] = _t(case["torch_key_padding_mask"])
    xt = _t(x)
    with torch.no_grad():
        out, w_heads = mha(xt, xt, xt, need_weights=True, average_attn_weights=False, **kwargs)
        out_avg, w_mean = mha(xt, xt, xt, need_weights=True, average_attn_weights=True, **kwargs)
    if not torch.equal(out.isnan(), out_avg.isnan()) or not torch.allclose(out, out_avg, equal_nan=True):
        raise RuntimeError("torch MHA output depends on average_attn_weights")
    case.update(output=_np(out), weights=_np(w_heads), mean_weights=_np(w_mean))
    return case


def build_cases() -> dict[str, dict[str, np.ndarray]]:
    """Every reference case, ``{case: {field: array}}`` (float64, fixed seeds)."""
    rng = np.random.default_rng(2024)
    bool_mask = rng.random((4, 6)) < 0.6
    bool_mask[:, 0] = True  # no fully masked row here (that has its own case)
    float_mask = rng.normal(0, 1, (4, 6))
    float_mask[rng.random((4, 6)) < 0.3] = -np.inf
    float_mask[:, 2] = 0.5  # keep every row alive
    masked_row = np.ones((3, 5), dtype=bool)
    masked_row[1] = False  # query 1 may attend to nothing
    float_masked_row = np.where(masked_row, 0.0, -np.inf)
    float_masked_row[0, 3] = -2.0
    cases = {
        "sdpa_bool_mask": _sdpa_case(1, (2, 4, 8), (2, 6, 8), (2, 6, 5), bool_mask),
        "sdpa_float_mask": _sdpa_case(2, (2, 4, 8), (2, 6, 8), (2, 6, 5), float_mask),
        "sdpa_causal_q_lt_k": _sdpa_case(3, (3, 4), (5, 4), (5, 3), is_causal=True),
        "sdpa_causal_q_gt_k": _sdpa_case(4, (6, 4), (4, 4), (4, 3), is_causal=True),
        "sdpa_scale": _sdpa_case(5, (4, 8), (5, 8), (5, 2), scale=0.3),
        # [batch=2, heads=3] queries; keys shared over the batch, values over the heads, one mask for all.
        "sdpa_broadcast": _sdpa_case(6, (2, 3, 4, 8), (1, 3, 5, 8), (2, 1, 5, 6), bool_mask[:, :5]),
        "sdpa_fully_masked_bool": _sdpa_case(7, (3, 4), (5, 4), (5, 2), masked_row),
        "sdpa_fully_masked_float": _sdpa_case(8, (3, 4), (5, 4), (5, 2), float_masked_row),
        "mha_bias": _mha_case(10, 2, 5, 8, 2, bias=True),
        "mha_no_bias": _mha_case(11, 2, 5, 8, 4, bias=False),
        "mha_causal": _mha_case(12, 2, 5, 8, 2, bias=True, causal=True),
        "mha_key_padding": _mha_case(13, 2, 5, 8, 2, bias=True, lengths=[5, 3]),
        "mha_causal_key_padding": _mha_case(14, 2, 5, 12, 3, bias=True, causal=True, lengths=[4, 2]),
        # item 1 is left-padded by one key: with the causal mask, its query 0 sees no key at all.
        "mha_fully_masked_row": _mha_case(15, 2, 4, 8, 2, bias=True, causal=True, left_pad=[0, 1]),
    }
    # What torch does with the fully masked rows (documented above; fail loudly if it changes).
    for name in ("sdpa_fully_masked_bool", "sdpa_fully_masked_float"):
        if not (cases[name]["output"][1] == 0).all() or not (cases[name]["weights"][1] == 0).all():
            print(f"note: torch {torch.__version__} no longer gives a zero row in {name}", file=sys.stderr)
    return cases


def flatten(cases: dict[str, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {f"{case}/{field}": value for case, fields in cases.items() for field, value in fields.items()}


def main() -> None:
    arrays = flatten(build_cases())
    arrays["meta/torch_version"] = np.array(torch.__version__)
    arrays["meta/numpy_version"] = np.array(np.__version__)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(arrays)} arrays, torch {torch.__version__})")


if __name__ == "__main__":
    main()
