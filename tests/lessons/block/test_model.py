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


MONO = synthetic([[1, 0], [2, 0], [4, 0]], [[0, 0], [1, 0]])  # grows in every block: no "shortens" sentence


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_claims_say_what_the_arrays_show_in_every_language(lang):
    with i18n.using(lang):
        grows, shrinks = M.stream_claim(GROWS), M.stream_claim(SHRINKS)
        assert grows != shrinks and "9" in grows and "2" in grows  # block 2 adds the most (+7); block 1 shortens
        assert "−1" in grows and "−2" in shrinks
        # writes: GROWS's attention writes 1, 1, 1 against the MLP's 1, 0, 8; the longest single write: block 2's MLP
        assert M.largest_write(GROWS) == ("mlp", 2, 8.0)
        assert M.writes_claim(GROWS) != M.writes_claim(SHRINKS)
        assert M.hits(GROWS) == 1 and M.hits(SHRINKS) == 2
        assert i18n.general(20.0, 4) in M.loss_claim(SHRINKS)
        texts = {M.tied_claim(t, 100, 8) for t in (True, False, None)}
        assert len(texts) == 3
        assert M.embedding_claim(GROWS, 2) != M.embedding_claim(SHRINKS, 2)
        assert M.cancel_claim(GROWS) != M.cancel_claim(MONO)


def test_stream_claim_states_the_counts_the_biggest_steps_and_its_branch():
    assert M.stream_claim(GROWS) == (
        "The stream grows: ‖x‖ goes from 1 (the embedding) to 9 before the final norm, 9 times as long. It gets "
        "longer in 2 of the 3 blocks; block 2 adds the most (+7). Block 1 shortens it most (−1): a write can cancel "
        "part of the stream.")
    assert M.stream_claim(SHRINKS) == (
        "The stream does not grow overall: ‖x‖ goes from 4 (the embedding) to 1 before the final norm (0.25 times). "
        "No block makes it longer. Block 1 shortens it most (−2): a write can cancel part of the stream.")
    assert M.stream_claim(MONO) == (  # no block shortens it: no sentence about shortening
        "The stream grows: ‖x‖ goes from 1 (the embedding) to 4 before the final norm, 4 times as long. It gets "
        "longer in 2 of the 2 blocks; block 1 adds the most (+2).")
    flat = synthetic([[1, 0], [1, 0], [3, 0]], [[0, 0], [0, 0]])  # block 0 leaves the length as it was
    assert "It gets longer in 1 of the 2 blocks; block 1 adds the most (+2)." in M.stream_claim(flat)


def test_writes_claim_states_the_totals_in_order_and_the_wins():
    # GROWS: attention 1, 1, 1 (total 3), MLP 1, 0, 8 (total 9): the MLP writes more in block 2 only (a tie in 0)
    assert M.writes_claim(GROWS) == (
        "Summed over the 3 blocks, the MLP writes more (9 against 3 for the attention); it writes more in 1 of the 3 "
        "blocks. The longest single write is block 2's MLP (‖·‖ = 8).")
    # SHRINKS: attention 1, 1.5 (total 2.5), MLP 0, 0.5: attention wins both blocks
    assert M.writes_claim(SHRINKS) == (
        "Summed over the 2 blocks, the attention writes more (2.5 against 0.5 for the MLP); it writes more in 2 of "
        "the 2 blocks. The longest single write is block 1's attention (‖·‖ = 1.5).")


def inside_with_heads(head_writes) -> M.Inside:
    h = np.asarray(head_writes, dtype=float)
    z = np.zeros(h.shape[1])
    return M.Inside(0, z + 1, 1.0, z + 1, z, h, h.sum(0), z, z, z, z, z)


def test_head_norms_are_l2_norms_and_biggest_head_their_argmax():
    b = inside_with_heads([[3, 4, 0], [0, 0, -6], [1, 1, 1]])  # norms 5, 6, √3
    np.testing.assert_allclose(b.head_norms, [5.0, 6.0, np.sqrt(3)])
    head, share = M.biggest_head(b)
    assert head == 1 and share == pytest.approx(6 / (11 + np.sqrt(3)))
    assert M.biggest_head(inside_with_heads(np.zeros((2, 3)))) == (0, 0.0)


