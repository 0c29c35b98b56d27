"""The model's byte-level BPE tokenizer (``tokenizers``), built from the GGUF vocabulary, and the text it decodes.

:class:`ByteLevelBPE` encodes text to ids and back, gives each token's exact bytes and a readable
piece per token, and decodes a token sequence that ends inside a character without inventing a
character (:meth:`ByteLevelBPE.decode_partial`): a character can span two or more tokens (日 and İ
take two, 😀 and 🍕 three, 🐈‍⬛ eight), so a prefix of a generation may end half-way through one.

:class:`SentencePieceBPE` does the same for a SentencePiece-style vocabulary (``tokenizer.ggml.model = "llama"``:
Gemma's files): ``▁`` for a space, ``<0xNN>`` byte tokens for any character not in the vocabulary (byte fallback),
merges recovered from the vocabulary when the file lists none. :func:`read_tokenizer` picks the class the file needs.

Sources: GPT-2's byte-level BPE (Radford et al. 2019, ``encoder.py``); the pre-tokenizers named by
``tokenizer.ggml.pre`` (:data:`PRE_TOKENIZERS`): SmolLM2's (``tokenizer.json`` of
HuggingFaceTB/SmolLM2-135M-Instruct; llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_SMOLLM``) and Qwen2's (``tokenizer.json`` of
Qwen/Qwen2.5-0.5B; llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_QWEN2``; transformers' ``Qwen2Tokenizer.PRETOKENIZE_REGEX``) and
Llama 3's (``tokenizer.json`` of meta-llama/Llama-3.2-1B; llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_LLAMA3``).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

import numpy as np
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

__all__ = ["LLAMA3_PRE_TOKENIZERS", "LLAMA3_SPLIT", "PRE_TOKENIZERS", "QWEN2_SPLIT", "TOKENIZER_MODELS", "ByteLevelBPE",
           "PartialText", "SentencePieceBPE", "bytes_to_unicode", "check_ids", "complete_text", "read_tokenizer",
           "sentencepiece_merges"]

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
"""Qwen2's pre-tokenizer regex (Qwen2.5 and Qwen3 files write ``tokenizer.ggml.pre = "qwen2"``): GPT-2's pattern
with case-insensitive contractions, one digit per piece, a letter run that may carry one leading non-letter
(``"_x"``, ``" x"``), and punctuation runs that keep their trailing newlines. Source: llama.cpp's
``LLAMA_VOCAB_PRE_TYPE_QWEN2`` (``llama-vocab.cpp``), the same as transformers' ``Qwen2Tokenizer``."""

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
"""Llama 3's pre-tokenizer regex (Llama 3.x files write ``tokenizer.ggml.pre = "llama-bpe"``): :data:`QWEN2_SPLIT`
except that digits go in runs of up to three (``"12345"`` is ``"123"`` then ``"45"``). Source: the ``Split`` pattern
of Meta's ``tokenizer.json`` (meta-llama/Llama-3.2-1B), quoted as the "original regex from tokenizer.json" of
llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_LLAMA3`` (``llama-vocab.cpp``), the same as transformers' GGUF loader's
``_LLAMA3_SPLIT`` (``integrations/gguf/gguf_tokenizer_mapping.py``, transformers 5.23)."""

LLAMA3_PRE_TOKENIZERS = ("llama-bpe", "llama3", "llama-v3")
"""The ``tokenizer.ggml.pre`` names llama.cpp reads as ``LLAMA_VOCAB_PRE_TYPE_LLAMA3`` (``llama-vocab.cpp``;
llama.cpp's converter writes ``"llama-bpe"`` for Llama 3.x)."""

