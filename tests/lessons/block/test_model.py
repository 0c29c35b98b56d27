"""The transformer-block lesson's numbers and claims: one block recomputed from its weights reproduces the core's
forward pass (tiny SmolLM2, the same loader), the losses and perplexity, and every branch of every claim on small
synthetic arrays, in each language."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from explorer.lessons.block import model as M
from explorer.shell import i18n, llm

TEXT = "The capital of France is Paris, and the capital of Germany is"


@pytest.fixture(scope="module")
def tiny():
    from tests.conftest import LESSON_MODEL

    return LESSON_MODEL.tiny_model("float32")


@pytest.fixture(scope="module")
def run(tiny):
    ids = tuple(tiny.encode(TEXT))
    return tiny, ids, M.measure(tiny, ids), tiny.forward(list(ids), keep_activations=True)


def test_measure_reads_the_core_forward_pass(run):
    lm, ids, m, out = run
    np.testing.assert_array_equal(m.streams, out.residuals[:, -1])
    np.testing.assert_array_equal(m.mlp_writes, out.mlp_outputs[:, -1])
    np.testing.assert_allclose(m.embedding_norms, np.linalg.norm(out.residuals[0].astype(float), axis=1))
    # the loss: -ln softmax of the actual next token, in float64 from the core's logits
    z = out.logits.astype(np.float64)
    log_p = z - z.max(1, keepdims=True) - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
    np.testing.assert_allclose(m.losses, -log_p[np.arange(len(ids) - 1), list(ids[1:])], rtol=1e-9)
    assert m.perplexity == pytest.approx(np.exp(m.losses.mean()))
    assert m.predicted == tuple(int(i) for i in out.logits[:-1].argmax(1))
    assert m.top_ids == llm.top_tokens(out.logits[-1])[0]


@pytest.mark.parametrize("layer", [0, 17, 29])
def test_one_block_recomputed_from_its_weights_reproduces_the_core(run, layer):
    lm, ids, m, out = run
    b = M.inside(lm, ids, layer, M.measure)
    scale = float(np.abs(out.residuals[layer + 1, -1]).max())
    # attention's write through W_o = the stream after attention minus the stream before (the core's numbers)
    np.testing.assert_allclose(b.attn, m.attn_writes[layer], atol=1e-5 * scale)
    np.testing.assert_allclose(b.head_writes.sum(0), b.attn, atol=1e-5 * scale)
    np.testing.assert_allclose(b.mlp, out.mlp_outputs[layer, -1], rtol=1e-4, atol=1e-5 * scale)
    # residuals[l+1] = residuals[l] + attention's write + the MLP's write, to float32 rounding
    np.testing.assert_allclose(b.x + b.attn + b.mlp, out.residuals[layer + 1, -1], atol=1e-5 * scale)
    # RMSNorm measured: x / sqrt(mean(x^2) + eps) has RMS ~1, times the gain is the normed vector
    assert b.divisor == pytest.approx(np.sqrt(np.mean(b.x ** 2) + m.eps))
    assert M.rms(b.x / b.divisor) == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_allclose(b.normed, b.x / b.divisor * b.gain, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b.hidden, b.gate / (1 + np.exp(-b.gate)) * b.up, rtol=1e-4, atol=1e-6)
    rows = M.inside_rows(b, m.eps)
    assert len(rows) == 14 + lm.config.n_heads and all(np.isfinite(v) for *_, v in rows)


def test_block_weights_refuses_a_block_out_of_range(tiny):
    with pytest.raises(ValueError, match="layer"):
        tiny.block_weights(tiny.config.n_layers)


def synthetic(streams, mlp, losses=(1.0, 2.0), predicted=(5, 9), ids=(3, 5, 7)) -> M.Measured:
    s = np.asarray(streams, dtype=np.float32)
    m = np.asarray(mlp, dtype=np.float32)
    return M.Measured(ids=ids, eps=1e-5, embedding_norms=np.ones(len(ids)), streams=s,
                      attn_writes=s[1:] - s[:-1] - m, mlp_writes=m, heads=np.zeros((len(m), 1, 1), np.float32),
                      losses=np.asarray(losses, float), predicted=predicted, top_ids=(1,), top_probabilities=(0.5,))


GROWS = synthetic([[1, 0], [3, 0], [2, 0], [9, 0]], [[1, 0], [0, 0], [8, 0]])
SHRINKS = synthetic([[4, 0], [3, 0], [1, 0]], [[0, 0], [-0.5, 0]], losses=(np.log(20), np.log(20)), predicted=(5, 7))


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_claims_say_what_the_arrays_show_in_every_language(lang):
    with i18n.using(lang):
        grows, shrinks = M.stream_claim(GROWS), M.stream_claim(SHRINKS)
        assert grows != shrinks and "9" in grows and "2" in grows  # block 2 adds the most (+7); block 1 shortens
        assert "−1" in grows and "−2" in shrinks
        # writes: GROWS's attention writes 1, 0, 1 against the MLP's 1, 0, 8; the longest single write: block 2's MLP
        assert M.largest_write(GROWS) == ("mlp", 2, 8.0)
        assert M.writes_claim(GROWS) != M.writes_claim(SHRINKS)
        assert M.hits(GROWS) == 1 and M.hits(SHRINKS) == 2
        assert i18n.general(20.0, 4) in M.loss_claim(SHRINKS)
        texts = {M.tied_claim(t, 100, 8) for t in (True, False, None)}
        assert len(texts) == 3


def test_stream_claim_branches():
    assert M.stream_claim(GROWS).startswith("The stream grows") and "Block 1 shortens" in M.stream_claim(GROWS)
    assert M.stream_claim(SHRINKS).startswith("The stream does not grow")
    assert "the MLP writes more" in M.writes_claim(GROWS)
    assert "the attention writes more" in M.writes_claim(SHRINKS)  # 1 + 1.5 against 0.5


def test_check_yourself_is_graded_from_the_numbers():
    assert M.answers(GROWS) == {"mlp_block": 2, "perplexity": "below"}  # exp(1.5) = 4.5 < 10
    assert M.answers(SHRINKS)["perplexity"] == "above"  # 20 > 10
    rows = M.grade(GROWS, {"mlp_block": 2, "perplexity": "above"})
    assert [ok for *_, ok in rows] == [True, False]
    assert M.grade_claim(rows) == ("info", "**1 of 2 right.**")
    assert M.grade_claim(M.grade(GROWS, {"mlp_block": 2, "perplexity": "below"}))[0] == "success"
    one = dataclasses.replace(GROWS, losses=np.zeros(0), predicted=(), ids=(3,))
    assert M.answers(one)["perplexity"] is None and len(M.grade(one, {})) == 1  # no loss: one question


def test_smollm2s_file_ties_its_embeddings_and_the_claim_says_so(tmp_path):
    """The page's "tied embeddings" sentence is read from the file's tensor table: SmolLM2's has no output.weight; a
    file with one (the tiny writer, untied) gets the other sentence."""
    from tests.core.llama_support import TINY, real_model_path, write_tiny_gguf

    assert llm.read_weight_storage(real_model_path()).tied
    untied = llm.read_weight_storage(write_tiny_gguf(tmp_path / "untied.gguf", tied=False, config=TINY).path)
    assert not untied.tied
    assert "tied embeddings" in M.tied_claim(True, 49152, 576) and "not tied" in M.tied_claim(False, 49152, 576)
