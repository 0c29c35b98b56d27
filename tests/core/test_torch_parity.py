"""Parity with PyTorch: recorded reference data always, live PyTorch when it is installed.

``tests/data/torch_reference.npz`` is written by ``tools/make_torch_reference.py`` (float64,
keys ``"<case>/<field>"``, inputs stored with the outputs), so these tests need no PyTorch.

Mask conventions (converted explicitly below):
    * ours and torch SDPA: boolean ``True`` = may attend (stored as-is, used as-is);
    * torch ``nn.MultiheadAttention`` ``attn_mask`` / ``key_padding_mask``: ``True`` =
      BLOCKED (stored as ``torch_*``); ours is the logical NOT.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from attention import MultiHeadAttention, scaled_dot_product_attention
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "tests" / "data" / "torch_reference.npz"
TOL = {"rtol": 0, "atol": 1e-12}


def _load_reference() -> dict[str, dict[str, np.ndarray]]:
    cases: dict[str, dict[str, np.ndarray]] = {}
    with np.load(REFERENCE) as data:
        for key in data.files:
            case, field = key.split("/", 1)
            cases.setdefault(case, {})[field] = data[key]
    return cases


REF = _load_reference()
SDPA_CASES = sorted(c for c in REF if c.startswith("sdpa_"))
MHA_CASES = sorted(c for c in REF if c.startswith("mha_"))


def ours_sdpa(case: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Our SDPA on a recorded case; its ``attn_mask`` is SDPA's (True = may attend), the same as ours."""
    scale = float(case["scale"])
    return scaled_dot_product_attention(
        case["q"], case["k"], case["v"], case.get("attn_mask"),
        is_causal=bool(case["is_causal"]), scale=None if math.isnan(scale) else scale,
    )


def ours_mha(case: dict[str, np.ndarray]):
    """Our MHA loaded from the recorded torch parameters; torch's True = BLOCKED masks inverted."""
    layer = MultiHeadAttention.from_torch(case["in_proj_weight"], case.get("in_proj_bias"),
                                          case["out_proj_weight"], case.get("out_proj_bias"), int(case["n_heads"]))
    attn = case.get("torch_attn_mask")
    kpm = case.get("torch_key_padding_mask")
    result = layer.steps(case["x"],
                                    attn_mask=None if attn is None else ~attn,  # torch True = blocked -> ours
                                    key_padding_mask=None if kpm is None else ~kpm)  # torch True = padding -> ours
    return layer, result


# --- recorded reference (always runs) ---------------------------------------------------


def test_reference_file_is_small_and_complete():
    assert REFERENCE.stat().st_size < 200_000
    assert {"sdpa_bool_mask", "sdpa_float_mask", "sdpa_causal_q_lt_k", "sdpa_causal_q_gt_k", "sdpa_scale",
            "sdpa_broadcast", "sdpa_fully_masked_bool", "sdpa_fully_masked_float", "mha_bias", "mha_no_bias",
            "mha_causal", "mha_key_padding", "mha_causal_key_padding", "mha_fully_masked_row"} <= set(REF)
    assert str(REF["meta"]["torch_version"]).startswith("2.")
    for case in SDPA_CASES + MHA_CASES:
        assert REF[case]["output"].dtype == np.float64


@pytest.mark.parametrize("name", SDPA_CASES)
def test_sdpa_matches_recorded_torch(name):
    case = REF[name]
    out, w = ours_sdpa(case)
    np.testing.assert_allclose(out, case["output"], **TOL)
    np.testing.assert_allclose(w, case["weights"], **TOL)


def test_recorded_sdpa_fully_masked_rows_are_zero():
    """PyTorch 2.13 SDPA (math path) gives a zero row for a query that may attend to nothing, as ours."""
    for name in ("sdpa_fully_masked_bool", "sdpa_fully_masked_float"):
        case = REF[name]
        assert (case["output"][1] == 0).all() and (case["weights"][1] == 0).all()
        out, w = ours_sdpa(case)
        assert (out[1] == 0).all() and (w[1] == 0).all()


def test_recorded_causal_is_upper_left_aligned():
    for name in ("sdpa_causal_q_lt_k", "sdpa_causal_q_gt_k"):
        w = REF[name]["weights"]
        i, j = np.indices(w.shape)
        assert (w[j > i] == 0).all() and (w[j <= i] > 0).all()


@pytest.mark.parametrize("name", [c for c in MHA_CASES if c != "mha_fully_masked_row"])
def test_mha_matches_recorded_torch(name):
    case = REF[name]
    _, r = ours_mha(case)
    np.testing.assert_allclose(r.output, case["output"], **TOL)
    np.testing.assert_allclose(r.weights, case["weights"], **TOL)  # average_attn_weights=False
    np.testing.assert_allclose(r.mean_weights, case["mean_weights"], **TOL)  # torch's default
    np.testing.assert_allclose(case["weights"].mean(axis=1), case["mean_weights"], **TOL)


def test_mha_fully_masked_row_differs_from_torch_by_design():
    """Torch's nn.MultiheadAttention gives NaN for a query that sees no key; ours gives zero
    weights and a zero head output, so that row's output is the output bias. Other rows agree."""
    case = REF["mha_fully_masked_row"]
    dead = np.zeros(case["output"].shape[:2], dtype=bool)
    dead[1, 0] = True  # item 1 is left-padded by one key, and causal query 0 sees only key 0
    assert np.isnan(case["output"][dead]).all() and not np.isnan(case["output"][~dead]).any()
    assert np.isnan(case["weights"][1, :, 0]).all()
    layer, r = ours_mha(case)
    assert (r.weights[1, :, 0] == 0).all() and (r.concat[1, 0] == 0).all()
    np.testing.assert_array_equal(r.output[1, 0], layer.b_o)
    np.testing.assert_allclose(r.output[~dead], case["output"][~dead], **TOL)
    alive = ~np.isnan(case["weights"])
    np.testing.assert_allclose(r.weights[alive], case["weights"][alive], **TOL)


