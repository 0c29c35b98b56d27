"""A file too big for the memory free is refused before loading, with the estimate (``attention.llama.memory``).

The free figure is faked (``memory.available_bytes`` patched, or the files it reads pointed at ``tmp_path``), never
made by allocating memory; the files are tiny random GGUFs through the real loader.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import gguf
import pytest

from attention import llama
from attention.llama import memory
from attention.llama.config import LlamaConfig
from tests.core.llama_support import GEMMA3_270M, QWEN2_5_0_5B, TINY_GPT2, gguf_shapes, gpt2_vocabulary, write_tiny_gguf


def test_the_message_gives_both_numbers_plainly():
    with pytest.raises(ValueError, match=r"^big.gguf in float32 weights is too big for this server's memory: needs "
                                         r"about 4.1 GB, 2.0 GB free$"):
        memory.check_fits(4_100_000_000, 2_000_000_000, "big.gguf in float32 weights")
    with pytest.raises(ValueError, match=r"needs about 4.1 GB, 2.0 GB free \(compact weights would need about "
                                         r"1.2 GB\)$"):
        memory.check_fits(4_100_000_000, 2_000_000_000, "big.gguf in float32 weights", 1_200_000_000)
    for compact in (2_100_000_000, 4_100_000_000, 4_200_000_000):  # would not fit either, or not smaller: no hint
        with pytest.raises(ValueError, match=r"2.0 GB free$"):
            memory.check_fits(4_100_000_000, 2_000_000_000, "big.gguf in float32 weights", compact)
    memory.check_fits(4_100_000_000, 4_100_000_000, "fits exactly")
    memory.check_fits(4_100_000_000, None, "unknown free memory: not refused")


@pytest.mark.parametrize("quantized", [False, True])
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_the_estimate_is_the_weights_held_plus_the_working_set(tmp_path, quantized, arch):
    """The weights part of the estimate is exactly what the loaded model holds, in both modes (F32, or Q4_1
    matrices with a Q8_0 embedding kept as block codes in compact mode; gpt2's Q4_1 position table is widened)."""
    path = tmp_path / "tiny.gguf"
    if arch == "gpt2":
        write_tiny_gguf(path, config=TINY_GPT2, vocabulary=gpt2_vocabulary(), quantized=quantized)
    else:
        write_tiny_gguf(path, quantized=quantized)
    for mode in ("float32", "compact"):
        model = llama.load(path, weights=mode, expected_sha256=None)
        file = llama.gguf_file.read_gguf(path)
        c = model.config
        layer = sum(info.shape[0] * info.shape[1] for name, info in file.tensors.items()
                    if name.startswith("blk.0.") and len(info.shape) == 2)
        widens = mode == "compact" and quantized  # an F32 file's compact load holds float32 matrices
        working = memory.working_set_bytes(c, layer, "compact" if widens else "float32")
        assert working == 4 * c.n_layers * c.n_heads * c.max_tokens ** 2 + 4 * c.max_tokens * c.vocab_size \
            + memory.TOKENIZER_BYTES_PER_TOKEN * c.vocab_size + 4 * layer * (2 if widens else 1) + memory.FIXED_BYTES
        assert memory.estimate_bytes(file.tensors, c, mode) - working == model.nbytes, mode


MEASURED_MIB = {("qwen", "float32"): 2204, ("qwen", "compact"): 929, ("gemma", "float32"): 1399,
                ("gemma", "compact"): 697}
"""Peak RSS minus RSS after the imports (MiB) of a load and a 256-token pass with weights, Q8_0 files at the real shapes
of Qwen2.5-0.5B and Gemma 3 270M (``bench/bench_sizes.py``, BENCHMARKS.md "Models of real size", 2026-12-07)."""


@pytest.mark.parametrize("key", sorted(MEASURED_MIB))
def test_the_estimate_at_real_size_is_within_15_percent_above_the_measured_peak(key):
    """The tensor table of a real-size Q8_0 file (the shapes bench/bench_sizes.py writes, no file needed): the
    estimate is at least the measured peak (a load it lets through fits) and at most 15 % above it (a file that fits
    is not refused). The old working set (two copies of the logits, no tokenizer term) was 28 % above for Gemma's
    compact load."""
    model, mode = key
    c = QWEN2_5_0_5B if model == "qwen" else GEMMA3_270M
    shapes = gguf_shapes(c, c["vocab"])
    q8, f32 = gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.F32
    tensors = {name: SimpleNamespace(shape=shape, ggml_type=q8 if len(shape) == 2 else f32)
               for name, shape in shapes.items()}
    config = LlamaConfig(n_layers=c["n_layers"], n_heads=c["n_heads"], n_kv_heads=c["n_kv_heads"],
                         d_model=c["d_model"], d_head=c.get("d_head", c["d_model"] // c["n_heads"]), d_ff=c["d_ff"],
                         vocab_size=c["vocab"], rope_theta=c["rope_theta"], rms_eps=c["rms_eps"],
                         context_length=c["context_length"], max_tokens=256, bos_id=None, eos_id=None, name=model)
    estimate = memory.estimate_bytes(tensors, config, mode) / 2**20
    assert MEASURED_MIB[key] <= estimate <= 1.15 * MEASURED_MIB[key], (key, estimate)


def test_a_file_too_big_is_refused_before_any_tensor_is_read(tmp_path, monkeypatch):
    path = tmp_path / "tiny-gpt2.gguf"
    write_tiny_gguf(path, config=TINY_GPT2, vocabulary=gpt2_vocabulary(), quantized=True)
    model = llama.load(path, weights="float32", expected_sha256=None)
    file = llama.gguf_file.read_gguf(path)
    dense, compact = (memory.estimate_bytes(file.tensors, model.config, mode) for mode in ("float32", "compact"))
    assert compact < dense

    def no_tensor_read(*args, **kwargs):
        raise AssertionError("a tensor was read before the memory check")

    load_module = importlib.import_module("attention.llama.load")  # the module (the package exports the function)
    monkeypatch.setattr(load_module, "_read_linear", no_tensor_read)
    monkeypatch.setattr(load_module.gguf_file, "dequantize", no_tensor_read)
    monkeypatch.setattr(memory, "available_bytes", lambda: dense - 1)
    expected = (f"tiny-gpt2.gguf in float32 weights is too big for this server's memory: needs about "
                f"{memory.gb(dense)}, {memory.gb(dense - 1)} free \\(compact weights would need about "
                f"{memory.gb(compact)}\\)")
    with pytest.raises(ValueError, match=expected):
        llama.load(path, weights="float32", expected_sha256=None)
    monkeypatch.setattr(memory, "available_bytes", lambda: compact - 1)
    with pytest.raises(ValueError, match=f"in compact weights is too big .* needs about {memory.gb(compact)}, "):
        llama.load(path, weights="compact", expected_sha256=None)
    monkeypatch.undo()
    monkeypatch.setattr(memory, "available_bytes", lambda: compact)  # compact fits, exactly
    assert llama.load(path, weights="compact", expected_sha256=None).weights_mode == "compact"


def test_available_memory_is_meminfo_or_the_cgroups_room(tmp_path, monkeypatch):
    GiB = 2**30
    meminfo, limit, usage = tmp_path / "meminfo", tmp_path / "memory.max", tmp_path / "memory.current"
    meminfo.write_text(f"MemTotal:       25000000 kB\nMemFree:  100 kB\nMemAvailable:   {8 * GiB // 1024} kB\n")
    monkeypatch.setattr(memory, "MEMINFO", meminfo)
    monkeypatch.setattr(memory, "CGROUP_LIMIT_FILES", (limit,))
    monkeypatch.setattr(memory, "CGROUP_USAGE_FILES", (usage,))
    assert memory.available_bytes() == 8 * GiB  # no cgroup files
    limit.write_text("max\n")
    usage.write_text(f"{GiB}\n")
    assert memory.available_bytes() == 8 * GiB  # no limit
    limit.write_text(f"{3 * GiB}\n")
    assert memory.available_bytes() == 2 * GiB  # the container's room: limit - usage
    limit.write_text(f"{20 * GiB}\n")
    assert memory.available_bytes() == 8 * GiB  # the machine has less
    meminfo.unlink()
    assert memory.available_bytes() == 19 * GiB
    limit.unlink()
    assert memory.available_bytes() is None  # nothing to read: load does not refuse
    limit.write_text(f"{3 * GiB}\n")
    assert memory.memory_limit_bytes() == 3 * GiB
