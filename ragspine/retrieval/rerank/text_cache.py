"""``TextCache``: a bounded, thread-safe, per-process cache of what a model computed for a text,
keyed by the text's content hash (BLAKE2b-128), least recently stored evicted first — with an
optional persistent layer behind it.

The model rerankers keep a candidate's token vectors or term weights here, so a candidate seen
by an earlier query is not encoded again (a changed text is another key). With a ``store`` (an
:class:`~ragspine.retrieval.vector.embedding_cache.EmbeddingCache`: the stack's SQLite table,
Redis or memory) and a :class:`Codec`, what is computed is also written there under
``<namespace>:<content hash>`` — so values computed at index time (:meth:`TextCache.fill`)
serve every later query and every process, and a query computes only the texts found in
neither layer. A store that fails reports misses (the cache's contract): the value is computed.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Generic, Sequence, TypeVar

import numpy as np

if TYPE_CHECKING:
    from ragspine.retrieval.vector.embedding_cache import EmbeddingCache

V = TypeVar("V")


@dataclass(frozen=True)
class Codec(Generic[V]):
    """How a value is kept in an :class:`EmbeddingCache` (a float32 array) and read back."""

    encode: Callable[[V], np.ndarray]
    decode: Callable[[np.ndarray], V]


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def model_fingerprint(directory: Path, files: Sequence[str], *parts: object) -> str:
    """Names a model's output in a store (a :class:`TextCache` namespace): a hash of ``files`` of
    ``directory`` (its weights, config, tokenizer) and ``parts`` (e.g. its token cut)."""
    digest = hashlib.blake2b(digest_size=8)
    for name in files:
        with open(directory / name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    for part in parts:
        digest.update(str(part).encode())
    return digest.hexdigest()


class TextCache(Generic[V]):
    def __init__(
        self, size: int, *, store: EmbeddingCache | None = None, namespace: str = "", codec: Codec[V] | None = None,
        weight: Callable[[V], int] | None = None,
    ) -> None:
        """``size``: how many values this process keeps — or, with ``weight`` (e.g. an array's
        ``nbytes``), the budget their weights share."""
        if size < 0:
            raise ValueError(f"cache size must be >= 0, got {size}")
        if store is not None and (codec is None or not namespace):
            raise ValueError("a TextCache with a store needs a namespace and a codec")
        self.size = size
        self.weight = weight
        self._held = 0  # the kept values' total weight (their count without ``weight``)
        self.store = store
        self.namespace = namespace
        self.codec = codec
        self._items: OrderedDict[bytes, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def store_key(self, text: str) -> str:
        """The key of ``text``'s value in the persistent store."""
        return f"{self.namespace}:{text_digest(text).hex()}"

    def get_many(self, texts: Sequence[str], compute: Callable[[list[str]], Sequence[V]]) -> list[V]:
        """The value of each text: from this process's layer, else the store, else one
        ``compute`` call over the distinct texts found in neither (in first-seen order); what
        was read or computed is kept in this process, what was computed also in the store."""
        keys = [text_digest(t) for t in texts]
        with self._lock:
            found = {k: self._items[k] for k in keys if k in self._items}
        todo = list(dict.fromkeys(k for k in keys if k not in found))
        if todo:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            stored = self._read_store([texts[first[k]] for k in todo])
            found.update((k, v) for k, v in zip(todo, stored, strict=False) if v is not None)
            missing = [k for k, v in zip(todo, stored, strict=False) if v is None]
            if missing:
                computed = list(compute([texts[first[k]] for k in missing]))
                found.update(zip(missing, computed, strict=False))
                self._write_store({texts[first[k]]: v for k, v in zip(missing, computed, strict=False)})
            with self._lock:
                for k in todo:
                    if k not in self._items:
                        self._items[k] = found[k]
                        self._held += self._weigh(found[k])
                while self._held > self.size and self._items:
                    self._held -= self._weigh(self._items.popitem(last=False)[1])
        return [found[k] for k in keys]

    def fill(self, texts: Sequence[str], compute: Callable[[list[str]], Sequence[V]]) -> int:
        """Index time: compute and store the values of the distinct ``texts`` the store lacks
        (nothing is kept in this process's layer); returns how many were computed. Without a
        store there is nowhere to keep them: nothing is computed."""
        if self.store is None:
            return 0
        distinct = list(dict.fromkeys(texts))
        have = self._read_store(distinct)
        missing = [t for t, v in zip(distinct, have, strict=False) if v is None]
        if missing:
            self._write_store(dict(zip(missing, compute(missing), strict=False)))
        return len(missing)

    def forget(self, texts: Sequence[str]) -> None:
        """Drop ``texts``' values from both layers (a deleted library's derived data)."""
        keys = {text_digest(t) for t in texts}
        with self._lock:
            for k in keys:
                if k in self._items:
                    self._held -= self._weigh(self._items.pop(k))
        from ragspine.retrieval.vector.embedding_cache import DeletableCache

        if isinstance(self.store, DeletableCache) and texts:
            self.store.delete_many(list(dict.fromkeys(self.store_key(t) for t in texts)))

    def _weigh(self, value: V) -> int:
        return 1 if self.weight is None else int(self.weight(value))

    def _read_store(self, texts: Sequence[str]) -> list[V | None]:
        if self.store is None or self.codec is None or not texts:
            return [None] * len(texts)
        decode = self.codec.decode
        return [None if raw is None else decode(raw) for raw in self.store.get_many([self.store_key(t) for t in texts])]

    def _write_store(self, values: dict[str, V]) -> None:
        if self.store is not None and self.codec is not None and values:
            encode = self.codec.encode
            self.store.set_many({self.store_key(t): encode(v) for t, v in values.items()})