def test_rms_claim_says_just_under_one_with_the_measured_value():
    small = inside_with_heads(np.zeros((1, 4)))
    small = dataclasses.replace(small, x=np.full(4, 0.01), divisor=float(np.sqrt(1e-4 + 1e-5)))  # RMS 0.9535
    assert M.rms_claim(small).startswith(
        "x / √(…) has RMS just under 1, because ε is added inside the root: here 0.9535")
    big = dataclasses.replace(small, x=np.full(4, 10.0), divisor=float(np.sqrt(100 + 1e-5)))
    assert "here 1 to four digits" in M.rms_claim(big)


def test_loss_claim_gives_each_number_its_own_plural():
    one_hit = dataclasses.replace(GROWS, losses=np.log([8.0] * 8), predicted=(5,) + (0,) * 7, ids=(3, 5) + (9,) * 7)
    text = M.loss_claim(one_hit)
    assert "Over 8 predictions:" in text and "at 1 position out of 8." in text
    assert "at 2 positions out of 2." in M.loss_claim(SHRINKS)


def test_sentences_follow_the_data_and_the_file():
    assert "3 times as long" not in M.embedding_claim(GROWS, 2) and "9 times as long" in M.embedding_claim(GROWS, 2)
    assert "will not make its stream longer" in M.embedding_claim(SHRINKS, 2)
    assert M.unembedding_symbol(True) == r"E^\top" and M.unembedding_symbol(False) == r"W_U^\top"
    assert M.pre_norm_claim("Some-Model", 7).startswith("Some-Model is **pre-norm**") and "x_7" in M.pre_norm_claim(
        "Some-Model", 7)
    assert M.first_position_claim(GROWS) is None  # more than one token: an ordinary token is followed
    one = dataclasses.replace(GROWS, ids=GROWS.ids[:1])
    assert "‖x‖ goes from 1 (the embedding) to as much as 9, 9 times as long" in M.first_position_claim(one)


def test_check_yourself_asks_what_the_page_does_not_print_and_grades_from_the_numbers():
    # GROWS: step 4 names block 2's MLP; the question asks about attention (1, 1, 1: block 0); ‖x_3‖ = 9 < 12
    assert M.quiz_part(GROWS) == "attention" and M.answers(GROWS) == {"part_block": 0, "cancel": "less"}
    # SHRINKS: step 4 names block 1's attention; the MLP's (0, 0.5) longest is block 1; ‖x_2‖ = 1 < 3
    assert M.quiz_part(SHRINKS) == "mlp" and M.answers(SHRINKS) == {"part_block": 1, "cancel": "less"}
    assert M.block_question(GROWS) == "Which block's attention write into the last token's stream is the longest?"
    # MONO: ‖x_2‖ = 4 against 1 + 1 + 0 + 1 = 3: the embedding's own length makes it more
    assert M.writes_total(MONO) == 3 and M.answers(MONO)["cancel"] == "more"
    rows = M.grade(SHRINKS, {"part_block": 1, "cancel": "more"})
    assert [ok for *_, ok in rows] == [True, False]
    assert M.grade_claim(rows) == ("info", "**1 of 2 right.**")
    assert M.grade_claim(M.grade(SHRINKS, {"part_block": 1, "cancel": "less"}))[0] == "success"
    assert M.grade_claim(M.grade(SHRINKS, {})) == ("warning", "Choose an answer first.")
    assert M.grade(SHRINKS, {"cancel": "less"})[0][1] is None  # one left out: shown as none, graded wrong


def test_smollm2s_file_ties_its_embeddings_and_the_claim_says_so(tmp_path):
    """The page's "tied embeddings" sentence is read from the file's tensor table: SmolLM2's has no output.weight; a
    file with one (the tiny writer, untied) gets the other sentence."""
    from tests.core.llama_support import TINY, real_model_path, write_tiny_gguf

    assert llm.read_weight_storage(real_model_path()).tied
    untied = llm.read_weight_storage(write_tiny_gguf(tmp_path / "untied.gguf", tied=False, config=TINY).path)
    assert not untied.tied
    assert "tied embeddings" in M.tied_claim(True, 49152, 576) and "not tied" in M.tied_claim(False, 49152, 576)