PRE_TOKENIZERS = ("smollm", "gpt2", "gpt-2", "default", "qwen2", *LLAMA3_PRE_TOKENIZERS)
"""The ``tokenizer.ggml.pre`` values :func:`build_tokenizer` knows: ``smollm`` (digits one by one, then GPT-2's
byte-level regex), ``gpt2``, ``gpt-2`` (how llama.cpp's converter writes GPT-2's own) and ``default`` (GPT-2's
regex), ``qwen2`` (:data:`QWEN2_SPLIT`), ``llama-bpe``, ``llama3``, ``llama-v3`` (:data:`LLAMA3_SPLIT`)."""

TOKENIZER_MODELS = ("gpt2", "llama")
"""The ``tokenizer.ggml.model`` values :func:`read_tokenizer` knows: ``"gpt2"`` (byte-level BPE, :class:`ByteLevelBPE`)
and ``"llama"`` (SentencePiece-style BPE with byte fallback, :class:`SentencePieceBPE`)."""

_CONTROL, _USER_DEFINED, _BYTE = 3, 4, 6  # tokenizer.ggml.token_type values (llama.cpp's llama_token_type)
_SPACE = "\u2581"  # ▁, SentencePiece's space
_GEMMA = ("gemma", "gemma2", "gemma3")  # architectures whose SentencePiece files transformers reads as Gemma's


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table for byte-level BPE (space -> ``Ġ``, newline -> ``Ċ``).

    Source: Radford et al. (2019), GPT-2's ``encoder.py``.
    """
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


def build_tokenizer(metadata: dict) -> tuple[Tokenizer, list[str], list[int]]:
    """The byte-level BPE of the file (``tokenizers``), with the pre-tokenizer ``tokenizer.ggml.pre`` names.

    ``"smollm"``: digits are split one by one, then GPT-2's byte-level regex (as SmolLM2's ``tokenizer.json``
    and llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_SMOLLM``); ``"gpt2"`` / ``"gpt-2"`` / ``"default"``: GPT-2's regex;
    ``"qwen2"``: :data:`QWEN2_SPLIT` (isolated pieces), then the byte-level mapping without GPT-2's regex (as
    transformers' GGUF loader builds it; no Unicode normalisation, as llama.cpp); :data:`LLAMA3_PRE_TOKENIZERS`: the
    same with :data:`LLAMA3_SPLIT`, and a piece that is itself a token is that token whatever the merges would make of
    it (``ignore_merges``: llama.cpp's ``tokenizer_ignore_merges`` for ``LLAMA_VOCAB_PRE_TYPE_LLAMA3``, Meta's
    ``tokenizer.json`` ``"ignore_merges": true``; transformers' GGUF loader does not set it).
    Control tokens (type 3, e.g. ``<|im_start|>``) are special tokens, user-defined ones (type 4)
    added tokens: both match whole in the text. A BOS (and EOS) token is added when the file's
    ``tokenizer.ggml.add_bos_token`` (``add_eos_token``) says so (:func:`_add_bos_eos`; absent: none, as transformers,
    except for Llama 3's pre-tokenizers: a BOS, as llama.cpp's ``add_bos = true`` for ``LLAMA_VOCAB_PRE_TYPE_LLAMA3``
    and the ``TemplateProcessing`` of Meta's ``tokenizer.json``; transformers' GGUF loader adds none there).

    Returns:
        ``(tokenizer, tokens, token_types)``: the ``tokenizers.Tokenizer`` and the file's vocabulary lists.

    Raises:
        ValueError: ``tokenizer.ggml.model`` is not ``"gpt2"``, ``tokenizer.ggml.pre`` is not one of
            :data:`PRE_TOKENIZERS` (the message names it and the known ones), or the vocabulary has repeated
            tokens.
    """
    model, pre = metadata.get("tokenizer.ggml.model"), metadata.get("tokenizer.ggml.pre", "default")
    if model != "gpt2":
        raise ValueError(f"tokenizer.ggml.model is {model!r}; this builder reads byte-level BPE ('gpt2') files")
    if pre not in PRE_TOKENIZERS:
        raise ValueError(f"unknown pre-tokenizer: tokenizer.ggml.pre is {pre!r}; known: "
                         + ", ".join(repr(p) for p in PRE_TOKENIZERS))
    tokens, merges = metadata["tokenizer.ggml.tokens"], metadata.get("tokenizer.ggml.merges", [])
    types = metadata.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    alphabet = set(bytes_to_unicode().values())
    spelling = bytes_to_unicode()
    vocab = {}
    for index, token in enumerate(tokens):  # a token outside the byte alphabet is spelled in it
        vocab[token if set(token) <= alphabet else "".join(spelling[b] for b in token.encode())] = index
    llama3 = pre in LLAMA3_PRE_TOKENIZERS
    bpe = models.BPE(vocab=vocab, merges=[tuple(merge.split(" ", 1)) for merge in merges],
                     fuse_unk=False, byte_fallback=False, ignore_merges=llama3)
    tokenizer = Tokenizer(bpe)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    elif pre == "qwen2" or llama3:
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT if llama3 else QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    _add_file_tokens(tokenizer, metadata, tokens, types, default_bos=llama3)
    return tokenizer, list(tokens), list(types)


def sentencepiece_merges(tokens: list[str], scores: dict[str, float]) -> list[tuple[str, str]]:
    """The BPE merges a SentencePiece vocabulary implies: every split of a token into two tokens of the vocabulary,
    best ``scores`` first (ties: the shorter left, then right piece; within one token, by the pieces' ids).

    What transformers' GGUF loader does for a file without ``tokenizer.ggml.merges`` (``generate_merges`` in
    ``tokenization_utils_base.py``, transformers 5.23), written again here: the core does not import transformers.

    Args:
        tokens: the vocabulary in id order (a repeated token keeps its last id, as a ``dict`` does).
        scores: the sort key per token, higher merged first: the file's ``tokenizer.ggml.scores``, or for Gemma
            minus the position (Gemma's scores do not follow its merge order; its file order does).
    """
    vocab = {token: index for index, token in enumerate(tokens)}
    merges = []
    for token, score in scores.items():
        local = [(token[:i], token[i:], score) for i in range(1, len(token))
                 if token[:i] in vocab and token[i:] in vocab]
        merges.extend(sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]])))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(left, right) for left, right, _ in merges]


def build_sentencepiece(metadata: dict) -> tuple[Tokenizer, list[str], list[int]]:
    """The SentencePiece-style BPE of the file (``tokenizer.ggml.model = "llama"``), built as transformers' GGUF loader
    builds it (``integrations/gguf/gguf_tokenizer_mapping.py``, transformers 5.23), with ``tokenizers``.

    A BPE over the file's tokens with byte fallback (a character not in the vocabulary becomes its UTF-8 bytes'
    ``<0xNN>`` tokens) and unknown token ``"<unk>"``; merges from ``tokenizer.ggml.merges``, or when the file has none
    (Gemma's) recovered by :func:`sentencepiece_merges`. Two kinds, by ``general.architecture``:

    - Gemma (``gemma``, ``gemma2``, ``gemma3``; transformers' ``GemmaTokenizer``): a space is replaced by ``▁``, no
      space is put before the text, and a run of spaces is whatever the merges make of its ``▁``s; a token the file
      stores as real spaces (``"  "``) is looked up as ``"▁▁"``; merges are sorted by file position.
    - Any other (transformers' ``LlamaTokenizer``): ``Metaspace`` puts one ``▁`` before the text (``add_prefix_space``
      is transformers' default, true, whatever ``tokenizer.ggml.add_space_prefix`` says) and decoding strips it;
      merges are sorted by ``tokenizer.ggml.scores``.

    Control tokens (type 3) are special tokens, user-defined ones (type 4) whose spelling is in the vocabulary added
    tokens: both match whole in the text. BOS is added unless ``tokenizer.ggml.add_bos_token`` is false (absent:
    added, as llama.cpp and transformers do for a SentencePiece vocabulary); EOS when ``add_eos_token`` is true.

    Returns:
        ``(tokenizer, tokens, token_types)``: the ``tokenizers.Tokenizer`` and the file's vocabulary lists.

    Raises:
        ValueError: ``tokenizer.ggml.model`` is not ``"llama"``, the file has neither merges nor scores, or the
            vocabulary has repeated tokens.
    """
    model = metadata.get("tokenizer.ggml.model")
    if model != "llama":
        raise ValueError(f"tokenizer.ggml.model is {model!r}; this builder reads SentencePiece-style ('llama') files")
    tokens = list(metadata["tokenizer.ggml.tokens"])
    types = [int(t) for t in (metadata.get("tokenizer.ggml.token_type") or [1] * len(tokens))]
    gemma = metadata.get("general.architecture") in _GEMMA
    if gemma:  # a token of two or more real spaces is Gemma's "▁▁..."
        spelled = [_SPACE * len(t) if " " in t and not t.strip() else t for t in tokens]
        scores = {token: -index for index, token in enumerate(spelled)}
    else:
        spelled = tokens
        if "tokenizer.ggml.scores" not in metadata and "tokenizer.ggml.merges" not in metadata:
            raise ValueError("the SentencePiece vocabulary has neither tokenizer.ggml.merges nor "
                             "tokenizer.ggml.scores: its merges cannot be recovered")
        scores = dict(zip(tokens, (float(x) for x in metadata.get("tokenizer.ggml.scores", [])), strict=False))
    if "tokenizer.ggml.merges" in metadata:
        merges = [tuple(merge.split(" ")) for merge in metadata["tokenizer.ggml.merges"]]
    else:
        merges = sentencepiece_merges(spelled, scores)
    vocab = {token: index for index, token in enumerate(spelled)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=True, unk_token="<unk>", dropout=None,
                                     byte_fallback=True))
    decode = [decoders.Replace(_SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    if gemma:
        tokenizer.normalizer = normalizers.Replace(" ", _SPACE)
        tokenizer.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=_SPACE, prepend_scheme="first", split=False)
        decode.append(decoders.Strip(content=" ", left=1, right=0))
    tokenizer.decoder = decoders.Sequence(decode)
    _add_file_tokens(tokenizer, metadata, tokens, types, default_bos=True, vocab=vocab)
    return tokenizer, tokens, types


def _add_file_tokens(tokenizer: Tokenizer, metadata: dict, tokens: list[str], types: list[int], *,
                     default_bos: bool, vocab: dict[str, int] | None = None) -> None:
    """What both builders finish with: control tokens (type 3) as special tokens and user-defined ones (type 4; only
    those spelled in ``vocab`` when given, as transformers' ``add_gguf_special_tokens``) as added tokens, both matched
    whole; the id count checked against the file's; then :func:`_add_bos_eos`. ``ValueError`` on a count mismatch
    (repeated tokens)."""
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t, kind in zip(tokens, types, strict=True) if kind == _CONTROL])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False)
                          for t, kind in zip(tokens, types, strict=True)
                          if kind == _USER_DEFINED and (vocab is None or t in vocab)])
    if tokenizer.get_vocab_size() != len(tokens):
        raise ValueError(f"the tokenizer has {tokenizer.get_vocab_size()} ids, the file lists {len(tokens)} tokens")
    _add_bos_eos(tokenizer, metadata, tokens, default_bos=default_bos)


def _add_bos_eos(tokenizer: Tokenizer, metadata: dict, tokens: list[str], *, default_bos: bool) -> None:
    """Give ``tokenizer`` a post-processor that adds BOS before the text when ``tokenizer.ggml.add_bos_token`` is true
    (``default_bos`` when absent) and EOS after it when ``add_eos_token`` is true (transformers'
    ``update_post_processor``). Raises ``ValueError`` when a flag is set but its token id is missing."""
    add = {"bos": bool(metadata.get("tokenizer.ggml.add_bos_token", default_bos)),
           "eos": bool(metadata.get("tokenizer.ggml.add_eos_token", False))}
    special = {}
    for name, wanted in add.items():
        if wanted:
            index = metadata.get(f"tokenizer.ggml.{name}_token_id")
            if index is None or not 0 <= int(index) < len(tokens):
                raise ValueError(f"tokenizer.ggml.add_{name}_token is true but tokenizer.ggml.{name}_token_id is "
                                 f"{index!r}")
            special[name] = (tokens[int(index)], int(index))
    if not special:
        return
    bos, eos = ([f"{special[n][0]}:0"] if n in special else [] for n in ("bos", "eos"))
    single = " ".join([*bos, "$A:0", *eos])
    tokenizer.post_processor = processors.TemplateProcessing(single=single, special_tokens=list(special.values()))


def read_tokenizer(metadata: dict, max_tokens: int) -> ByteLevelBPE | SentencePieceBPE:
    """The file's tokenizer: :class:`ByteLevelBPE` for ``tokenizer.ggml.model = "gpt2"``, :class:`SentencePieceBPE`
    for ``"llama"``.

    Raises:
        ValueError: another ``tokenizer.ggml.model`` (the message names it and :data:`TOKENIZER_MODELS`), or what
            :func:`build_tokenizer` / :func:`build_sentencepiece` raise.
    """
    model = metadata.get("tokenizer.ggml.model")
    if model == "gpt2":
        return ByteLevelBPE(*build_tokenizer(metadata), max_tokens)
    if model == "llama":
        return SentencePieceBPE(*build_sentencepiece(metadata), max_tokens,
                                prefix_space=metadata.get("general.architecture") not in _GEMMA)
    raise ValueError(f"tokenizer.ggml.model is {model!r}; supported: " + ", ".join(repr(m) for m in TOKENIZER_MODELS)
                     + " (byte-level BPE and SentencePiece-style BPE)")


def check_ids(ids, vocab_size: int, *, allow_empty: bool = False) -> np.ndarray:
    """``ids`` as int64 ``[n]``, checked: a 1-D sequence of integers in ``0 .. vocab_size - 1``.

    Raises:
        ValueError: not 1-D, not integers, empty (unless ``allow_empty``), or an id out of range (the
            message gives the id and its position).
    """
    try:
        arr = np.asarray(ids)
    except (TypeError, ValueError) as error:
        raise ValueError(f"token ids must be a 1-D list of integers: {error}") from None
    if arr.ndim != 1:
        raise ValueError(f"token ids must be a 1-D list of integers, got shape {arr.shape}")
    if arr.size == 0:
        if allow_empty:
            return arr.astype(np.int64)
        raise ValueError("empty prompt: no token ids to run")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"token ids must be integers, got dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= vocab_size)
    if bad.any():
        where = int(np.argmax(bad))
        raise ValueError(f"token id {arr[where]} at position {where} is out of range: "
                         f"the vocabulary has ids 0..{vocab_size - 1}")
    return arr.astype(np.int64)


@dataclass(frozen=True)
class PartialText:
    """A token sequence's text so far: the complete characters, and the bytes of one not finished yet.

    Attributes:
        text: the UTF-8 decoding of every complete character; a byte that can begin no character (or
            a sequence that cannot continue) is shown escaped, ``\\xNN``, never as U+FFFD.
        pending: the last bytes, when they are the start of a character the next tokens may finish
            (at most 3 bytes); ``b""`` when the text ends on a character boundary.
    """

    text: str
    pending: bytes

    @property
    def pending_escaped(self) -> str:
        """``pending`` written as ``\\xf0\\x9f`` (empty when nothing is pending)."""
        return "".join(f"\\x{b:02x}" for b in self.pending)


def complete_text(data: bytes) -> PartialText:
    """Split ``data`` into its decodable text and a trailing unfinished UTF-8 sequence (stdlib ``codecs``).

    ``complete_text("🍕".encode()[:2])`` -> ``PartialText("", b"\\xf0\\x9f")``; invalid bytes in the
    middle are escaped (``errors="backslashreplace"``).
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")
    text = decoder.decode(bytes(data), final=False)
    pending, _ = decoder.getstate()
    return PartialText(text, bytes(pending))


class _GGUFTokenizer:
    """What both tokenizers share: text <-> ids with ``tokenizers``, ids checked, text with pending bytes.

    Args:
        tokenizer: the ``tokenizers.Tokenizer`` (:func:`build_tokenizer` / :func:`build_sentencepiece`).
        tokens, token_types: the vocabulary as the file lists it (``tokenizer.ggml.tokens`` / ``token_type``).
        max_tokens: the longest text :meth:`encode` accepts, in tokens (a BOS token added counts).

    Attributes:
        bos_id: the BOS id :meth:`encode` puts first (the file's ``tokenizer.ggml.add_bos_token``), or ``None``.
    """

    def __init__(self, tokenizer: Tokenizer, tokens: list[str], token_types: list[int], max_tokens: int):
        self._tokenizer, self._tokens, self._token_types = tokenizer, tokens, token_types
        self.max_tokens = max_tokens
        probe = tokenizer.encode("a")  # the post-processor's special tokens, if any, around one character
        self.bos_id = probe.ids[0] if probe.special_tokens_mask[0] else None

    @property
    def vocab_size(self) -> int:
        return len(self._tokens)

    def check_ids(self, ids, *, allow_empty: bool = False) -> np.ndarray:
        """:func:`check_ids` against this vocabulary."""
        return check_ids(ids, self.vocab_size, allow_empty=allow_empty)

    def encode(self, text: str, *, truncate: bool = False) -> list[int]:
        """Token ids of ``text``: BOS first when the file says so (:attr:`bos_id`; SmolLM2's does not), and
        ``<|im_start|>`` and other control tokens written in the text as their single id.

        Args:
            text: the prompt.
            truncate: cut to ``max_tokens`` instead of raising.

        Raises:
            TypeError: ``text`` is not a string.
            ValueError: ``text`` is empty, or longer than ``max_tokens`` tokens (the message says where
                the limit falls in the text).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        if not text:
            raise ValueError("empty prompt: the text has no characters to encode")
        encoding = self._tokenizer.encode(text)
        ids, limit = encoding.ids, self.max_tokens
        if len(ids) > limit:
            if truncate:
                return ids[:limit]
            cut = encoding.offsets[limit - 1][1]
            raise ValueError(
                f"the text is {len(ids)} tokens, more than the {limit} this model accepts (MAX_TOKENS: the "
                f"attention maps grow with the square of the length); it would be cut at character {cut} of "
                f"{len(text)}, after {text[max(0, cut - 40):cut]!r}"
            )
        return ids

    def count(self, text: str) -> int:
        """How many tokens ``text`` has, as :meth:`encode` gives them (a BOS token counts) but with no limit
        (:meth:`encode` refuses more than ``max_tokens``): what a page says when it cuts a long prompt.
        ``count("") == 0``.

        Raises:
            TypeError: ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return len(self._tokenizer.encode(text).ids) if text else 0

    def decode(self, ids, *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` as ``tokenizers`` (and transformers) decode it: the tokens' bytes joined, then
        UTF-8 decoded, an unfinished character as U+FFFD (see :meth:`decode_partial` for text shown while
        generating). ``ValueError`` for ids out of range."""
        return self._tokenizer.decode(self.check_ids(ids, allow_empty=True).tolist(),
                                      skip_special_tokens=skip_special_tokens)

    def decode_partial(self, ids) -> PartialText:
        """The text of ``ids`` with an unfinished last character kept as pending bytes (:func:`complete_text`).

        What a generation has written so far: ``decode_partial(ids).text`` never holds a U+FFFD the model
        did not write (a character split over tokens is shown once its last byte arrives).
        """
        return complete_text(b"".join(self.token_bytes(ids)))

    def token_bytes(self, ids) -> list[bytes]:
        """Each token's exact bytes (a special token: its text in UTF-8)."""
        raise NotImplementedError

    def token_strings(self, ids) -> list[str]:
        """A readable piece per token: its bytes decoded as UTF-8, the leading space kept as ``" "``.

        A token that holds only part of a multi-byte character (a character can span two or more
        tokens: 日 two, 🍕 three) shows its bytes escaped, e.g. ``"\\xf0\\x9f"``. Special tokens show their
        text (``"<|im_end|>"``). How to draw spaces and newlines is the caller's choice.
        """
        return [piece.decode("utf-8", errors="backslashreplace") for piece in self.token_bytes(ids)]


class ByteLevelBPE(_GGUFTokenizer):
    """The byte-level BPE tokenizer (``tokenizer.ggml.model = "gpt2"``: SmolLM2, Qwen, GPT-2): text <-> ids, each
    token's bytes and a readable piece; arguments as :class:`_GGUFTokenizer`."""

    def __init__(self, tokenizer: Tokenizer, tokens: list[str], token_types: list[int], max_tokens: int):
        super().__init__(tokenizer, tokens, token_types, max_tokens)
        self._inverse = {c: b for b, c in bytes_to_unicode().items()}

    def token_bytes(self, ids) -> list[bytes]:
        """Each token's exact bytes (a special token: its text in UTF-8)."""
        out = []
        for i in self.check_ids(ids, allow_empty=True).tolist():
            token = self._tokens[i]
            special = self._token_types[i] in (_CONTROL, _USER_DEFINED)
            out.append(token.encode() if special or not set(token) <= self._inverse.keys()
                       else bytes(self._inverse[c] for c in token))
        return out


class SentencePieceBPE(_GGUFTokenizer):
    """The SentencePiece-style BPE tokenizer with byte fallback (``tokenizer.ggml.model = "llama"``: Gemma): text <->
    ids, each token's bytes and a readable piece. A piece's ``▁`` is a space; a byte token ``<0xNN>`` is the byte
    ``0xNN`` (a character the vocabulary lacks is spelled by its UTF-8 bytes).

    Args:
        tokenizer, tokens, token_types, max_tokens: as :class:`_GGUFTokenizer`.
        prefix_space: the tokenizer puts a ``▁`` before the text and decoding drops it (not Gemma's:
            :func:`build_sentencepiece`); :meth:`decode_partial` drops it too.
    """

    def __init__(self, tokenizer: Tokenizer, tokens: list[str], token_types: list[int], max_tokens: int, *,
                 prefix_space: bool = False):
        super().__init__(tokenizer, tokens, token_types, max_tokens)
        self.prefix_space = prefix_space

    def decode_partial(self, ids) -> PartialText:
        """As :meth:`_GGUFTokenizer.decode_partial`; with :attr:`prefix_space`, one leading space is dropped, as
        :meth:`decode` does (its ``Strip`` decoder)."""
        data = b"".join(self.token_bytes(ids))
        return complete_text(data[1:] if self.prefix_space and data.startswith(b" ") else data)

    def token_bytes(self, ids) -> list[bytes]:
        """Each token's exact bytes: a byte token's byte, a piece's text with ``▁`` as a space (a special token: its
        text in UTF-8)."""
        out = []
        for i in self.check_ids(ids, allow_empty=True).tolist():
            token, kind = self._tokens[i], self._token_types[i]
            if kind == _BYTE and len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
                out.append(bytes([int(token[3:5], 16)]))
            elif kind in (_CONTROL, _USER_DEFINED, 2):  # 2: the unknown token
                out.append(token.encode())
            else:
                out.append(token.replace(_SPACE, " ").encode())
        return out
