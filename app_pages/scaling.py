"""Page: why attention divides the scores by √d_k (dot products grow, the softmax saturates)."""

import pandas as pd
import streamlit as st

from app import figures, state
from app import scenarios_scaling as S
from app.figures import scaling as F
from app.textviews import fmt

curves = st.cache_data(max_entries=32, show_spinner="Measuring the softmax for d_k = 1, 2, 4, …, 1024 …")(S.curves)
setting = st.cache_data(max_entries=64, show_spinner=False)(S.setting)
D = S.DEFAULTS

st.title("Why divide by √d_k")
st.markdown(
    "A query and a key with unit-variance components give a dot product whose variance **grows with d_k**. "
    "Large scores push the softmax towards one-hot (*saturation*), and a saturated softmax passes almost no "
    "gradient back. Dividing by √d_k brings the variance back to 1. Every number below is measured on random "
    "queries and keys drawn from the seed, none is typed in."
)
st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")

c1, c2, c3, c4 = st.columns(4)
with c1:
    d_k = st.select_slider("d_k (this page's key width)", S.D_K_CHOICES, D["d_k"], key="scale_d_k",
                           bind="query-params", help="Powers of two from 1 to 1024 (log scale). Independent of "
                                                     "the sidebar's d_k.")
    state.check_link("scale_d_k", d_k, "a power of two from 1 to 1024")
with c2:
    n_keys = st.slider("Keys per query", *S.N_KEYS_RANGE, D["n_keys"], key="scale_n_keys", bind="query-params",
                       help="Row length of each score matrix (6 = the lesson's sentence).")
    state.check_link("scale_n_keys", n_keys, f"a whole number from {S.N_KEYS_RANGE[0]} to {S.N_KEYS_RANGE[1]}")
with c3:
    seed = st.number_input("Seed (Monte Carlo)", 0, state.SEED_MAX, D["seed"], step=1, key="scale_seed",
                           bind="query-params", help="Seeds the random queries and keys of this page.")
    state.check_link("scale_seed", seed, f"a whole number from 0 to {state.SEED_MAX}")
with c4:
    n_samples = st.select_slider("Samples (query rows per d_k)", S.SAMPLE_CHOICES, D["n_samples"],
                                 key="scale_samples", bind="query-params",
                                 help="How many queries are drawn for each d_k; more = smoother numbers.")
    state.check_link("scale_samples", n_samples, "one of " + ", ".join(map(str, S.SAMPLE_CHOICES)))

d_k, n_keys, seed, n_samples = int(d_k), int(n_keys), int(seed), int(n_samples)
stats = curves(n_keys, n_samples, seed)
now = setting(d_k, n_keys, n_samples, seed)
verdict = S.verdict(stats, d_k)

st.info(f"**Verdict.** {verdict.text()}", icon="📏")
n_rows = S.query_rows(n_samples, n_keys)
st.caption(f"Measured on {n_rows} random queries per d_k ({n_rows // n_keys} matrices of {n_keys} queries × "
           f"{n_keys} keys, at least the {n_samples} samples asked for), seed {seed}; components i.i.d. N(0, 1).")

# 1 · Spread of the scores
st.header("1 · The scores spread out as d_k grows")
st.latex(r"q\cdot k = \sum_{i=1}^{d_k} q_i k_i,\qquad \operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k}"
         r"\operatorname{Var}(q_i k_i) = d_k,\qquad \operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1")
log_y = st.toggle("Logarithmic density axis", False, key="scale_hist_log", bind="query-params",
                  help="Keeps both bells visible when d_k is large (the raw one gets very flat).")
state.check_link("scale_hist_log", log_y, "true or false")
st.plotly_chart(F.score_histograms(now.raw_edges, now.raw_density, now.scaled_edges, now.scaled_density, d_k=d_k,
                                   raw_var=now.raw_var, scaled_var=now.scaled_var, log_y=bool(log_y)),
                key="scale_fig_hist")
st.caption(f"{now.n_scores} scores (all [{n_keys}, {n_keys}] score matrices of d_k = {d_k}), binned into "
           f"{S.HIST_BINS} bars each. Measured variance: raw {fmt(now.raw_var, 2)} (theory {d_k}), "
           f"scaled {fmt(now.scaled_var, 3)} (theory 1). Dotted lines: ±one theoretical standard deviation.")

# 2 · One query, both ways
st.header("2 · One query's softmax, both ways")
st.latex(r"w_j = \mathrm{softmax}_j(s) = \frac{e^{s_j}}{\sum_k e^{s_k}},\qquad s_j = q\cdot k_j \ \text{(unscaled)}"
         r"\quad\text{or}\quad s_j = \frac{q\cdot k_j}{\sqrt{d_k}}\ \text{(scaled)}")
q_labels = [f"q{i}" for i in range(n_keys)]
k_labels = [f"k{j}" for j in range(n_keys)]
b1, b2 = st.columns(2)
b1.plotly_chart(F.query_bars(now.weights_unscaled[0], k_labels, query_label="q0", scaled=False,
                             title="unscaled: softmax(q0·k)"), key="scale_fig_bar_unscaled")
