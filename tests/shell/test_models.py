"""The catalogue of models a server may load (explorer/shell/models.py), on a temporary fake home: an operator's
folder, an Ollama store (manifest + blob), an LM Studio tree and a Hugging Face cache, each holding tiny GGUF files
written by the core's own fixture writer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import gguf
import pytest

from explorer.shell import models
from tests.core.llama_support import (
    TINY,
    TINY_LLAMA3,
    TINY_QWEN2,
    llama3_vocabulary,
    qwen_vocabulary,
    rewrite_gguf,
    write_tiny_gguf,
)


def tiny(path: Path, **kwargs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_tiny_gguf(path, **kwargs)
    return path


def ollama_store(root: Path, name: tuple[str, ...], gguf: Path) -> Path:
    """An Ollama model as Ollama stores it: the blob named by its digest, and a manifest naming it (with the other
    layers a pulled model has)."""
    import hashlib

    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    blob = root / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(gguf.read_bytes())
    manifest = root / "manifests" / Path(*name)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:" + "0" * 64,
                   "size": 487},
        "layers": [{"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "1" * 64, "size": 9},
                   {"mediaType": models.OLLAMA_MODEL_LAYER, "digest": f"sha256:{digest}", "size": gguf.stat().st_size}],
    }))
    return blob


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    tiny(home / "ops" / "tiny-llama.gguf")
    tiny(home / "ops" / "tiny-qwen2.gguf", config=TINY_QWEN2, vocabulary=qwen_vocabulary(), name="tiny-qwen2")
    tiny(home / "ops" / "sub" / "not-listed.gguf")  # a subfolder: not scanned
    (home / "ops" / "notes.txt").write_text("not a model")
    tiny(home / "ops" / "mamba.gguf", config={**TINY, "arch": "mamba"})  # an architecture the core refuses
    truncated = tiny(home / "ops" / "cut.gguf", seed=1)
    truncated.write_bytes(truncated.read_bytes()[:truncated.stat().st_size // 2])  # tensors cut
    (home / "ops" / "junk.gguf").write_bytes(b"PK\x03\x04 a zip file renamed")
    scratch = tiny(home / "scratch" / "o.gguf", seed=2)
    ollama_store(home / ".ollama" / "models", ("registry.ollama.ai", "library", "tiny", "latest"), scratch)
    other = tiny(home / "scratch" / "p.gguf", seed=4)
    ollama_store(home / ".ollama" / "models", ("hf.co", "someone", "tiny-gguf", "Q8_0"), other)
    tiny(home / ".lmstudio" / "models" / "pub" / "repo" / "tiny-lms.gguf", seed=5)
    tiny(home / ".cache" / "lm-studio" / "models" / "pub" / "old" / "tiny-old.gguf", seed=6)
    snapshot = home / ".cache" / "huggingface" / "hub" / "models--org--repo" / "snapshots"
    blob = tiny(home / ".cache" / "huggingface" / "hub" / "models--org--repo" / "blobs" / "abc", seed=7)
    for revision in ("r1", "r2"):  # two revisions, one file (the hub's symlinks)
        (snapshot / revision).mkdir(parents=True)
        (snapshot / revision / "tiny-hf.gguf").symlink_to(blob)
    return home


def env(home: Path, **more) -> dict[str, str]:
    return {models.MODELS_ENV: str(home / "ops"), **more}


def by_name(entries) -> dict[str, models.Entry]:
    return {e.name: e for e in entries}


def test_the_built_in_model_comes_first_and_alone_by_default(home):
    entries = models.catalogue({}, home)
    assert [e.id for e in entries] == [models.DEFAULT_ID]
    assert entries[0].path is None and entries[0].supported and entries[0].source == "built-in"


def test_an_operator_folder_lists_its_gguf_files_not_its_subfolders(home):
    entries = by_name(models.catalogue(env(home), home))
    assert set(entries) == {"SmolLM2-135M-Instruct", "tiny-llama", "tiny-qwen2", "mamba", "cut", "junk"}
    assert entries["tiny-qwen2"].architecture == "qwen2" and entries["tiny-qwen2"].supported
    assert entries["tiny-llama"].size == (home / "ops" / "tiny-llama.gguf").stat().st_size
    assert entries["tiny-llama"].source == "operator"


def test_files_the_core_cannot_read_are_listed_with_the_cores_reason(home):
    entries = by_name(models.catalogue(env(home), home))
    assert entries["mamba"].architecture == "mamba"
    assert "unsupported model architecture" in entries["mamba"].problem and "'qwen2'" in entries["mamba"].problem
    assert entries["cut"].problem.startswith("truncated GGUF file: tensor") and entries["cut"].architecture is None
    assert entries["junk"].problem.startswith("not a GGUF file") and entries["junk"].architecture is None
    assert str(home) not in "".join(e.problem or "" for e in entries.values())  # no folder (a user name) shown


def test_a_list_of_files_and_folders_separated_by_the_path_separator(home):
    value = os.pathsep.join([str(home / "ops" / "tiny-llama.gguf"), str(home / "nowhere"),
                             str(home / "ops" / "sub"), ""])
    assert [e.name for e in models.catalogue({models.MODELS_ENV: value}, home)] == \
        ["SmolLM2-135M-Instruct", "tiny-llama", "not-listed"]


def test_the_learners_own_models_only_with_the_opt_in(home):
    assert {e.source for e in models.catalogue(env(home), home)} == {"built-in", "operator"}
    entries = by_name(models.catalogue(env(home, **{models.LOCAL_ENV: "1"}), home))
    assert entries["tiny:latest"].source == "ollama"  # Ollama's own short name
    assert entries["hf.co/someone/tiny-gguf:Q8_0"].source == "ollama"
    assert entries["tiny:latest"].path.name.startswith("sha256-") and entries["tiny:latest"].supported
    assert entries["tiny-lms"].source == entries["tiny-old"].source == "lm-studio"
    assert entries["tiny-hf"].source == "hf-cache"  # once, though two revisions hold it
    assert sum(e.name == "tiny-hf" for e in entries.values()) == 1


def test_hf_cache_and_ollama_folders_from_the_environment(home, tmp_path):
    tiny(tmp_path / "hub" / "models--a--b" / "snapshots" / "r" / "elsewhere.gguf")
    ollama_store(tmp_path / "ollama", ("registry.ollama.ai", "library", "moved", "1b"), home / "scratch" / "o.gguf")
    names = [e.name for e in models.catalogue({models.LOCAL_ENV: "yes", "HF_HUB_CACHE": str(tmp_path / "hub"),
                                               "OLLAMA_MODELS": str(tmp_path / "ollama")}, home)]
    assert "elsewhere" in names and "moved:1b" in names and "tiny-hf" not in names and "tiny:latest" not in names
    names = [e.name for e in models.catalogue({models.LOCAL_ENV: "1", "HF_HOME": str(tmp_path)}, home)]
    assert "elsewhere" in names


def test_a_damaged_ollama_manifest_is_skipped(home, tmp_path):
    root = tmp_path / "ollama"
    ollama_store(root, ("registry.ollama.ai", "library", "good", "latest"), home / "scratch" / "o.gguf")
    for tag, text in (("json", "{not json"), ("nolayer", json.dumps({"layers": []})),
                      ("path", json.dumps({"layers": [{"mediaType": models.OLLAMA_MODEL_LAYER,
                                                       "digest": "sha256:../../../etc/passwd"}]}))):
        bad = root / "manifests" / "registry.ollama.ai" / "library" / "bad" / tag
        bad.parent.mkdir(parents=True, exist_ok=True)
        bad.write_text(text)
    assert [name for _, name in models.ollama_files(root)] == ["good:latest"]


def test_ids_are_a_slug_and_a_hash_of_the_files_beginning_and_size(home, tmp_path):
    entry = by_name(models.catalogue(env(home), home))["tiny-qwen2"]
    assert entry.id == "tiny-qwen2-" + models.file_hash(home / "ops" / "tiny-qwen2.gguf")[:8]
    copy = tmp_path / "tiny-qwen2.gguf"
    copy.write_bytes((home / "ops" / "tiny-qwen2.gguf").read_bytes())
    assert models.file_hash(copy) == models.file_hash(home / "ops" / "tiny-qwen2.gguf")  # the same bytes
    longer = tmp_path / "longer.gguf"
    longer.write_bytes(copy.read_bytes() + b"\0")
    assert models.file_hash(longer) != models.file_hash(copy)  # the size is hashed too
    assert models.slug("Qwen2.5 0.5B Instruct") == "qwen2-5-0-5b-instruct" and models.slug("…") == "model"
    assert models.find(models.catalogue(env(home), home), entry.id) == entry
    assert models.find(models.catalogue(env(home), home), str(home / "ops" / "tiny-qwen2.gguf")) is None


def test_the_built_in_file_in_the_hf_cache_is_not_listed_twice(home, tmp_path, monkeypatch):
    monkeypatch.setattr(models.gguf_file, "MODEL_SIZE", (home / "ops" / "tiny-llama.gguf").stat().st_size)
    monkeypatch.setattr(models.gguf_file, "MODEL_FILENAME", "tiny-llama.gguf")
    assert "tiny-llama" not in by_name(models.catalogue(env(home), home))


def test_a_llama3_file_passes_the_header_checks_and_a_yarn_file_does_not(tmp_path):
    """Llama 3.x: the llama-bpe pre-tokenizer and the rope_freqs tensor (no scaling key) are read; a file whose RoPE
    scaling the core refuses is listed with the core's reason, from its header."""
    llama3 = tiny(tmp_path / "llama3.gguf", config=TINY_LLAMA3, vocabulary=llama3_vocabulary(), name="tiny-llama3")
    assert models.header(llama3) == ("llama", None, "tiny-llama3")
    yarn = rewrite_gguf(tiny(tmp_path / "plain.gguf"), tmp_path / "yarn.gguf",
                        keys={"llama.rope.scaling.type": ("yarn", gguf.GGUFValueType.STRING)})
    arch, problem, _ = models.header(yarn)
    assert arch == "llama" and problem.startswith("llama.rope.scaling.type is 'yarn'; supported: 'none', 'linear'")


