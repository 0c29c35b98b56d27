"""The sinks lesson's arrays: sink mass, the window's keys, the cache variants and their byte counts (fast: made-up
arrays and the tiny random Llama), and the lesson's measured facts on SmolLM2 itself (slow)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attention import llama
from attention.llama import variants
from explorer.lessons import sinks
from explorer.lessons.sinks import model as M
from explorer.shell import controls, i18n
from tests.core.llama_support import real_model, write_tiny_gguf

SMOLLM2 = llama.LlamaConfig(n_layers=30, n_heads=9, n_kv_heads=3, d_model=576, d_head=64, d_ff=1536,
                            vocab_size=49152, rope_theta=100000.0, rms_eps=1e-5, context_length=8192, max_tokens=256,
                            bos_id=1, eos_id=2, name="SmolLM2-135M")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> llama.LlamaModel:
    path = write_tiny_gguf(tmp_path_factory.mktemp("sinks") / "tiny.gguf").path
    return llama.load(path, weights="float32", expected_sha256=None)


def test_sink_mass_averages_the_queries_from_the_second_on():
    n = 6
    a = np.zeros((1, 2, n, n))
    a[0, 0, :, 0] = 1.0  # head 0: every row on the first token
    a[0, 1] = np.tri(n) / np.arange(1, n + 1)[:, None]  # head 1: uniform over the causal keys
    mass = M.sink_mass(a)
    assert mass.shape == (1, 2) and mass[0, 0] == 1.0
    assert mass[0, 1] == pytest.approx(M.uniform_mass(n)) == pytest.approx(np.mean(1 / np.arange(3, n + 1)))
    assert M.sink_mass(a, key=1)[0, 0] == 0.0
    with pytest.raises(ValueError, match="at least 3 tokens"):
        M.sink_mass(np.ones((1, 1, 2, 2)))
    with pytest.raises(ValueError, match=r"\[n_layers, n_heads, n, n\]"):
        M.sink_mass(np.ones((2, 3, 4)))


def test_allowed_keys_is_the_window_the_sinks_and_the_causal_mask():
    kinds = M.allowed_keys(8, 3, 2)
    p, j = np.arange(8)[:, None], np.arange(8)[None, :]
    assert ((kinds >= 1) == ((j <= p) & ((j > p - 3) | (j < 2)))).all()  # what forward's mask lets through
    assert (kinds[j > p] == -1).all() and kinds[7, 1] == 1 and kinds[7, 5] == 2 and kinds[7, 3] == 0
    assert (M.allowed_keys(5, None, 0)[np.tri(5, dtype=bool)] == 2).all()


def test_cache_variants_and_their_bytes():
    variants = M.cache_variants(SMOLLM2, 59)
    keys = [v.key for v in variants]
    assert keys[:3] == ["mha", "gqa", "mqa"] and "latent-384" in keys and "window-32" in keys
    assert M.sweep_score_from(variants) == 32
    assert [v.key for v in M.cache_variants(SMOLLM2, 20) if v.family == "window"] == ["window-8"]  # 16 > 20 - 5
    assert M.sweep_score_from(M.cache_variants(SMOLLM2, 10)) == 0  # no window fits
    assert M.window_max(59) == 54 and M.window_max(4) == 0
    from attention.llama.variants import converted_config
    bytes_of = {v.key: converted_config(SMOLLM2, v.kind).kv_bytes_per_token for v in variants}
    assert bytes_of["mha"] == 138_240 and bytes_of["gqa"] == 46_080 and bytes_of["mqa"] == 15_360
    assert bytes_of["latent-128"] == 15_360 and bytes_of["latent-32"] == 3_840


def test_links_keep_a_visitor_text_literal():
    assert controls.link(sinks, {"top": 29}, prompt="[link](x) & more", window=8) == \
        "./attention-sinks?sk_prompt=%5Blink%5D%28x%29%20%26%20more&sk_window=8"
    assert controls.link(sinks) == "./attention-sinks"


def test_measurements_on_the_tiny_model(tiny):
    ids = tuple(tiny.encode("The cat sat on the mat. The cat sat on the hat, the cat"))
    s = M.sink_summary(tiny, ids)
    assert s.mass.shape == (2, 6) and s.value_ratio.shape == (2,) and s.top_map.shape == (len(ids),) * 2
    assert s.mass[s.top_layer, s.top_head] == s.mass.max()
    for choice, text in M.FIRST_CHOICES.items():
        if text is not None and len(tiny.encode(text)) != 1:
            continue  # the tiny vocabulary spells some of them in several tokens
        f = M.first_token_experiment(tiny, ids, s, choice)
        assert len(f.ids) == len(ids) + (1 if text is not None else -1)
        np.testing.assert_array_equal(f.original, s.per_layer)
    with pytest.raises(ValueError, match="choice must be one of"):
        M.changed_ids(tiny, ids, "a banana")
    sh = M.shift_experiment(tiny, ids, 7)
    assert sh.max_logit_diff <= 1e-4 * max(sh.largest_logit, 1) and sh.same_next
    st = M.streamed(tiny, ids, 4, 1, 3)
    assert st.score_from == 4 and len(st.generated) == 3 and st.losses.shape == (len(ids) - 1,)
    assert st.perplexity == pytest.approx(variants.perplexity(tiny, ids, window=4, sinks=1))
    full = M.streamed(tiny, ids, 4, None, 3)
    assert full.renumbered is None and full.perplexity == pytest.approx(variants.perplexity(tiny, ids, score_from=4))
    np.testing.assert_allclose(full.losses[:4], st.losses[:4], rtol=1e-5)  # the window hides nothing before 4
    ref = M.reference_logits(tiny, ids)
    rows = {v.key: M.measure(tiny, ids, v, ref, 4) for v in M.cache_variants(tiny.config, len(ids))}
    assert rows["mha"].max_logit_diff == 0.0 and rows["mha"].kl == 0.0 and rows["mha"].top1 == 1.0
    assert rows["gqa"].perplexity == pytest.approx(variants.perplexity(tiny, ids, score_from=4))
    assert rows["mha"].bytes_per_token == 3 * rows["gqa"].bytes_per_token
    assert rows["window-8"].cache_bytes == (8 + 4) * tiny.config.kv_bytes_per_token
    assert rows["mqa"].kl > 0
    for v in M.cache_variants(tiny.config, len(ids)):  # the formula is the converted model's own byte count
        if v.kind is not None:
            own = variants.kv_variant(tiny, v.kind).config.kv_bytes_per_token
            assert rows[v.key].floats_per_layer * tiny.config.n_layers * 4 == own


# --- the lesson's facts on SmolLM2 (slow) ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def smol():
    return real_model()


@pytest.fixture(scope="module")
def default_ids(smol) -> tuple[int, ...]:
    return tuple(smol.encode(M.DEFAULT_PROMPT))


@pytest.mark.slow
def test_the_default_text_shows_a_sink_that_follows_the_first_position(smol, default_ids):
    s = M.sink_summary(smol, default_ids)
    assert len(default_ids) <= 64
    assert s.per_layer[:2].max() <= 0.1 < s.mass.mean()  # layers 0-1 have almost none
    assert s.n_over_half >= 60 and s.mass.mean() > 5 * s.uniform
    assert s.value_ratio[s.per_layer > M.HALF].mean() < 0.5  # the no-op: small values
    for choice in M.FIRST_CHOICES:
        assert M.first_token_experiment(smol, default_ids, s, choice).follows_position, choice
    sh = M.shift_experiment(smol, default_ids, 1000)
    assert sh.max_logit_diff <= 1e-4 and np.abs(sh.mass_shifted - sh.mass_original).max() <= 1e-5


@pytest.mark.slow
def test_the_default_text_streams_better_with_kept_first_tokens(smol, default_ids):
    runs = {k: M.streamed(smol, default_ids, 16, k, 4) for k in (0, 4, None)}
    assert runs[0].perplexity / runs[4].perplexity >= 1.5
    assert runs[None].perplexity <= runs[4].perplexity
    assert runs[4].renumbered < runs[0].perplexity  # StreamingLLM's numbering: the kept tokens work as well



def _summary(mass, value_ratio) -> M.SinkSummary:
    mass = np.asarray(mass, dtype=np.float64)
    return M.SinkSummary(n=8, mass=mass, uniform=0.25, value_ratio=np.asarray(value_ratio, dtype=np.float64),
                         top_layer=0, top_head=0, top_map=np.eye(8, dtype=np.float32), second=np.zeros(len(mass)))


def test_sink_claims_name_the_first_heavy_layer_and_judge_its_values():
    heavy_small = _summary([[0.1, 0.2], [0.9, 0.8], [0.7, 0.6]], [3.0, 0.2, 0.4])  # layers 1, 2 above half
    weight, values = M.sink_claims(heavy_small)
    assert "takes **55%**" in weight and "put 0.15 and 0.85" in weight and "half is layer 1." in weight
    assert values.startswith("**Its values are small**: in the layers where") and "0.30×" in values  # layers 1, 2
    weight, values = M.sink_claims(_summary([[0.1, 0.2], [0.3, 0.4], [0.2, 0.1]], [1.5, 0.5, 2.5]))
    assert "no layer's heads average more than half" in weight
    assert values.startswith("**On your text its values are not smaller") and "in all layers" in values
    assert "1.50×" in values  # every layer's mean when none is above half
    assert M.sink_claims(_summary([[0.1], [0.2]], [0.5, 0.7]))[1].startswith("**Its values are small**: in all")
    assert M.sink_claims(_summary([[0.9], [0.2]], [1.0, 0.1]))[1].startswith(  # 1 is not smaller
        "**On your text its values are not smaller than the others'**: in the layers where")
    for lang in ("pt", "tr"):
        with i18n.using(lang):
            shown = M.sink_claims(heavy_small)
        assert all(a != b for a, b in zip(shown, M.sink_claims(heavy_small), strict=True))  # translated
        assert "0,85" in shown[0] and "0,30×" in shown[1], shown


def _streamed(sinks, perplexity, renumbered=None) -> M.Streamed:
    return M.Streamed(window=4, sinks=sinks, score_from=4, perplexity=perplexity, losses=np.zeros(3),
                      renumbered=renumbered, generated=())


def test_streaming_claims_say_whether_kept_tokens_help():
    def claims(four, renumbered=None):
        return M.streaming_claims({0: _streamed(0, 20.0), 1: _streamed(1, 15.0), 4: _streamed(4, four, renumbered),
                                   None: _streamed(None, 10.0)}, 12)

    helps, both = claims(12.0, 13.0)
    assert "brings the perplexity from **20.0** (no kept token) to **12.0**; full attention: 10.0" in helps
    assert "Keeping just one: 15.0. All on the same 7 positions (4 … 10)" in helps
    assert "13.0 against 12.0 with the positions kept (+8%)" in both and "both are below the 20.0" in both
    no_help, one = claims(20.0, 13.0)  # equal is no help
    assert "does not help here: perplexity 20.0 against 20.0" in no_help and "one of them is not better" in one
    assert "(-35%)" in one and "one of them is not better" in claims(12.0, 30.0)[1]
    assert claims(12.0)[1] is None  # StreamingLLM's numbering not measured
    with i18n.using("pt"):
        shown = claims(12.0, 13.0)
    assert shown[0] != helps and "**12,0**" in shown[0] and "13,0" in shown[1]


def _measured(key, family, floats, per_token, perplexity, diff=0.0, kind=None, window=None) -> M.Measured:
    return M.Measured(M.CacheVariant(key, family, kind, window), floats, int(per_token * 10), per_token, perplexity,
                      0.1, 0.9, diff)


def test_variant_claims_follow_the_measured_rows():
    c, full_rank = SMOLLM2, 2 * SMOLLM2.n_kv_heads * SMOLLM2.d_head
    gqa = _measured("gqa", "heads", 384, 46080.0, 9.0)
    rows = (_measured("mha", "heads", 1152, 138240.0, 9.0), gqa, _measured("mqa", "heads", 128, 15360.0, 60.0),
            _measured("latent128", "latent", 128, 15360.0, 20.0, 1.0, ("latent", 128)),
            _measured("latent384", "latent", full_rank, 46080.0, 9.0, 1e-5, ("latent", full_rank)),
            _measured("w8", "window", 384, 20000.0, 30.0, 2.0, None, 8),
            _measured("w16", "window", 384, 30000.0, 12.0, 1.0, None, 16))
    good = M.variant_claims(c, rows)
    assert len(good) == 4 and "**the same numbers** (max |Δ logit| = 0, bit for bit), and 3× the cache" in good[0]
    assert "MQA (one key and one value head) reaches perplexity **60** and the latent cache of rank 128 **20** (3.0× " \
           "lower; the model: 9.0)" in good[1]
    assert "At rank 384" in good[2] and "1.0e-05" in good[2]
    assert M.variant_label(c, rows[-1].variant) in good[3] and "300000 bytes" not in good[3] and "12.0" in good[3]
    worse = (_measured("mha", "heads", 1152, 138240.0, 9.0, 1e-6), gqa, _measured("mqa", "heads", 128, 15360.0, 20.0),
             _measured("latent128", "latent", 128, 15360.0, 20.0, 1.0, ("latent", 128)))
    bad = M.variant_claims(c, worse)
    assert len(bad) == 2 and "up to rounding (max |Δ logit| = 1.0e-06)" in bad[0]
    assert "MQA reaches perplexity 20 and the latent cache 20: the latent cache is not better here" in bad[1]  # a tie
    assert M.variant_claims(c, (gqa,)) == []
    with i18n.using("tr"):
        shown = M.variant_claims(c, rows)
    assert shown[0] != good[0] and "9,0" in shown[1]


def _shift(offset, logit_diff, largest=20.0) -> M.Shift:
    return M.Shift(offset=offset, max_logit_diff=logit_diff, largest_logit=largest, max_weight_diff=3e-7,
                   mass_original=np.zeros(2), mass_shifted=np.zeros(2), same_next=True)


def test_shift_claim_calls_rounding_only_below_1e_4_of_the_largest_logit():
    rounding = M.shift_claim(_shift(5, 2e-3))  # 1e-4 of 20
    assert rounding.startswith("Measured: shifting every position by 5 changes no logit by more than **2.0e-03**")
    assert "no attention weight by more than 3.0e-07: float32 rounding" in rounding
    more = M.shift_claim(_shift(5, 2.1e-3))
    assert more.startswith("Measured: shifting every position by 5 changes the logits by up to **2.1e-03** (they "
                           "reach 20.0): more than float32 rounding")
    assert "float32 rounding, nothing" in M.shift_claim(_shift(1000, 1e-4, largest=0.5))  # the scale is at least 1
    assert "more than float32" in M.shift_claim(_shift(1000, 1.1e-4, largest=0.5))
    with i18n.using("pt"):
        shown = M.shift_claim(_shift(1000, 2e-3))
    assert shown != rounding and "1.000" in shown and "2,0e-03" in shown


def test_a_model_that_accepts_fewer_tokens_reads_a_shorter_text_and_says_so():
    assert M.prompt_limit(SMOLLM2) == 64 and M.limit_note(SMOLLM2) is None
    small = dataclasses.replace(SMOLLM2, max_tokens=64, context_length=64)
    assert M.prompt_limit(small) == 31
    assert M.limit_note(small) == ("This model accepts 64 tokens in all, so the page reads at most 31 of your text: "
                                   "room for one token put first (section 2) and up to 32 generated ones (section 4).")


def test_learned_positions_get_their_own_shift_claim():
    sh = dataclasses.replace(_shift(100, 3.5), learned=True, mass_original=np.array([0.5, 0.7]),
                             mass_shifted=np.array([0.1, 0.3]))
    assert M.shift_claim(sh) == (
        "Measured: shifting every position by 100 changes the logits by up to **3.5e+00** (they reach 20.0) and "
        "attention weights by up to 3.0e-07. This model has no RoPE: its positions are learned vectors added to each "
        "token's embedding, so a shift gives every token another input vector, not a turn that cancels in the dot "
        "product. The mean weight on the first token goes from 0.60 to 0.20.")


def test_a_model_with_as_many_key_value_heads_as_query_heads_is_its_own_mha():
    gpt2_like = dataclasses.replace(SMOLLM2, n_kv_heads=9, positions="learned", rope_layout=None)
    keys = [v.key for v in M.cache_variants(gpt2_like, 59)]
    assert keys[:2] == ["gqa", "mqa"] and "mha" not in keys
    assert M.variant_label(gpt2_like, M.CacheVariant("gqa", "heads")) == "MHA: 9 key/value heads (the model)"
    assert M.variant_label(SMOLLM2, M.CacheVariant("gqa", "heads")) == "GQA: 3 key/value heads (the model)"
    wide = dataclasses.replace(SMOLLM2, d_model=64, d_head=128)  # [W_k | W_v] 768 wide: rank at most 64
    assert [v.key for v in M.cache_variants(wide, 59) if v.family == "latent"] == ["latent-32", "latent-64"]
    assert M.variant_label(wide, M.CacheVariant("latent-64", "latent", ("latent", 64))) == "latent, rank 64 (full rank)"


def test_the_latent_note_follows_the_architecture():
    assert M.latent_note(SMOLLM2).startswith("The latent cache keeps c = x A (576 → r floats per layer) and rebuilds "
                                             "every key and value from it, then rotates the keys by their positions")
    qwen3_like = dataclasses.replace(SMOLLM2, qk_norm=True, qkv_bias=True)
    assert "then adds the key and value biases, normalises each head's key (its per-head RMSNorm), rotates" in \
        M.latent_note(qwen3_like)
    gpt2_like = dataclasses.replace(SMOLLM2, qkv_bias=True, positions="learned", rope_layout=None)
    assert M.latent_note(gpt2_like).endswith("then adds the key and value biases.")
    plain = dataclasses.replace(SMOLLM2, positions="learned", rope_layout=None)
    assert M.latent_note(plain).endswith("(this model has no RoPE: nothing to rotate).")


@pytest.mark.lesson_model("gpt2")
def test_a_choice_the_tokenizer_writes_in_pieces_is_said_not_raised(door_model):
    """The tiny GPT-2 vocabulary has no <|im_start|>: the page says how many tokens it takes; changed_ids refuses."""
    n = len(M.first_token_ids(door_model, "im_start"))
    assert n > 1 and M.first_token_note(door_model, "im_start") == (
        f"This model's tokenizer has no single token for this choice (it writes it as {n} tokens), so it cannot be "
        "put first alone: pick another.")
    assert M.first_token_note(door_model, "newline") is None and M.first_token_note(door_model, "drop") is None
    with pytest.raises(ValueError, match="tokens for this tokenizer, not one"):
        M.changed_ids(door_model, [1, 2, 3], "im_start")
