"""``TextCache``: a bounded, thread-safe, per-process cache of what a model computed for a text,
keyed by the text's content hash (BLAKE2b-128), least recently stored evicted first.

The model rerankers keep a candidate's token vectors or term weights here, so a candidate seen
by an earlier query is not encoded again (a changed text is another key).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Callable, Generic, Sequence, TypeVar

V = TypeVar("V")


class TextCache(Generic[V]):
    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"cache size must be >= 0, got {size}")
        self.size = size
        self._items: OrderedDict[bytes, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, texts: Sequence[str], compute: Callable[[list[str]], Sequence[V]]) -> list[V]:
        """The value of each text: cached ones as stored, the others from one ``compute`` call
        over the distinct missing texts (in first-seen order), then stored."""
        keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts]
        with self._lock:
            found = {k: self._items[k] for k in keys if k in self._items}
        todo = list(dict.fromkeys(k for k in keys if k not in found))
        if todo:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            found.update(zip(todo, compute([texts[first[k]] for k in todo])))
            with self._lock:
                for k in todo:
                    self._items[k] = found[k]
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return [found[k] for k in keys]
