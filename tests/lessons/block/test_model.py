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


@pytest.mark.slow  # four tiny files written and loaded (~1 s); the fast tier keeps SmolLM2's shape above
@pytest.mark.parametrize("family", ["qwen2", "qwen3", "gpt2", "gemma3"])
def test_every_familys_block_recomputed_from_its_weights_writes_what_the_core_writes(family):
    """The page's recomputation of a block (LayerNorm and its bias, W_o's bias, GELU or GEGLU, Gemma's norms after
    attention and the MLP) adds to the stream exactly what the core's forward pass adds, in every block."""
    from tests.conftest import LESSON_MODEL

    lm = LESSON_MODEL.tiny_model("float32", family)
    c, ids = lm.config, tuple(lm.encode(TEXT))
    m, out = M.measure(lm, ids), lm.forward(list(ids), keep_activations=True)
    for layer in range(c.n_layers):
        b = M.inside(lm, ids, layer, lambda *_: m)  # one forward pass for every block
        scale = float(np.abs(out.residuals[layer + 1, -1]).max())
        np.testing.assert_allclose(b.attn, m.attn_writes[layer], atol=2e-5 * scale)  # what joins the stream
        np.testing.assert_allclose(b.mlp, out.mlp_outputs[layer, -1], atol=2e-5 * scale)
        np.testing.assert_allclose(b.x + b.attn + b.mlp, out.residuals[layer + 1, -1], atol=2e-5 * scale)
        np.testing.assert_allclose(b.head_writes.sum(0) + (0 if not c.linear_bias else lm.block_weights(layer).o_bias),
                                   b.attn_raw, atol=2e-5 * scale)
        if c.post_norms:  # Gemma adds the normalised outputs, not the outputs
            np.testing.assert_allclose(b.attn, llm.rms_norm(b.attn_raw, lm.block_weights(layer).post_attn_norm,
                                                            c.rms_eps), rtol=1e-5, atol=1e-6)
            assert not np.allclose(b.attn, b.attn_raw)
        else:
            np.testing.assert_array_equal(b.attn, b.attn_raw)
        if c.norm == "layer":
            centered = b.x - b.mean
            assert b.divisor == pytest.approx(np.sqrt(np.mean(centered ** 2) + m.eps))
            np.testing.assert_allclose(b.normed, centered / b.divisor * b.gain + b.bias, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(b.hidden, llm.gelu_tanh(b.up), rtol=1e-5, atol=1e-6)
            assert b.gate is None
        rows = M.inside_rows(b, m.eps)
        assert all(np.isfinite(v) for *_, v in rows)
        names = [what for _s, what, _v in rows]
        assert (f"‖hidden‖ = ‖{M.mlp_formula(c)}‖" in names) and ("‖RMSNorm(write)‖: what joins the stream" in names) \
            == c.post_norms
        assert [s for s, *_ in rows][0] == f"{llm.norm_name(c)} before attention"


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


SMOL = llm.LlamaConfig(n_layers=30, n_heads=9, n_kv_heads=3, d_model=576, d_head=64, d_ff=1536, vocab_size=49152,
                       rope_theta=100000.0, rms_eps=1e-5, context_length=8192, max_tokens=256, bos_id=1, eos_id=2,
                       name="SmolLM2")
GPT2 = llm.LlamaConfig(**{**SMOL.__dict__, "architecture": "gpt2", "n_layers": 12, "n_heads": 12, "n_kv_heads": 12,
                          "d_model": 768, "d_ff": 3072, "qkv_bias": True, "rope_layout": None, "norm": "layer",
                          "positions": "learned", "mlp": "gelu", "linear_bias": True, "context_length": 1024})
GEMMA3 = llm.LlamaConfig(**{**SMOL.__dict__, "architecture": "gemma3", "n_layers": 18, "n_heads": 4, "n_kv_heads": 1,
                            "d_model": 640, "d_head": 256, "d_ff": 2048, "qk_norm": True, "rope_layout": "halves",
                            "mlp": "geglu", "embed_scale": 640 ** 0.5, "post_norms": True})


def inside_with_heads(head_writes, config=SMOL) -> M.Inside:
    h = np.asarray(head_writes, dtype=float)
    z = np.zeros(h.shape[1])
    return M.Inside(0, config, z + 1, 0.0, 1.0, z + 1, None, z, h, h.sum(0), h.sum(0), z, z, z, z, z, z)


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
    layer = dataclasses.replace(small, config=GPT2, x=np.array([1.0, 1.02, 0.98, 1.0]), mean=1.0,
                                divisor=float(np.sqrt(2e-4 + 1e-5)))  # var(x) = 2e-4: RMS 0.9759
    assert M.rms_claim(layer) == ("(x − μ) / √(…) has RMS just under 1, because ε is added inside the root: here "
                                  "0.9759 (var(x) = 0.0002). The gain g and the bias b then set the scale and the "
                                  "offset each coordinate is read at.")


def test_loss_claim_gives_each_number_its_own_plural():
    one_hit = dataclasses.replace(GROWS, losses=np.log([8.0] * 8), predicted=(5,) + (0,) * 7, ids=(3, 5) + (9,) * 7)
    text = M.loss_claim(one_hit)
    assert "Over 8 predictions:" in text and "at 1 position out of 8." in text
    assert "at 2 positions out of 2." in M.loss_claim(SHRINKS)


def test_sentences_follow_the_data_and_the_file():
    assert "3 times as long" not in M.embedding_claim(GROWS, 2) and "9 times as long" in M.embedding_claim(GROWS, 2)
    assert "will not make its stream longer" in M.embedding_claim(SHRINKS, 2)
    assert M.unembedding_symbol(True) == r"E^\top" and M.unembedding_symbol(False) == r"W_U^\top"
    seven = llm.LlamaConfig(**{**SMOL.__dict__, "n_layers": 7})
    assert M.pre_norm_claim("Some-Model", seven).startswith("Some-Model is **pre-norm**: each part reads") \
        and "x_7 = x₀ + Σ (a_l + m_l)" in M.pre_norm_claim("Some-Model", seven)
    assert M.pre_norm_claim("Gemma", GEMMA3).startswith(
        "Gemma is **pre-norm** and also normalises what each part writes: each part reads a normalised copy of the "
        "stream, its output goes through one more RMSNorm, and that is *added* to the stream, never replaces it. So "
        "a_l and m_l below are the normalised outputs, RMSNorm(attention) and RMSNorm(MLP), and after 18 blocks "
        "x_18 = x₀ + Σ (a_l + m_l)")


def test_the_blocks_formulas_and_sentences_are_the_familys():
    assert M.stream_latex(SMOL) == [r"x_{l+1} = x_l + a_l + m_l", r"a_l = \mathrm{attn}_l(\mathrm{RMSNorm}(x_l))",
                                    r"u = \mathrm{RMSNorm}(x_l + a_l), \qquad m_l = \mathrm{mlp}_l(u)"]
    assert M.stream_latex(GPT2)[1] == r"a_l = \mathrm{attn}_l(\mathrm{LayerNorm}(x_l))"
    assert M.stream_latex(GEMMA3)[1:] == [r"a_l = \mathrm{RMSNorm}(\mathrm{attn}_l(\mathrm{RMSNorm}(x_l)))",
                                          r"u = \mathrm{RMSNorm}(x_l + a_l), \qquad m_l = \mathrm{RMSNorm}"
                                          r"(\mathrm{mlp}_l(u))"]
    assert (M.embedding_latex(SMOL), M.embedding_latex(GPT2), M.embedding_latex(GEMMA3)) == (
        r"x_0 = E[t] \in \mathbb{R}^{576}", r"x_0 = E[t] + P[p] \in \mathbb{R}^{768}",
        r"x_0 = \sqrt{640}\; E[t] \in \mathbb{R}^{640}")
    assert (M.embedding_symbol(SMOL), M.embedding_symbol(GPT2), M.embedding_symbol(GEMMA3)) == \
        ("‖E[t]‖", "‖x₀‖", "‖x₀‖")
    assert M.embedding_text(GPT2) == (
        "Each token id t picks its row of the embedding matrix E [49,152 × 768], and its position p picks its row of "
        "the learned position matrix P [1,024 × 768]: their sum, d_model = 768 numbers, is where the token's "
        "residual stream starts.")
    assert "multiplied by √d_model = 25.3: a vector of d_model = 640 numbers" in M.embedding_text(GEMMA3)
    assert M.norm_markdown(GPT2).startswith("**LayerNorm** subtracts the stream's mean μ")
    assert M.norm_latex(GPT2).endswith(r"\odot g + b") and M.norm_latex(SMOL).endswith(r"\odot g")
    assert M.attention_latex(GPT2) == [r"[o_0, \dots, o_{11}]\, W_o + b_o = \sum_h o_h\, W_o^{(h)} + b_o"]
    assert M.attention_latex(GEMMA3)[1] == r"a_l = \mathrm{RMSNorm}\big([o_0, \dots, o_{3}]\, W_o\big)"
    assert "A learned bias b_o is added once to the sum, so it belongs to no head." in M.attention_markdown(GPT2)
    assert "a_l is that normalised write" in M.attention_markdown(GEMMA3)
    assert "bias" not in M.attention_markdown(SMOL) and "normalised write" not in M.attention_markdown(SMOL)
    assert M.mlp_markdown(GPT2).startswith(
        "The **MLP** (GELU) reads u = LayerNorm(x_l + a_l), the stream after attention normalised again. It widens u "
        "to d_ff = 3072 numbers (up = u W_up + b_up), lets gelu open or close each unit, giving hidden = gelu(up)")
    assert M.mlp_markdown(GEMMA3).startswith("The **MLP** (GEGLU) reads u = RMSNorm(x_l + a_l)") and \
        "giving hidden = gelu(u W_gate) ⊙ u W_up" in M.mlp_markdown(GEMMA3) and \
        M.mlp_markdown(GEMMA3).endswith("then one more RMSNorm normalises that write: m_l is the normalised write.")
    assert "silu(gate) open or close" in M.mlp_markdown(SMOL)
    assert M.mlp_latex(SMOL)[2] == r"\mathrm{silu}(z) = \frac{z}{1 + e^{-z}}"
    assert M.mlp_latex(GPT2)[:2] == [r"\mathrm{hidden} = \mathrm{gelu}(u W_{up} + b_{up})",
                                     r"m_l = \mathrm{hidden}\; W_{down} + b_{down}"]
    assert M.mlp_latex(GEMMA3)[1] == r"m_l = \mathrm{RMSNorm}(\mathrm{hidden}\; W_{down})"
    assert M.mlp_latex(GEMMA3)[2].startswith(r"\mathrm{gelu}(z) = \tfrac{z}{2}\Big(1 + \tanh")
    assert (M.mlp_formula(SMOL), M.mlp_formula(GPT2), M.mlp_formula(GEMMA3)) == \
        ("silu(gate) ⊙ up", "gelu(up)", "gelu(gate) ⊙ up")
    assert M.tied_claim(False, 10, 4, "LayerNorm").endswith("logits = LayerNorm(x) W_Uᵀ.")
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