b2.plotly_chart(F.query_bars(now.weights_scaled[0], k_labels, query_label="q0", scaled=True,
                             title=f"scaled: softmax(q0·k / √{d_k})"), key="scale_fig_bar_scaled")
h1, h2 = st.columns(2)
h1.plotly_chart(figures.heatmap(now.weights_unscaled, q_labels, k_labels, title="unscaled weights", zrange=(0, 1)),
                key="scale_fig_heat_unscaled")
h2.plotly_chart(figures.heatmap(now.weights_scaled, q_labels, k_labels, title="scaled weights", zrange=(0, 1)),
                key="scale_fig_heat_scaled")
st.caption(f"The first sampled score matrix, shape [n_q, n_k] = [{n_keys}, {n_keys}]; the bars are its first row "
           "(query q0). Both heat maps use the same colour range [0, 1]; each row sums to 1.")
with st.expander("Numbers"):
    st.dataframe(pd.DataFrame({"key": k_labels, "score q0·k": now.scores[0], "scaled score": now.scaled_scores[0],
                               "weight unscaled": now.weights_unscaled[0], "weight scaled": now.weights_scaled[0]}),
                 hide_index=True, width="stretch")

# 3 · Curves over d_k
st.header("3 · Saturation over every d_k")
st.latex(r"J = \frac{\partial w}{\partial s} = \operatorname{diag}(w) - w\,w^\top,\qquad"
         r"\|J\|_F = \sqrt{\textstyle\sum_{i,j} J_{ij}^2}")
st.latex(r"\text{effective keys} = e^{H(w)},\qquad H(w) = -\sum_j w_j \log w_j"
         r"\quad (1 = \text{one-hot},\ n = \text{uniform})")
panels = {
    "mean max weight": (stats.max_weight_unscaled, stats.max_weight_scaled),
    "effective keys exp(H)": (stats.effective_keys_unscaled, stats.effective_keys_scaled),
    "softmax Jacobian ‖J‖_F": (stats.jacobian_norm_unscaled, stats.jacobian_norm_scaled),
}
st.plotly_chart(F.saturation_curves(stats.d_k, panels, current_d_k=d_k,
                                    yranges={"mean max weight": (0, 1.02), "effective keys exp(H)": (0, n_keys + 0.5)}),
                key="scale_fig_curves")
st.caption(
    f"Means over {n_rows} query rows per d_k (d_k = 1, 2, 4, …, 1024; dotted line = the current d_k). "
    "‖J‖_F is the size of the gradient the softmax passes back to the scores: one-hot rows give J = 0. "
    "With many keys a nearly uniform row also passes little gradient to each score (every weight ≈ 1/n), so "
    "without scaling ‖J‖ can first rise a little before it falls; with scaling every d_k sits at the same point."
)
with st.expander("Numbers"):
    st.dataframe(pd.DataFrame({
        "d_k": stats.d_k, "score std unscaled": stats.score_std_unscaled, "score std scaled": stats.score_std_scaled,
        "max weight unscaled": stats.max_weight_unscaled, "max weight scaled": stats.max_weight_scaled,
        "entropy unscaled (nats)": stats.entropy_unscaled, "entropy scaled (nats)": stats.entropy_scaled,
        "effective keys unscaled": stats.effective_keys_unscaled, "effective keys scaled": stats.effective_keys_scaled,
        "‖J‖_F unscaled": stats.jacobian_norm_unscaled, "‖J‖_F scaled": stats.jacobian_norm_scaled,
    }), hide_index=True, width="stretch")

# 4 · Temperature
st.header("4 · Temperature on the lesson's softmax example")
st.latex(r"w = \mathrm{softmax}(z / T),\qquad z = [" + r",\ ".join(fmt(v, 1) for v in S.LESSON_LOGITS) + "]")
st.latex(r"T \to 0:\ \text{one-hot},\qquad T \to \infty:\ \text{uniform},\qquad"
         r"\text{dividing by } \sqrt{d_k} \text{ is the temperature } T = \sqrt{d_k}")
temperature = st.select_slider("Temperature T", S.TEMPERATURE_CHOICES, D["temperature"], key="scale_temperature",
                               bind="query-params", format_func=lambda t: f"{t:g}",
                               help="Divides the logits before the softmax; log scale from 0.01 to 100.")
state.check_link("scale_temperature", f"{temperature:g}",
                 "one of " + ", ".join(f"{t:g}" for t in S.TEMPERATURE_CHOICES))
tv = S.temperature_view(float(temperature))
t1, t2 = st.columns(2)
t1.plotly_chart(F.temperature_bars(tv.weights, tv.logits, temperature=tv.temperature), key="scale_fig_temp_bar")
t2.plotly_chart(F.temperature_sweep(tv.temperatures, tv.sweep, tv.logits, current=tv.temperature),
                key="scale_fig_temp_sweep")
st.caption(f"Shape [{len(tv.logits)}] → [{len(tv.logits)}]. At T = 1 this is the lesson's softmax example; at "
           f"T = {temperature:g} the weights are [{', '.join(fmt(w, 3) for w in tv.weights)}].")