def test_from_torch_layout():
    """in_proj_weight rows are [W_q; W_k; W_v] in torch's x @ W.T layout; ours stores the transposes."""
    case = REF["mha_bias"]
    layer, _ = ours_mha(case)
    e = case["x"].shape[-1]
    np.testing.assert_array_equal(layer.W_k, case["in_proj_weight"][e:2 * e].T)
    np.testing.assert_array_equal(layer.W_o, case["out_proj_weight"].T)
    np.testing.assert_array_equal(layer.b_v, case["in_proj_bias"][2 * e:])
    layer_nb, _ = ours_mha(REF["mha_no_bias"])
    assert layer_nb.b_q is None and layer_nb.b_o is None


# --- live PyTorch (a test dependency: fails without torch) --------------------------------


def _torch():
    return require("torch")


def _reference_script():
    spec = importlib.util.spec_from_file_location("make_torch_reference", REPO / "tools" / "make_torch_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.torch
def test_live_torch_reproduces_recorded_file():
    _torch()
    live = _reference_script().build_cases()
    assert set(live) == set(REF) - {"meta"}
    for name, fields in live.items():
        assert set(fields) == set(REF[name]), name
        for field, value in fields.items():
            np.testing.assert_allclose(value, REF[name][field], rtol=0, atol=1e-12, equal_nan=True,
                                       err_msg=f"{name}/{field}")


@pytest.mark.torch
@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape", "mask_kind"),
    [
        ((5, 8), (5, 8), (5, 8), None),
        ((2, 4, 7, 16), (2, 4, 9, 16), (2, 4, 9, 3), "bool"),
        ((3, 1, 6, 4), (1, 2, 6, 4), (3, 2, 6, 5), "float"),
        ((7, 3), (4, 3), (4, 2), "causal"),
        ((2, 3, 3), (2, 8, 3), (2, 8, 1), "causal"),
    ],
)
def test_live_sdpa(q_shape, k_shape, v_shape, mask_kind):
    torch = _torch()
    rng = np.random.default_rng(sum(q_shape) + sum(k_shape))
    q, k, v = (rng.standard_normal(s) for s in (q_shape, k_shape, v_shape))
    n_q, n_k = q_shape[-2], k_shape[-2]
    mask, kwargs = None, {}
    if mask_kind == "bool":
        mask = rng.random((n_q, n_k)) < 0.5  # SDPA bool: True = may attend, as ours
        mask[0] = False  # one fully masked row
    elif mask_kind == "float":
        mask = np.where(rng.random((n_q, n_k)) < 0.3, -np.inf, rng.normal(size=(n_q, n_k)))
    elif mask_kind == "causal":
        kwargs["is_causal"] = True
    t = torch.from_numpy
    expected = torch.nn.functional.scaled_dot_product_attention(
        t(q), t(k), t(v), attn_mask=None if mask is None else t(mask), **kwargs).numpy()
    out, _ = scaled_dot_product_attention(q, k, v, mask, **kwargs)
    np.testing.assert_allclose(out, expected, **TOL)


@pytest.mark.torch
def test_live_sdpa_float32():
    torch = _torch()
    rng = np.random.default_rng(32)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((2, 6, 16), (2, 6, 16), (2, 6, 8)))
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=True).numpy()
    out, w = scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.dtype == np.float32 == expected.dtype and w.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("bias", [True, False])
def test_live_mha_default_init(bias):
    """A torch module with its own initialisation, causal attn_mask and key_padding_mask."""
    torch = _torch()
    torch.manual_seed(7)
    n, e, heads = 6, 12, 4
    mha = torch.nn.MultiheadAttention(e, heads, bias=bias, batch_first=True, dtype=torch.float64).eval()
    x = torch.from_numpy(np.random.default_rng(7).standard_normal((3, n, e)))
    torch_attn_mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # True = BLOCKED (future keys)
    torch_kpm = torch.tensor([[False] * n, [False] * 4 + [True] * 2, [False] * 2 + [True] * 4])  # True = padding
    with torch.no_grad():
        out, w = mha(x, x, x, attn_mask=torch_attn_mask, key_padding_mask=torch_kpm, average_attn_weights=False)
        _, w_mean = mha(x, x, x, attn_mask=torch_attn_mask, key_padding_mask=torch_kpm)

    def arr(p):
        return None if p is None else p.detach().numpy()

    layer = MultiHeadAttention.from_torch(arr(mha.in_proj_weight), arr(mha.in_proj_bias),
                                          arr(mha.out_proj.weight), arr(mha.out_proj.bias), heads)
    r = layer.steps(x.numpy(), attn_mask=~torch_attn_mask.numpy(),  # ours: True = may attend
                               key_padding_mask=~torch_kpm.numpy())  # ours: True = real key
    np.testing.assert_allclose(r.output, out.numpy(), **TOL)
    np.testing.assert_allclose(r.weights, w.numpy(), **TOL)
    np.testing.assert_allclose(r.mean_weights, w_mean.numpy(), **TOL)
    # the same through our is_causal flag instead of an explicit mask
    out_c, _ = layer.forward(x.numpy(), key_padding_mask=~torch_kpm.numpy(), is_causal=True)
    np.testing.assert_allclose(out_c, out.numpy(), **TOL)