# --- a visitor's upload --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, cap", [("", None), ("0", None), ("10", 10), (" 500 ", 500), ("1e3", None),
                                      ("-5", None), ("٣", None), ("ten", None)])
def test_uploads_are_off_unless_the_operator_sets_a_whole_number_of_mb(raw, cap):
    assert models.upload_cap_mb({models.UPLOAD_ENV: raw}) == cap
    assert models.upload_cap_mb({}) is None


def test_an_upload_is_saved_under_a_name_the_server_chooses_and_listed_like_a_catalogue_file(tmp_path):
    source = tmp_path / "source" / "my qwen.gguf"
    source.parent.mkdir()
    write_tiny_gguf(source, config=TINY_QWEN2, vocabulary=qwen_vocabulary(), name="tiny-qwen2")
    data = source.read_bytes()
    folder = tmp_path / "uploads"
    folder.mkdir()
    entry = models.save_upload(data, "../../etc/my qwen.gguf", cap_mb=1, folder=folder)
    assert (entry.name, entry.source, entry.architecture, entry.size, entry.problem) == (
        "my qwen", "upload", "qwen2", len(data), None)
    assert entry.path.parent == folder and entry.path.read_bytes() == data  # the visitor's name is never a path
    assert entry.id == f"my-qwen-{models.file_hash(source)[:8]}"  # as the catalogue would list the same file
    assert models.save_upload(data, "again.gguf", cap_mb=1, folder=folder).path == entry.path  # one file per content
    assert [p.name for p in folder.iterdir()] == [entry.path.name]


