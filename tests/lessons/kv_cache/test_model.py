"""The KV-cache lesson's arrays: cost formulas, sampling, and generation through the real model's cache.

The fast tests need no model (the cost formulas on SmolLM2's configuration, sampling on made-up logits);
the ``slow`` ones run SmolLM2-135M-Instruct (installed here and in CI), loaded once for the module.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attention import llama
from explorer.lessons import kv_cache
from explorer.lessons.kv_cache import model as M
from explorer.shell import controls, i18n, llm

SMOLLM2 = llama.LlamaConfig(n_layers=30, n_heads=9, n_kv_heads=3, d_model=576, d_head=64, d_ff=1536,
                            vocab_size=49152, rope_theta=100000.0, rms_eps=1e-5, context_length=8192, max_tokens=256,
                            bos_id=1, eos_id=2, name="SmolLM2-135M")


@pytest.fixture(scope="module")
def lm() -> llama.LlamaModel:
    return llama.load()


# --- cost (no model) -------------------------------------------------------------------------------------


def brute_force_macs(config: llama.LlamaConfig, n: int, cached: bool) -> int:
    """Multiply-adds counted product by product, as the forward pass runs them (an independent count).

    ``[r, a] @ [a, b]`` costs ``r * a * b``. With the cache one row goes through the layers; without it all
    ``n`` rows do, and the causal attention of query ``i`` reads ``i + 1`` keys.
    """
    c = config
    rows = 1 if cached else n
    total = 0
    for layer in range(c.n_layers):
        total += rows * c.d_model * (c.n_heads + 2 * c.n_kv_heads) * c.d_head  # h @ [W_q | W_k | W_v]
        queries = [n - 1] if cached else range(n)  # positions of the query rows
        for i in queries:
            keys = i + 1 if layer not in c.local_layers else min(i + 1, c.sliding_window)  # a local layer's window
            total += c.n_heads * c.d_head * keys  # q @ K.T: one dot product of d_head per key and head
            total += c.n_heads * keys * c.d_head  # weights @ V
        total += rows * c.n_heads * c.d_head * c.d_model  # merged heads @ W_o
        gated = c.mlp != "gelu"  # GPT-2's MLP has no gate
        total += rows * c.d_model * (2 if gated else 1) * c.d_ff + rows * c.d_ff * c.d_model  # (gate |) up, down
    return total + c.d_model * c.vocab_size  # the last row's logits


GPT2 = llama.LlamaConfig(**{**SMOLLM2.__dict__, "architecture": "gpt2", "n_layers": 12, "n_heads": 12,
                            "n_kv_heads": 12, "d_model": 768, "d_ff": 3072, "qkv_bias": True, "rope_layout": None,
                            "norm": "layer", "positions": "learned", "mlp": "gelu", "linear_bias": True,
                            "context_length": 1024, "vocab_size": 50257})
GEMMA3 = llama.LlamaConfig(**{**SMOLLM2.__dict__, "architecture": "gemma3", "n_layers": 18, "n_heads": 4,
                              "n_kv_heads": 1, "d_model": 640, "d_head": 256, "d_ff": 2048, "qk_norm": True,
                              "rope_layout": "halves", "mlp": "geglu", "embed_scale": 640 ** 0.5, "post_norms": True,
                              "sliding_window": 512, "local_layers": tuple(i for i in range(18) if (i + 1) % 6),
                              "rope_theta_local": 10000.0, "context_length": 32768, "vocab_size": 262144})
QWEN2 = llama.LlamaConfig(**{**SMOLLM2.__dict__, "architecture": "qwen2", "qkv_bias": True, "rope_layout": "halves"})
SMALL_WINDOW = llama.LlamaConfig(**{**GEMMA3.__dict__, "sliding_window": 4})


@pytest.mark.parametrize("n", [1, 2, 5, 37, 64])
def test_macs_formulas_match_a_product_by_product_count(n):
    assert M.macs_with_cache(SMOLLM2, n) == brute_force_macs(SMOLLM2, n, cached=True)
    assert M.macs_without_cache(SMOLLM2, n) == brute_force_macs(SMOLLM2, n, cached=False)


@pytest.mark.parametrize("config", [GPT2, GEMMA3, SMALL_WINDOW], ids=["gpt2", "gemma3", "window 4"])
@pytest.mark.parametrize("n", [1, 3, 5, 37])
def test_macs_count_each_familys_products_and_the_local_layers_windows(config, n):
    assert M.macs_with_cache(config, n) == brute_force_macs(config, n, cached=True)
    assert M.macs_without_cache(config, n) == brute_force_macs(config, n, cached=False)


def test_the_cache_every_layer_keeps_and_what_a_windowed_one_would():
    assert M.mlp_matrices(SMOLLM2) == M.mlp_matrices(GEMMA3) == 3 and M.mlp_matrices(GPT2) == 2
    assert [M.keys_read(SMALL_WINDOW, 0, n) for n in (1, 4, 9)] == [1, 4, 4]
    assert M.keys_read(SMALL_WINDOW, 5, 9) == 9  # layer 5 is global
    assert M.window_cache_bytes(SMOLLM2, 70) == M.cache_bytes(SMOLLM2, 70)
    # 15 local layers keep 4 rows, 3 global layers keep 9: 2 * 1 * 256 * (15 * 4 + 3 * 9) * 4 bytes
    assert M.window_cache_bytes(SMALL_WINDOW, 9) == 2 * 256 * (15 * 4 + 3 * 9) * 4
    assert M.cache_bytes(SMALL_WINDOW, 9) == 2 * 18 * 256 * 9 * 4


def test_the_formulas_and_words_are_the_familys():
    assert M.qkv_latex(SMOLLM2) == (r"q_t = \mathrm{RoPE}(x_t W_q,\ t),\quad k_t = \mathrm{RoPE}(x_t W_k,\ t),\quad "
                                    r"v_t = x_t W_v")
    assert M.qkv_latex(QWEN2) == (r"q_t = \mathrm{RoPE}(x_t W_q + b_q,\ t),\quad k_t = \mathrm{RoPE}(x_t W_k + b_k,"
                                  r"\ t),\quad v_t = x_t W_v + b_v")
    assert M.qkv_latex(GEMMA3).startswith(r"q_t = \mathrm{RoPE}(\mathrm{RMSNorm}(x_t W_q),\ t)")
    assert M.qkv_latex(GPT2) == r"q_t = x_t W_q + b_q,\quad k_t = x_t W_k + b_k,\quad v_t = x_t W_v + b_v"
    assert (M.key_latex(SMOLLM2), M.key_latex(GPT2), M.value_latex(GPT2)) == (
        r"k_j = \mathrm{RoPE}(x_j W_k,\ j)", r"k_j = x_j W_k + b_k", r"v_j = x_j W_v + b_v")
    assert M.intro_caption(GPT2).startswith("x_t: token t's residual stream entering the layer (its running vector, "
                                            "after LayerNorm). This model has no RoPE")
    assert M.intro_caption(SMOLLM2).startswith("x_t: token t's residual stream entering the layer (its running vector, "
                                               "after RMSNorm); RoPE turns q and k")
    assert (M.sharing_words(SMOLLM2), M.sharing_words(GPT2), M.sharing_words(GEMMA3)) == (
        "grouped-query attention, Ainslie et al. 2023", "multi-head attention: each query head has its own key/value "
        "head", "multi-query attention: every query head reads one key/value head")
    assert M.keys_note(SMOLLM2).endswith("(pairs (2i, 2i+1) rotate together).")
    assert M.keys_note(QWEN2).endswith("(pairs (i, i + 32) rotate together).")
    assert M.keys_note(GPT2).startswith("Keys are stored as computed: this model has no RoPE")
    assert (M.keys_label(SMOLLM2), M.keys_label(GPT2)) == ("K (after RoPE)", "K")
    assert M.window_note(SMOLLM2, 0, 40) is None and M.window_note(SMALL_WINDOW, 5, 40) is None
    assert M.window_note(SMALL_WINDOW, 0, 9) == (
        "Layer 0 is local: the new query reads only its last 4 keys (weight 0 on the 5 older ones). This page's "
        "cache, the model's, still holds all 9 rows in every layer: those 5 rows of this layer will never be read "
        "again.")
    assert M.new_query_title(SMALL_WINDOW, 0, 9) == "The new query attends over the cached keys in its window"
    assert M.new_query_title(SMALL_WINDOW, 0, 4) == M.new_query_title(SMALL_WINDOW, 5, 9) == \
        M.new_query_title(SMOLLM2, 0, 64) == "The new query attends over every cached key"
    assert M.window_note(SMALL_WINDOW, 0, 3).endswith("The sequence has 3, so the new query still reads every cached "
                                                      "key.")


def test_the_cost_words_count_the_models_matrices():
    assert M.weights_text(SMOLLM2, "3,538,944") == (
        "One token through one layer's weight matrices costs W = 576·(9 + 2·3)·64 (W_q, W_k, W_v) + 576·576 (W_o) + "
        "3·576·1536 (SwiGLU) = 3,538,944. RMSNorm, RoPE, softmax and the MLP's activation (a few operations per "
        "number) are left out.")
    assert "+ 2·768·3072 (GELU)" in M.weights_text(GPT2, "x") and "LayerNorm, the biases, softmax" in \
        M.weights_text(GPT2, "x")
    assert M.weights_text(GEMMA3, "x").endswith("On the 15 local layers a query reads at most its last 512 keys, so "
                                                "their attention costs at most that many keys (n_l = min(n, 512)).")
    assert M.mlp_words(GPT2).startswith("GELU is the block's MLP, down(gelu(x W_up + b_up)) + b_down")
    assert M.mlp_words(GEMMA3).startswith("GEGLU is the block's MLP") and M.mlp_words(SMOLLM2).startswith("SwiGLU")
    assert M.cost_latex(SMOLLM2)[0] == r"L\,(W + 2 H d_{\text{head}}\, n) + d_{\text{model}}\, V_{\text{vocab}}"
    assert M.cost_latex(GEMMA3)[0].startswith(r"\sum_l (W + 2 H d_{\text{head}}\, n_l)")
    assert r"\min(i, 512)_l" in M.cost_latex(GEMMA3)[1]


def test_the_storage_note_says_whether_the_numbers_are_the_files_own():
    float_file = llm.WeightStorage({"token_embd.weight": ("F32", (2, 2)), "blk.0.attn_norm.weight": ("F32", (6,))})
    assert M.storage_note(float_file).endswith("Every weight is widened to float32 when it is used, exactly as stored "
                                               "(no quantization).")
    quantized = llm.WeightStorage({"token_embd.weight": ("Q8_0", (2, 32)), "blk.0.attn_norm.weight": ("F32", (6,))})
    assert M.storage_note(quantized).endswith("so the numbers are close to, not identical with, the full-precision "
                                              "model's.")


def test_the_sharing_and_window_claims():
    assert M.sharing_claim(SMOLLM2, "1.5", "377", "4.4", "1,132") == (
        "Grouped-query attention keeps 3 key/value heads instead of 9, a **3× smaller cache**: 1.5 MB instead of 4.4 "
        "MB now, 377 MB instead of 1,132 MB at the model's full context of 8,192 tokens.")
    assert M.sharing_claim(GEMMA3, "a", "b", "c", "d").startswith("Multi-query attention keeps one key/value head "
                                                                  "instead of 4, a **4× smaller cache**: a MB")
    assert M.sharing_claim(GPT2, "1.2", "75", "1.2", "75") == (
        "Every one of the 12 query heads has its own key/value head (multi-head attention, no grouping), so the "
        "cache holds 12 heads' keys and values per layer: 1.2 MB now, 75 MB at the model's full context of 1,024 "
        "tokens.")
    assert M.window_cache_claim(SMOLLM2, "1", "1") is None
    assert M.window_cache_claim(GEMMA3, "1,208", "217") == (
        "This page's cache, the model's, keeps every token in every layer. The 15 local layers read only their last "
        "512 keys, so a cache could keep just that many rows there: at the full context it would need 217 MB instead "
        "of 1,208 MB.")


def test_macs_numbers_for_smollm2():
    assert M.macs_per_layer_weights(SMOLLM2) == 552_960 + 331_776 + 2_654_208 == 3_538_944
    assert M.macs_attention(SMOLLM2, 10) == 2 * 9 * 64 * 10
    # one token: nothing to reuse, both ways cost the same; then the cache saves more and more
    assert M.macs_with_cache(SMOLLM2, 1) == M.macs_without_cache(SMOLLM2, 1)
    ratios = [M.macs_without_cache(SMOLLM2, n) / M.macs_with_cache(SMOLLM2, n) for n in range(1, 65)]
    assert all(b > a for a, b in zip(ratios, ratios[1:], strict=False))
    assert 40 < ratios[-1] < 64  # about n x, a little less: the logits are computed once either way


def test_cache_bytes_formula_and_grouped_query_saving():
    assert M.cache_bytes(SMOLLM2, 1) == 2 * 30 * 3 * 64 * 4 == 46_080 == SMOLLM2.kv_bytes_per_token
    assert M.cache_bytes(SMOLLM2, 64) == 64 * 46_080
    assert M.cache_bytes(SMOLLM2, 10, n_kv_heads=9) == 3 * M.cache_bytes(SMOLLM2, 10)
    assert M.cache_bytes(SMOLLM2, 10, bytes_per_number=2) == M.cache_bytes(SMOLLM2, 10) // 2


# --- sampling (no model) ------------------------------------------------------------------------------------


def test_sampling_validation_canonical_form_and_options():
    with pytest.raises(ValueError, match="method"):
        M.Sampling("beam")
    with pytest.raises(ValueError, match="temperature"):
        M.Sampling("sample", 0.0)
    with pytest.raises(ValueError, match="top_k"):
        M.Sampling("sample", 1.0, -1)
    assert M.Sampling("greedy", 1.5, 7, 9).canonical() == M.Sampling("greedy", 1.2, 3, 1).canonical()
    assert M.Sampling("greedy").options() == {"temperature": 0.0, "top_k": None}
    assert M.Sampling("sample", 0.7, 0, 3).options() == {"temperature": 0.7, "top_k": None}
    assert M.Sampling("sample", 0.7, 40, 3).options() == {"temperature": 0.7, "top_k": 40}
    assert M.Sampling("sample", 0.7, 40, 3).canonical() == M.Sampling("sample", 0.7, 40, 3)


def test_sampling_distribution_temperature_top_k_and_greedy():
    logits = np.array([2.0, 1.0, 0.5, 0.5, -1.0], np.float32)
    p = M.sampling_distribution(logits, M.Sampling("sample", 0.5, 0))
    z = logits.astype(np.float64) / 0.5
    expected = np.exp(z - 4.0) / np.exp(z - 4.0).sum()
    np.testing.assert_allclose(p, expected, rtol=1e-12)
    top2 = M.sampling_distribution(logits, M.Sampling("sample", 1.0, 2))
    assert top2[2:].sum() == 0 and top2[0] == pytest.approx(np.e / (np.e + 1))
    ties = M.sampling_distribution(logits, M.Sampling("sample", 1.0, 3))  # the k-th value is tied: both kept
    assert np.count_nonzero(ties) == 4
    assert M.sampling_distribution(logits, M.Sampling()).tolist() == [1.0, 0, 0, 0, 0]


def test_choose_records_probability_rank_and_alternatives():
    logits = np.array([0.0, 3.0, 1.0, 2.0, -5.0, 0.5], np.float32)
    greedy = M.choose(logits, M.Sampling(), None, step=1, position=7, eos_id=4)
    p = np.exp(logits.astype(float)) / np.exp(logits.astype(float)).sum()
    assert (greedy.token_id, greedy.rank, greedy.step, greedy.position, greedy.is_eos) == (1, 1, 1, 7, False)
    assert greedy.probability == pytest.approx(p[1]) and greedy.sampling_probability == 1.0
    assert greedy.top_ids == (1, 3, 2, 5, 0) and greedy.top_probabilities[1] == pytest.approx(p[3])
    # sampled: the same id as attention.llama.sample_next with the same generator state
    sampling = M.Sampling("sample", 2.0, 0, 0)
    for seed in range(20):
        choice = M.choose(logits, sampling, np.random.default_rng(seed), step=2, position=8, eos_id=4)
        assert choice.token_id == llama.sample_next(logits, temperature=2.0, rng=np.random.default_rng(seed))
        assert choice.rank == 1 + int((logits > logits[choice.token_id]).sum())
        assert choice.sampling_probability == pytest.approx(
            M.sampling_distribution(logits, sampling)[choice.token_id])
    eos = M.choose(np.array([0.0, 0, 0, 0, 9.0], np.float32), M.Sampling(), None, step=3, position=9, eos_id=4)
    assert eos.is_eos and eos.token_id == 4


def test_max_difference():
    assert M.max_difference(np.zeros(3), np.zeros(3)) == 0.0
    assert M.max_difference(np.array([0.5, 0.25], np.float32), np.array([0.5, 0.75])) == 0.5
    with pytest.raises(ValueError, match="shapes"):
        M.max_difference(np.zeros(3), np.zeros(4))


def sizes(config) -> dict:
    return {"n_layers": config.n_layers, "n_kv_heads": config.n_kv_heads, "group_size": config.group_size,
            "n_heads": config.n_heads}


def test_link_clamps_to_the_models_sizes_and_encodes():
    """Links to this lesson are built from its declarations (``controls.link``), in the model's sizes."""
    assert controls.link(kv_cache) == "./kv-cache"
    assert controls.link(kv_cache, sizes(SMOLLM2), steps=99, layer=-3, kv_head=7) == \
        "./kv-cache?kv_steps=32&kv_layer=0&kv_head=2"
    assert controls.link(kv_cache, sizes(SMOLLM2), layer=99) == "./kv-cache?kv_layer=29"
    small = dataclasses.replace(SMOLLM2, n_layers=4, n_heads=8, n_kv_heads=4)  # the sizes come from the config
    assert controls.link(kv_cache, sizes(small), layer=99, kv_head=9) == "./kv-cache?kv_layer=3&kv_head=3"
    with pytest.raises(ValueError, match="context"):
        controls.link(kv_cache, layer=5)
    url = controls.link(kv_cache, prompt="a (b) [c] & d")
    assert url == "./kv-cache?kv_prompt=a%20%28b%29%20%5Bc%5D%20%26%20d"
    assert ")" not in url and " " not in url  # safe inside a Markdown link


