"""Seeded random histories of one library, replayed against a lexical layout and checked
against the reference BM25 after every step.

A history is what users do to a library over time, in the order they do it:

1. **one document at a time**, the index refreshed after each write (the Python API's
   ``LibraryPipeline.replace_doc_chunks``, a server's upload jobs), with queries between
   writes — new documents, re-ingests (new versions), retirements, RESTRICTED documents;
2. a **save**, then the library reopened over a new database connection (a restarted
   process that loads the saved index), and the **library deleted** and written again;
3. **growth** to the planned size in bulk batches (the CLI's ``ingest``), each followed by a
   burst of single writes; saves, in-process reopens (one on a host without the saved files:
   a rebuild at full size) and **child processes** that open the library from scratch and
   must answer the same, bit for bit;
4. **concurrent writers** (threads, each over its own connection) while the index is
   refreshed and searched;
5. **churn** at full size: batches of re-ingests and retirements only.

After each step the index is refreshed and compared with :class:`IncrementalReference`
(the arithmetic of :func:`~ragspine.retrieval.lexical.bm25.bm25_scores` over the store's
active, non-RESTRICTED chunks, read from the store): the number of chunks, then for a few
queries the whole ranking — chunk ids in order, every score **bit for bit**, every version —
at ``top_k`` 10 and unbounded, with and without a metadata filter. The reference itself is
checked against the store and against ``bm25_scores`` on the live library.

Text is synthetic: ASCII words and CJK words drawn from Zipf distributions, so common tokens
have long posting lists and new tokens keep appearing as the library grows (the case the
reported bug needed: tokens first seen between two merges).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragspine.retrieval.chunking.chunk_store import DocumentChunks, PersistentStore
from ragspine.retrieval.chunking.chunking import Chunk, chunk_document
from ragspine.retrieval.filtering.filters import FilterCondition, MetadataFilter
from ragspine.retrieval.lexical.tokenizer import tokenize
from ragspine.testing.bm25_reference import IncrementalReference, Ranking
from ragspine.testing.lexical_layouts import LexicalLayout, close_index

_SYLLABLES = ["ka", "to", "ri", "mo", "sa", "ne", "lu", "pi", "da", "ve", "go", "shi", "ra", "en", "or", "ul"]  # prefix-free
_TOPICS = ["sales", "supply", "legal", "hr", "product"]
_ODD_PREFIXES = ["Zeta-", "a-", "éclair-", "文書-", "Ω-"]  # ids whose code-point order differs from a locale's


@dataclass(frozen=True)
class HistoryPlan:
    """How long and how large a history is (see the module docstring)."""

    seed: int = 0
    chunks: int = 3_000  # the library grows to about this many active, indexed chunks
    singles: int = 300  # one-document writes, each followed by a refresh
    batch_docs: int = 150  # documents per bulk batch
    queries: int = 4  # queries compared per check
    restarts: int = 2  # child processes that reopen the library
    writers: int = 3  # concurrent writer threads
    restricted: float = 0.06  # share of documents written RESTRICTED


@dataclass
class HistoryReport:
    """What a history did: its steps, the rankings compared, the largest library."""

    steps: list[str] = field(default_factory=list)
    compared: int = 0
    peak_chunks: int = 0
    children: list[dict[str, Any]] = field(default_factory=list)


class SyntheticText:
    """Paragraphs of Zipf-distributed ASCII and CJK words (seeded)."""

    def __init__(self, seed: int, ascii_words: int = 60_000, cjk_words: int = 8_000) -> None:
        self.gen = np.random.default_rng(seed)
        self.words = [self._word(i) for i in range(ascii_words)]
        self.cjk = [chr(0x4E00 + (j * 7919) % 2500) + chr(0x4E00 + (j * 104729 + 13) % 2500) for j in range(cjk_words)]
        self.cdf = self._zipf(ascii_words, 1.05)
        self.cjk_cdf = self._zipf(cjk_words, 1.1)

    @staticmethod
    def _word(i: int) -> str:
        i += len(_SYLLABLES)
        out = ""
        while i:
            out += _SYLLABLES[i % len(_SYLLABLES)]
            i //= len(_SYLLABLES)
        return out

    @staticmethod
    def _zipf(n: int, s: float) -> np.ndarray:
        w = 1.0 / np.arange(1, n + 1) ** s
        cdf: np.ndarray = np.cumsum(w) / w.sum()
        return cdf

    def ascii(self, n: int) -> list[str]:
        return [self.words[i] for i in np.searchsorted(self.cdf, self.gen.random(n))]

    def cjk_words(self, n: int) -> list[str]:
        return [self.cjk[i] for i in np.searchsorted(self.cjk_cdf, self.gen.random(n))]

    def paragraph(self, rng: random.Random) -> str:
        if rng.random() < 0.15:  # Chinese/Japanese: words run together, the tokenizer's uni+bigrams
            return "".join(self.cjk_words(rng.randint(4, 30))) + "。"
        return " ".join(self.ascii(rng.randint(6, 36))) + "."


class HistoryRun:
    """One history against one layout (use :func:`run_history`)."""

    def __init__(self, layout: LexicalLayout, plan: HistoryPlan, library_id: str = "history",
                 log: Callable[[str], None] | None = None) -> None:
        self.layout, self.plan, self.library_id = layout, plan, library_id
        self.rng = random.Random(plan.seed)
        self.text = SyntheticText(plan.seed)
        self._log = log
        self.store, self._close = layout.open_store(library_id)
        self.index = layout.open_index(self.store)
        self.ref = IncrementalReference()
        self.ref.reload(self.store)
        self.docs: list[str] = []
        self._known: set[str] = set()
        self._next = 0
        self.report = HistoryReport()

    # -- writing ---------------------------------------------------------------------------
    def _new_id(self) -> str:
        self._next += 1
        prefix = self.rng.choice(_ODD_PREFIXES) if self.rng.random() < 0.03 else "d"
        doc_id = f"{prefix}{self._next:07d}"
        self.docs.append(doc_id)
        self._known.add(doc_id)
        return doc_id

    def make_doc(self, doc_id: str) -> list[Chunk]:
        rng = self.rng
        text = "\n\n".join(self.text.paragraph(rng) for _ in range(rng.randint(1, 5)))
        metadata = {"topic": rng.choice(_TOPICS), "year": rng.randint(2018, 2025), "draft": rng.random() < 0.3}
        roll = rng.random()
        sensitivity = "RESTRICTED" if roll < self.plan.restricted else "restricted" if roll < self.plan.restricted + 0.01 else "INTERNAL"
        return chunk_document(text, doc_id, title=doc_id, metadata=metadata, sensitivity=sensitivity, max_chars=240, overlap_chars=40)

    def _pick(self, new_share: float, retire_share: float, taken: set[str]) -> tuple[str, bool]:
        """A document to write: new, or an existing one (re-ingested or retired)."""
        roll = self.rng.random()
        if roll < new_share or len(self.docs) <= len(taken):
            return self._new_id(), False
        doc_id = self.rng.choice(self.docs)
        while doc_id in taken:
            doc_id = self.rng.choice(self.docs)
        return doc_id, roll > 1.0 - retire_share

    def write_one(self) -> None:
        """One replace, then a refresh — the path of a library written document by document."""
        doc_id, retire = self._pick(0.7, 0.08, set())
        self.store.replace_doc_chunks(doc_id, [] if retire else self.make_doc(doc_id))
        self.ref.update(self.store, [doc_id])
        self.index.refresh()

    def write_batch(self, n: int, new_share: float = 0.85, retire_share: float = 0.05) -> None:
        """One bulk batch of ``n`` documents (one transaction), as an ingest writes them."""
        taken: set[str] = set()
        docs = []
        for _ in range(n):
            doc_id, retire = self._pick(new_share, retire_share, taken)
            taken.add(doc_id)
            docs.append(DocumentChunks(doc_id, [] if retire else self.make_doc(doc_id)))
        self.store.replace_many(docs)
        self.ref.update(self.store, [d.doc_id for d in docs])

    # -- checking --------------------------------------------------------------------------
    def queries(self, n: int) -> list[list[str]]:
        rng, out = self.rng, list[list[str]]()
        while len(out) < n:
            kind = rng.randrange(6)
            if kind == 0 and self.docs:  # words of a recent document: tokens first seen lately
                doc_id = self.docs[-1 - int(rng.random() ** 3 * len(self.docs))]
                cids = self.ref.by_doc.get(doc_id)
                text = " ".join(rng.sample(list(self.ref.counts[cids[0]]), min(4, len(self.ref.counts[cids[0]])))) if cids else ""
            elif kind == 1:
                text = "".join(self.text.cjk_words(rng.randint(1, 3)))
            elif kind == 2:
                word = self.text.ascii(1)[0]
                text = f"{word} {self.text.ascii(1)[0]} {word}"  # a repeated token counts twice
            elif kind == 3:
                text = "zzqxunknown " + " ".join(self.text.ascii(2))
            else:
                text = " ".join(self.text.ascii(rng.randint(1, 5)))
            tokens = tokenize(text)
            if tokens:
                out.append(tokens)
        return out

    def _filter(self) -> MetadataFilter:
        rng = self.rng
        return rng.choice([
            MetadataFilter((FilterCondition("topic", "eq", rng.choice(_TOPICS)),)),
            MetadataFilter((FilterCondition("year", "between", [2019, 2022]), FilterCondition("draft", "eq", False))),
            MetadataFilter((FilterCondition("topic", "nin", ["legal", "hr"]),)),
        ])

    def compare(self, label: str, got: Sequence[tuple[str, float, int]], want: Ranking, query: Sequence[str], how: str) -> None:
        self.report.compared += 1
        if list(got) == want:
            return
        at = next((i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), min(len(got), len(want)))
        raise AssertionError(
            f"{self.layout.name}, seed {self.plan.seed}, step {len(self.report.steps)} ({label}), {len(self.ref)} chunks,"
            f" query {list(query)!r} {how}: {len(got)} hits, the reference {len(want)}; first difference at #{at}:"
            f" index {got[at] if at < len(got) else None!r}, reference {want[at] if at < len(want) else None!r}"
        )

    def check(self, label: str) -> None:
        """Refresh, then compare the index with the reference (module docstring)."""
        self.report.steps.append(label)
        self.report.peak_chunks = max(self.report.peak_chunks, len(self.ref))
        if self._log:
            self._log(f"{self.layout.name}: {label} ({len(self.ref)} chunks)")
        self.index.refresh()
        if len(self.index) != len(self.ref):
            raise AssertionError(f"{self.layout.name}, {label}: the index holds {len(self.index)} chunks, the store {len(self.ref)}")
        for i, query in enumerate(self.queries(self.plan.queries)):
            top_k = None if i == 0 else (10, 10, 1, 100)[i % 4]
            got = [(h.chunk_id, h.score, h.version) for h in self.index.search(query, top_k=top_k)]
            self.compare(label, got, self.ref.ranking(query, None, top_k), query, f"top_k={top_k}")
        where = self._filter()
        query = self.queries(1)[0]
        got = [(h.chunk_id, h.score, h.version) for h in self.index.search(query, metadata_filter=where, top_k=10)]
        self.compare(label, got, self.ref.ranking(query, where, 10), query, f"filter {where!r}")

    # -- restarts, drops, concurrency ------------------------------------------------------
    def save(self) -> None:
        save = getattr(self.index, "save", None)
        if save is not None:
            save()

    def _close_index_and_store(self) -> None:
        close_index(self.index)  # first: a warm index's build reads through the store's pool
        self._close()

    def reopen(self, expect: str | None = None, *, without_files: bool = False) -> None:
        """A new connection and a new index over the same data (a restarted process);
        ``without_files``: on a host without the saved index (a new machine, a cleared cache),
        so the index is rebuilt from the store at the library's full size."""
        self._close_index_and_store()
        if without_files:
            import shutil

            store, close = self.layout.open_store(self.library_id)
            where = store.persist_dir("lexical") if isinstance(store, PersistentStore) else None
            close()
            if where:
                shutil.rmtree(where, ignore_errors=True)
            expect = "built"
        self.store, self._close = self.layout.open_store(self.library_id)
        self.index = self.layout.open_index(self.store)
        self.index.refresh()
        origin = getattr(self.index, "origin", None)
        if expect is not None and self.layout.saves and origin != expect:
            raise AssertionError(f"{self.layout.name}: the reopened index was {origin}, expected {expect}")
        self.check(f"reopened ({origin or 'reads the database'})")

    def restart_child(self, expect_loaded: bool) -> None:
        """Another process opens the library and its index from scratch and must answer the same."""
        queries = self.queries(self.plan.queries)
        out = self.layout.run_child(self.library_id, queries, 10)
        self.report.children.append({"origin": out["origin"], "rejections": out["rejections"], "chunks": len(self.ref)})
        for query, got in zip(queries, out["results"], strict=False):
            self.compare("child process", got, self.ref.ranking(query, None, 10), query, "top_k=10")
        if expect_loaded and self.layout.saves and (out["origin"] != "loaded" or out["rejections"]):
            raise AssertionError(f"{self.layout.name}: the child {out['origin']} its index (rejections {out['rejections']})")
        self.check("after a child process")

    def drop_library(self) -> None:
        self.store.db.delete_library(self.library_id)
        self.ref.clear()
        self.docs.clear()
        self.check("library deleted")

    def concurrent_writers(self) -> None:
        """Writers on their own connections, while this thread refreshes and searches."""
        plans: list[list[DocumentChunks]] = []
        shared = self.rng.sample(self.docs, min(5, len(self.docs)))
        for _ in range(self.plan.writers):  # built here, so the history stays seeded
            mine = [DocumentChunks(d, self.make_doc(d)) for d in [self._new_id() for _ in range(12)] + shared]
            plans.append(mine)
        errors: list[BaseException] = []

        def write(docs: list[DocumentChunks]) -> None:
            try:
                store, close = self.layout.open_store(self.library_id)
                try:
                    for doc in docs[:8]:
                        store.replace_doc_chunks(doc.doc_id, doc.chunks)
                    store.replace_many(docs[8:])
                finally:
                    close()
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(p,)) for p in plans]
        for t in threads:
            t.start()
        probe = self.queries(3)
        while any(t.is_alive() for t in threads):
            self.index.refresh()
            for query in probe:
                self.index.search(query, top_k=10)
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        self.ref.update(self.store, [d.doc_id for p in plans for d in p])
        self.check("after concurrent writers")

    # -- the history -----------------------------------------------------------------------
    def run(self) -> HistoryReport:
        plan = self.plan
        first = plan.singles // 3
        try:
            for i in range(first):
                self.write_one()
                if i % max(1, first // 8) == 0:
                    self.check("one document at a time")
            self.check("one document at a time")
            self.ref.check_against_store(self.store)
            self.ref.check_against_bm25_scores(self.store, self.queries(8))
            self.save()
            self.reopen(expect="loaded")
            self.drop_library()
            for _ in range(min(40, first)):
                self.write_one()
            self.check("written again after the delete")
            singles = plan.singles - first - min(40, first)
            rounds = 0
            while len(self.ref) < plan.chunks:
                before = len(self.ref)
                self.write_batch(plan.batch_docs)
                self.check("after a batch")
                rounds_left = -(-(plan.chunks - len(self.ref)) // max(1, len(self.ref) - before)) + 1
                for _ in range(min(singles, max(1, singles // rounds_left))):  # single writes spread over the growth
                    self.write_one()
                    singles -= 1
                self.check("after single writes")
                rounds += 1
                if rounds % 5 == 1:
                    self.save()
                elif rounds % 5 == 3:
                    self.reopen()  # unsaved changes since the last save: replayed from the change log
            self.reopen(without_files=True)  # rebuilt from the store at full size
            self.concurrent_writers()
            for restart in range(plan.restarts):
                if restart % 2 == 0:
                    self.save()
                self.restart_child(expect_loaded=restart % 2 == 0)
            for _ in range(2):
                self.write_batch(plan.batch_docs, new_share=0.0, retire_share=0.3)
                for _ in range(max(0, min(singles, 10))):
                    self.write_one()
                    singles -= 1
                self.check("churn at full size")
            self.reopen()
            self.ref.check_against_store(self.store)
            self.ref.check_against_bm25_scores(self.store, self.queries(2))
            return self.report
        finally:
            self._close_index_and_store()


def run_history(layout: LexicalLayout, plan: HistoryPlan, *, log: Callable[[str], None] | None = None) -> HistoryReport:
    """Replay the seeded history ``plan`` against ``layout``; raises ``AssertionError`` (naming
    the layout, seed, step and query) at the first answer that differs from the reference."""
    return HistoryRun(layout, plan, log=log).run()


__all__ = ["HistoryPlan", "HistoryReport", "HistoryRun", "SyntheticText", "run_history"]
