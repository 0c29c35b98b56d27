"""attention: exact, batched NumPy self-attention with PyTorch's semantics.

Masks everywhere: boolean ``True`` = may attend. Row-vector convention ``x @ W``.
No module here imports Streamlit, Plotly or pandas.
"""

from ._validate import valid_head_counts
from .core import (
    additive_mask,
    causal_mask,
    merge_heads,
    padding_mask,
    padding_mask_from_lengths,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from .diagnostics import (
    SaturationStats,
    effective_keys,
    entropy,
    jacobian_frobenius_norm,
    sample_scores,
    saturation_sweep,
    softmax_jacobian,
)
from .embeddings import EMBEDDING_MODES, embed_tokens, sinusoidal_positional_encoding, tokenize
from .layers import AttentionSteps, MultiHeadAttention, MultiHeadSteps, SelfAttention, attention_steps
from .lookup import (
    HardLookup,
    SoftLookup,
    hard_lookup,
    hard_lookup_batch,
    nearest_value,
    sharpness_sweep,
    similarities,
    soft_lookup,
    soft_lookup_batch,
)
from .presets import PIPELINE_EXAMPLE, SENTENCE_EXAMPLE, SOFTMAX_EXAMPLE_LOGITS

__all__ = [
    "softmax", "scaled_dot_product_attention", "causal_mask", "padding_mask",
    "padding_mask_from_lengths", "additive_mask", "split_heads", "merge_heads",
    "entropy", "effective_keys", "softmax_jacobian", "jacobian_frobenius_norm",
    "sample_scores", "saturation_sweep", "SaturationStats",
    "tokenize", "embed_tokens", "sinusoidal_positional_encoding", "EMBEDDING_MODES",
    "valid_head_counts",
    "AttentionSteps", "attention_steps", "SelfAttention", "MultiHeadAttention", "MultiHeadSteps",
    "PIPELINE_EXAMPLE", "SENTENCE_EXAMPLE", "SOFTMAX_EXAMPLE_LOGITS",
    "SoftLookup", "HardLookup", "similarities", "soft_lookup", "soft_lookup_batch", "hard_lookup",
    "hard_lookup_batch", "sharpness_sweep", "nearest_value",
]