# --- generation with the real model's cache (slow: the model) ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sampling", [M.Sampling(), M.Sampling("sample", 0.8, 40, 0), M.Sampling("sample", 1.5, 0, 7)])
def test_run_chooses_what_model_generate_returns(lm, sampling):
    ids = lm.encode(M.DEFAULT_PROMPT)
    state = M.run(lm, ids, sampling, 6)
    # 6 steps, or fewer when the draw reaches <|im_end|> (temperature 0.8, top-k 40, seed 0 does after 2)
    assert state.steps == 6 or state.stopped
    assert len(state.choices) == state.steps + 1 and state.n == len(ids) + state.steps
    assert [c.token_id for c in state.choices] == lm.generate(ids, 7, seed=sampling.seed, **sampling.options())
    assert state.ids == tuple(ids) + tuple(c.token_id for c in state.choices[:state.steps])


@pytest.mark.slow
def test_each_step_appends_one_row_and_keeps_the_cached_rows(lm):
    ids = lm.encode(M.DEFAULT_PROMPT)
    state = M.prefill(lm, ids, M.Sampling())
    assert state.cache.keys.shape == (30, 3, 5, 64) and state.new_rows.shape == (30, 9, 5)
    for step in range(1, 4):
        previous, state = state, M.decode_step(lm, state)
        assert state.steps == step and state.cache.keys.shape == (30, 3, 5 + step, 64)
        # the rows already cached are the very same numbers (nothing recomputed, nothing moved)
        np.testing.assert_array_equal(state.cache.keys[:, :, :-1], previous.cache.keys)
        np.testing.assert_array_equal(state.cache.values[:, :, :-1], previous.cache.values)
        np.testing.assert_allclose(state.new_rows.sum(axis=-1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_cached_step_equals_full_recomputation_within_float32_rounding(lm):
    ids = lm.encode("The cat sat on the mat because it was tired")
    state = M.run(lm, ids, M.Sampling("sample", 1.0, 0, 3), 5)
    full = lm.forward(list(state.ids)).attentions[:, :, -1, :]  # the full recomputation, without a cache
    assert full.shape == state.new_rows.shape == (30, 9, len(ids) + 5)
    difference = M.max_difference(state.new_rows, full)
    assert 0 < difference <= 1e-5  # not 0: float32 sums in another order; tiny: nothing is approximated
    # the cache's keys and values are the full pass's (K after RoPE, as head_steps computes them from scratch)
    steps = lm.head_steps(list(state.ids), layer=11, head=4)
    np.testing.assert_allclose(state.cache.keys[11, 1], steps.k, atol=2e-4, rtol=1e-4)
    np.testing.assert_allclose(state.cache.values[11, 1], steps.v, atol=2e-4, rtol=1e-4)
    np.testing.assert_allclose(state.new_rows[11, 4], steps.weights[-1], atol=1e-5)


@pytest.mark.slow
def test_probabilities_are_the_full_pass_softmax(lm):
    ids = lm.encode(M.DEFAULT_PROMPT)
    state = M.run(lm, ids, M.Sampling(), 3)
    logits = lm.forward(list(state.ids)).logits  # [n, vocab]
    for choice in state.choices:
        row = logits[choice.position - 1].astype(np.float64)
        p = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
        assert choice.rank == 1 and choice.token_id == int(np.argmax(row))
        assert choice.probability == pytest.approx(p[choice.token_id], abs=1e-5)
    assert lm.decode([c.token_id for c in state.choices[:2]]) == " Paris."


@pytest.mark.slow
def test_generation_stops_at_the_end_of_sequence_token(lm):
    ids = lm.encode(M.DEFAULT_PROMPT)
    state = M.run(lm, ids, M.Sampling(), M.MAX_STEPS)
    assert state.stopped and state.steps == 29 and state.next_choice.token_id == lm.config.eos_id == 2
    assert lm.token_strings([state.next_choice.token_id]) == ["<|im_end|>"]
    assert lm.config.eos_id not in state.ids  # it is chosen, never read back
    with pytest.raises(ValueError, match="end-of-sequence"):
        M.decode_step(lm, state)


@pytest.mark.slow
def test_limits_on_the_prompt_and_the_steps(lm):
    long = " ".join(["word"] * 50)
    p = llm.encode_prompt(lm, long, M.MAX_PROMPT_TOKENS)  # the page's prompt, through the lessons' one door
    assert p.n == M.MAX_PROMPT_TOKENS and p.n_total == 50 and p.is_cut
    p = llm.encode_prompt(lm, "9" * 300, M.MAX_PROMPT_TOKENS)  # one token per digit: beyond what the model accepts
    assert p.n == M.MAX_PROMPT_TOKENS and p.n_total == 300
    with pytest.raises(ValueError, match="1 to 32"):
        M.prefill(lm, list(range(100, 133)), M.Sampling())
    state = M.run(lm, lm.encode("Once upon a time"), M.Sampling("sample", 1.0, 0, 1), M.MAX_STEPS + 5)
    assert state.steps == M.MAX_STEPS and not state.stopped and state.n == 4 + M.MAX_STEPS
    with pytest.raises(ValueError, match="at most 32"):
        M.decode_step(lm, state)


# --- the page's claims about the live numbers, in each language ------------------------------------------------


@pytest.mark.parametrize("lang", ["pt", "tr"])
def test_the_claims_render_in_each_language(lang):
    claims = [lambda: M.difference_note(0.0, 2.4e-7, 3, 2, 30), lambda: M.pending_note("é".encode()[:1]),
              lambda: M.storage_note(None), lambda: M.probability_text(0.00012)]
    for claim in claims:
        english = claim()
        with i18n.using(lang):
            said = claim()
        assert said != english and "{" not in said, said


def test_the_prefill_claim_says_exactly_0_only_when_it_is():
    assert "(the difference is exactly 0)" in M.prefill_claim(0.0)
    assert "exactly 0" not in M.prefill_claim(1e-7) and M.prefill_claim(1e-7).endswith("Generate a token.")
    with i18n.using("tr"):
        assert M.prefill_claim(0.0) != M.prefill_claim(1e-7) and "Step 0" not in M.prefill_claim(0.0)
