"""``WarmingLexicalIndex``: the in-process index, warm from the first query.

On PostgreSQL the fastest layout is the in-process index following the library's change log
(``InMemoryLexicalIndex``), but a host must first have it: a host that saved it before maps
its files (checked against the store, ``verify.py``) in a second or two at a million chunks,
while a new host — a new replica, a cleared cache — re-tokenizes the library (minutes at a
million chunks). This layout (``RAGSPINE_LEXICAL_INDEX=warm``, what ``auto`` picks on
PostgreSQL when ``RAGSPINE_LEXICAL_DIR`` is writable) never makes a query wait for that:

* with saved files, the first ``refresh()`` loads them (synchronously: bounded by the load);
* without, it starts building the in-process index in a background thread and, until it is
  ready, answers from the *fallback* — PostgreSQL's own postings, which every replace keeps
  in its transaction (``RAGSPINE_PG_POSTINGS=auto``), so they are complete and current;
* when the build is done, the next call switches to the in-process index, after one
  ``refresh()`` so that it has caught up with every write the fallback already showed: a
  reader never sees the library go back in time.

Both answer the reference's rankings to the bit, so the switch changes how fast a query is,
never what it returns. A library whose postings are incomplete (written with
``RAGSPINE_PG_POSTINGS=off``) cannot be answered by the fallback: its first ``refresh()``
builds the in-process index in the caller's thread, as ``memory`` does. A background build
that fails is logged and tried again at a later refresh (at most once a minute); the fallback
answers meanwhile. :meth:`~WarmingLexicalIndex.close` stops a build under way (at its next batch)
and waits for it, so the store's database can be closed after it: the build reads through the
database's connection pool.

Document ACLs: until the switch, a principal's view is the fallback's (PostgreSQL computes
BM25's statistics over the rows it may read, ``postgres/lexical.py``), after it the in-process
index's; each view goes back to the index that made it, so no search mixes the two.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragspine.errors import ConfigError
from ragspine.retrieval.filtering.filters import MetadataFilter
from ragspine.retrieval.lexical.base import AclViews, LexicalHit, LexicalIndex
from ragspine.retrieval.lexical.index import AclSnapshot, BuildStopped, InMemoryLexicalIndex, RowView
from ragspine.security.principals import Viewer

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.retrieval.chunking.chunk_store import ChunkStore
    from ragspine.stores.postgres.lexical import PgView, PostgresLexicalIndex

log = logging.getLogger(__name__)

#: Seconds between attempts at a background build that failed.
RETRY_S = 60.0


class WarmingLexicalIndex:
    """The in-process ``follower``, answered for by ``fallback`` until it is ready (module docstring)."""

    def __init__(self, follower: InMemoryLexicalIndex, fallback: LexicalIndex, *, background: bool = True) -> None:
        self.follower = follower
        self.fallback = fallback
        self.background = background
        self._lock = threading.Lock()
        self._ready = threading.Event()  # the follower is built or loaded
        self._switched = False  # ... and has caught up once since (then every call is its own)
        self._thread: threading.Thread | None = None
        self._failed_at: float | None = None
        self._closed = False
        #: why the follower is not serving yet, or ``None`` once it is
        self.state = "cold"

    @classmethod
    def from_config(cls, store: ChunkStore, settings: Settings | None = None) -> WarmingLexicalIndex:
        """``RAGSPINE_LEXICAL_INDEX=warm`` (the registry's factory): a PostgreSQL chunk store and
        a writable ``RAGSPINE_LEXICAL_DIR``."""
        from ragspine.stores.postgres.chunk_store import PostgresChunkStore
        from ragspine.stores.postgres.lexical import PostgresLexicalIndex

        if not isinstance(store, PostgresChunkStore):
            raise ConfigError("RAGSPINE_LEXICAL_INDEX=warm needs a PostgreSQL chunk store (RAGSPINE_CHUNK_STORE=postgresql://...)")
        if store.persist_dir("lexical") is None:
            raise ConfigError(
                "RAGSPINE_LEXICAL_INDEX=warm keeps the in-process index's files under RAGSPINE_LEXICAL_DIR, which is none:"
                " set it to a writable directory, or use RAGSPINE_LEXICAL_INDEX=postgres"
            )
        follower = InMemoryLexicalIndex(store, kernel=settings.lexical_kernel if settings is not None else "auto")
        return cls(follower, PostgresLexicalIndex(store))

    def __repr__(self) -> str:
        return f"WarmingLexicalIndex({self.follower.store!r}, {self.state})"

    # -- warming -----------------------------------------------------------------------------
    def refresh(self) -> None:
        """Catch up: the in-process index once it serves; until then the fallback, after
        loading the saved files or starting the background build (module docstring)."""
        if self._ready.is_set():
            self._switch()
            return
        with self._lock:
            if not self._ready.is_set() and self._thread is None:
                self._start()
        if self._ready.is_set():
            self._switch()
            return
        try:
            self.fallback.refresh()
        except ConfigError as exc:  # the fallback cannot answer this library: wait for the follower
            log.warning("%s: %s; building the in-process lexical index before answering", self.follower.store, exc)
            self._join()
            self._switch()

    def _start(self) -> None:
        """Load the saved files now, or start the background build (called under the lock)."""
        if self._closed or (self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_S):
            return
        if not self.background or self.follower.has_saved_files():
            self.state = "loading"
            self._build()
            return
        self.state = "building in the background (PostgreSQL's postings answer meanwhile)"
        self._thread = threading.Thread(target=self._build, name="ragspine-lexical-warm", daemon=True)
        self._thread.start()

    def _build(self) -> None:
        try:
            self.follower.refresh()
        except BuildStopped:  # close(): nothing to log or retry
            self.state = "closed"
            return
        except Exception as exc:  # logged; the fallback answers and a later refresh tries again
            log.warning("%s: building the in-process lexical index failed (PostgreSQL's postings answer): %s",
                        self.follower.store, exc)
            self._failed_at = time.monotonic()
            self.state = f"failed, retried at a later refresh: {exc}"
            self._thread = None
            return
        self.state = "ready"
        self._ready.set()

    def _join(self) -> None:
        thread = self._thread
        if thread is not None:
            thread.join()
        if not self._ready.is_set():
            self._build()  # no thread (failed, or never started): in this one
        if not self._ready.is_set():
            raise ConfigError(f"{self.follower.store}: the in-process lexical index could not be built: {self.state}")

    def close(self) -> None:
        """Stop the background build, if one runs, at its next batch and wait for it: after
        this, nothing of this index reads the store unless called (closing the store's database
        is then safe). No build starts after; the fallback answers what was not built."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None and thread.is_alive():
            self.follower.stop()
            thread.join()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the in-process index serves (``False`` on timeout)."""
        return self._ready.wait(timeout)

    def _switch(self) -> None:
        """Hand over to the follower, after it caught up with the store (once), then refresh it."""
        self.follower.refresh()
        self._switched = True

    @property
    def serving(self) -> LexicalIndex:
        """The index answering now: the in-process one once it has caught up, else the fallback."""
        return self.follower if self._switched else self.fallback

    # -- document ACLs (``AclViews``) ---------------------------------------------------------
    def view(self, viewer: Viewer | None, snapshot: AclSnapshot | None = None) -> RowView | PgView | None:
        """The serving index's view (``AclViews``): PostgreSQL's postings' while the in-process
        index builds (statistics over the viewer's rows, computed in SQL), the in-process
        index's once it serves. ``search`` and ``candidates`` hand a view to the index that
        made it, so a search that spans the switch answers from one of them."""
        if viewer is None or viewer.everything:
            return None
        if self._ready.is_set() and not self._switched:
            self._switch()
        if not self._switched:
            return self.fallback_views.view(viewer, snapshot)
        self.follower.refresh()
        return self.follower.view(viewer, snapshot)

    def acl_snapshot(self) -> AclSnapshot:
        return self.follower.acl_snapshot() if self._switched else self.fallback_views.acl_snapshot()

    @property
    def fallback_views(self) -> PostgresLexicalIndex:
        """The fallback as an ``AclViews`` index (PostgreSQL's postings)."""
        fallback = self.fallback
        if not isinstance(fallback, AclViews):
            raise ConfigError(f"the warm layout's fallback {type(fallback).__name__} cannot enforce document ACLs")
        return fallback  # type: ignore[return-value]

    def _maker(self, view: RowView | PgView) -> Any:
        """The index that made ``view``: the in-process index's are :class:`RowView`."""
        return self.follower if isinstance(view, RowView) else self.fallback

    # -- the LexicalIndex role -------------------------------------------------------------
    def search(
        self, query_tokens: Sequence[str], *, metadata_filter: MetadataFilter | None = None, top_k: int | None = None,
        view: RowView | PgView | None = None,
    ) -> list[LexicalHit]:
        if self._ready.is_set() and not self._switched:
            self._switch()
        if view is not None:
            hits: list[LexicalHit] = self._maker(view).search(query_tokens, metadata_filter=metadata_filter, top_k=top_k, view=view)
            return hits
        return self.serving.search(query_tokens, metadata_filter=metadata_filter, top_k=top_k)

    def candidates(self, metadata_filter: MetadataFilter | None = None, view: RowView | PgView | None = None) -> list[tuple[str, int]]:
        if view is not None:
            found: list[tuple[str, int]] = self._maker(view).candidates(metadata_filter, view)
            return found
        return self.serving.candidates(metadata_filter)

    def __len__(self) -> int:
        return len(self.serving)

    @property
    def seq(self) -> int | None:
        return getattr(self.serving, "seq", None)

    def version_of(self, chunk_id: str) -> int | None:
        return self.versions([chunk_id]).get(chunk_id)

    def versions(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        serving: Any = self.serving
        found: dict[str, int] = serving.versions(chunk_ids)
        return found

    @property
    def resident_rows(self) -> int:
        """Rows the in-process index holds (``ResidentIndex``: what the stack's bound counts)."""
        return self.follower.resident_rows

    def save(self) -> None:
        """Save the in-process index now (once it serves)."""
        if self._switched:
            self.follower.save()


def writable_dir(path: str | None) -> bool:
    """Whether ``path`` is, or could be created as, a directory this process can write (checked
    on the nearest existing ancestor; nothing is created)."""
    if not path:
        return False
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        probe = parent
    return os.path.isdir(probe) and os.access(probe, os.W_OK | os.X_OK)


__all__ = ["WarmingLexicalIndex", "writable_dir"]