def test_an_upload_over_the_cap_or_one_the_header_refuses_is_refused_with_the_catalogue_s_reason(tmp_path):
    source = tmp_path / "tiny.gguf"
    write_tiny_gguf(source, name="tiny")
    data = source.read_bytes()
    folder = tmp_path / "uploads"
    folder.mkdir()
    with pytest.raises(ValueError, match=r"^big\.gguf is 0\.[0-9] MB, more than this server's upload limit of 0 MB$"):
        models.save_upload(data, "big.gguf", cap_mb=0, folder=folder)
    mamba = tmp_path / "mamba.gguf"
    write_tiny_gguf(mamba, config={**TINY, "arch": "mamba"})
    reasons = {}
    for name, content in (("cut.gguf", data[:len(data) // 2]), ("mamba.gguf", mamba.read_bytes()),
                          ("notes.gguf", b"not a model")):
        with pytest.raises(ValueError) as refused:
            models.save_upload(content, name, cap_mb=1, folder=folder)
        reasons[name] = str(refused.value)
    assert "truncated GGUF file" in reasons["cut.gguf"]
    assert reasons["mamba.gguf"] == models.header(mamba)[1]  # the catalogue's words for the same file
    assert "GGUF" in reasons["notes.gguf"]
    assert not any(folder.iterdir())  # a refused file is deleted
    assert not any(str(folder) in r for r in reasons.values())
