"""``ChunkStoreConformance``: the ChunkStore contract, one mixin per capability.

Fixture needed: ``chunk_store_factory`` — ``factory(library_id) -> ChunkStore``; every store a
factory returns lives in one fresh namespace (so two libraries share tables but not rows).
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable, Protocol

import pytest

from ragspine.errors import BackendError, IngestError, RagspineError
from ragspine.retrieval.chunking.chunk_store import (
    BulkWrites,
    ChunkStore,
    DocumentAcls,
    DocumentChunks,
    Fingerprints,
    FollowableStore,
    fingerprint,
)
from ragspine.retrieval.chunking.chunking import Chunk, chunk_id_for, make_locator
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY
from ragspine.retrieval.snippet import Snippet


class FullChunkStore(FollowableStore, BulkWrites, Fingerprints, DocumentAcls, Protocol):
    """A chunk store with every capability the bulk and change-log packs test."""


Factory = Callable[[str], FullChunkStore]


def doc(doc_id: str, *texts: str, **fields: Any) -> list[Chunk]:
    """One document's chunks ``doc_id#0, doc_id#1, ...`` of ``texts``."""
    return [
        Chunk(chunk_id=chunk_id_for(doc_id, i), doc_id=doc_id, text=t, ordinal=i, **fields)
        for i, t in enumerate(texts)
    ]


def active(store: ChunkStore, doc_id: str | None = None) -> list[tuple[str, str, int]]:
    return [(c.chunk_id, c.text, c.version) for c in store.iter_chunks(doc_id=doc_id)]


class ChunkStoreVersioningTests:
    def test_replace_writes_a_new_version_and_retires_the_old(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-v")
        store.init_schema()
        store.init_schema()  # idempotent
        assert store.replace_doc_chunks("d", doc("d", "one", "two", "three")) == 3
        assert store.replace_doc_chunks("d", doc("d", "uno", "dos"), valid_as_of="2024-01-01") == 2
        assert active(store, "d") == [("d#0", "uno", 2), ("d#1", "dos", 2)]
        every = store.iter_chunks(doc_id="d", include_inactive=True)
        assert sorted((c.chunk_id, c.version, c.active) for c in every) == [
            ("d#0", 1, False), ("d#0", 2, True), ("d#1", 1, False), ("d#1", 2, True), ("d#2", 1, False)
        ]
        assert {c.valid_as_of for c in store.iter_chunks(doc_id="d")} == {"2024-01-01"}
        assert store.count() == 2 and store.count(include_inactive=True) == 5

    def test_reingest_is_idempotent_and_empty_list_retires(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-v")
        store.replace_doc_chunks("d", doc("d", "a", "b"))
        store.replace_doc_chunks("d", doc("d", "a", "b"))
        assert [(cid, text) for cid, text, _ in active(store, "d")] == [("d#0", "a"), ("d#1", "b")]
        assert store.replace_doc_chunks("d", []) == 0
        assert active(store, "d") == [] and store.doc_ids() == []
        store.replace_doc_chunks("d", doc("d", "back"))
        assert [t for _, t, _ in active(store, "d")] == ["back"]
        versions = [c.version for c in store.iter_chunks(doc_id="d", include_inactive=True)]
        assert max(versions) == 4  # two replaces, a retirement (it counts), the return

    def test_stored_chunk_round_trips_every_field(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-v")
        meta: dict[str, Any] = {"topic": "results", "year": 2024, "ratio": 0.25, "final": True, "note": None, "名前": "值 'q'"}
        chunk = Chunk(
            chunk_id="d#0", doc_id="d", text="text ü 中文", title="T", source_locator="d#char=0,9",
            ordinal=0, char_start=0, char_end=9, metadata=meta, sensitivity="RESTRICTED",
            parent_id="p", heading="H", window_text="window", parent_locator="d#char=0,20",
            boxes='[[2,72.5,700.25,540,712.1],[3,72,650,301.75,662.5,1]]',
        )
        store.replace_doc_chunks("d", [chunk])
        (got,) = store.get_chunks(["d#0"])
        for name in ("chunk_id", "doc_id", "text", "title", "source_locator", "ordinal", "char_start", "char_end",
                     "sensitivity", "parent_id", "heading", "window_text", "parent_locator", "boxes"):
            assert getattr(got, name) == getattr(chunk, name), name
        (streamed,) = [c for c in store.iter_chunks(doc_id="d")]
        assert streamed.boxes == chunk.boxes
        assert dict(got.metadata) == meta
        assert [type(got.metadata[k]) for k in ("year", "ratio", "final")] == [int, float, bool]
        assert got.active and got.version == 1 and got.ingested_at


class ChunkStorePrefilterTests:
    def test_iter_chunks_selects_by_document_and_activity(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-f")
        store.replace_doc_chunks("a", doc("a", "x", metadata={"entity": "ACME", "period": "2024-Q3", "language": "en"}))
        store.replace_doc_chunks("b", doc("b", "y", metadata={"entity": "ACME", "period": "2024-Q2"}))
        store.replace_doc_chunks("c", doc("c", "z", metadata={"entity": "OTHER", "topic": "t", "geography": "EU"}))
        store.replace_doc_chunks("a", doc("a", "x again"))
        assert [c.doc_id for c in store.iter_chunks()] == ["a", "b", "c"]
        assert [c.doc_id for c in store.iter_chunks(doc_id="b")] == ["b"]
        assert [(c.doc_id, c.version) for c in store.iter_chunks(doc_id="a", include_inactive=True)] == [("a", 1), ("a", 2)]
        assert store.iter_chunks(doc_id="nope") == []

    def test_get_chunks_keeps_the_order_asked_and_skips_inactive(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-f")
        store.replace_doc_chunks("a", doc("a", "a0", "a1"))
        store.replace_doc_chunks("b", doc("b", "b0"))
        store.replace_doc_chunks("a", doc("a", "a0 new"))
        got = store.get_chunks(["b#0", "a#1", "nope", "a#0"])
        assert [(c.chunk_id, c.text) for c in got] == [("b#0", "b0"), ("a#0", "a0 new")]
        assert store.doc_ids() == ["a", "b"]


class ChunkStoreIsolationTests:
    def test_libraries_never_see_each_other(self, chunk_store_factory: Factory) -> None:
        one, two = chunk_store_factory("tenant-1"), chunk_store_factory("tenant-2")
        one.replace_doc_chunks("d", doc("d", "secret of one"))
        two.replace_doc_chunks("d", doc("d", "secret of two"))
        assert active(one) == [("d#0", "secret of one", 1)]
        assert active(two) == [("d#0", "secret of two", 1)]
        two.replace_doc_chunks("d", [])
        assert active(one) == [("d#0", "secret of one", 1)]
        assert [c.text for c in one.get_chunks(["d#0"])] == ["secret of one"]
        assert one.count() == 1 and two.count() == 0
        assert all(c.library_id == "tenant-1" for c in one.iter_chunks(include_inactive=True))

    def test_adversarial_ids_and_values_stay_data(self, chunk_store_factory: Factory) -> None:
        store, other = chunk_store_factory("lib' OR '1'='1"), chunk_store_factory("victim")
        other.replace_doc_chunks("v", doc("v", "victim text"))
        nasty = "x'); DROP TABLE ragspine_chunk; --"
        store.replace_doc_chunks(nasty, doc(nasty, "a" * 20000, metadata={"k'--": "OR 1=1", "🙂": "名前"}))
        (got,) = store.iter_chunks(doc_id=nasty)
        assert len(got.text) == 20000 and got.metadata == {"k'--": "OR 1=1", "🙂": "名前"}
        assert store.iter_chunks(doc_id="' OR 1=1 --") == []
        assert active(other) == [("v#0", "victim text", 1)]


class ChunkStoreChangeLogTests:
    def test_every_replace_appends_one_change(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-c")
        start = store.change_seq()
        assert store.changes_since(start) == (start, [])
        store.replace_doc_chunks("a", doc("a", "x"))
        store.replace_doc_chunks("b", doc("b", "y"))
        store.replace_doc_chunks("a", [])
        seq, docs = store.changes_since(start)
        assert seq == store.change_seq() > start and docs == ["a", "b"]
        assert store.changes_since(seq) == (seq, [])
        other = chunk_store_factory("lib-c2")
        other.replace_doc_chunks("z", doc("z", "q"))
        assert store.changes_since(seq) == (seq, [])


class ChunkStoreActiveVersionsTests:
    def test_active_versions_are_the_active_rows_in_pages(self, chunk_store_factory: Factory) -> None:
        from ragspine.retrieval.chunking.chunk_store import ActiveVersions

        store = chunk_store_factory("lib-av")
        if not isinstance(store, ActiveVersions):
            pytest.skip(f"{type(store).__name__} does not list active versions")
        for i in range(7):
            store.replace_doc_chunks(f"d{i}", [Chunk(chunk_id_for(f"d{i}", j), f"d{i}", f"text {j}", ordinal=j,
                                                     sensitivity="RESTRICTED" if i == 3 else "INTERNAL") for j in range(3)])
        store.replace_doc_chunks("d2", [Chunk(chunk_id_for("d2", 0), "d2", "again")])
        store.replace_doc_chunks("d5", [])
        chunk_store_factory("lib-av-other").replace_doc_chunks("d9", doc("d9", "elsewhere"))
        pages = list(store.active_versions(batch_size=4))
        assert all(len(ids) == len(vs) == len(ls) <= 4 for ids, vs, ls in pages) and len(pages) >= 4
        got = [(c, int(v), s) for ids, vs, ls in pages for c, v, s in zip(ids, vs, ls, strict=True)]
        want = sorted((c.chunk_id, c.version, c.sensitivity) for c in store.iter_chunks())
        assert sorted(got) == want and len(got) == len({c for c, _, _ in got})


class ChunkStoreAtomicityTests:
    def test_a_failed_replace_leaves_the_previous_version_active(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-a")
        store.replace_doc_chunks("d", doc("d", "v1"))
        bad_inputs = [
            doc("other", "wrong doc id"),
            doc("d", "x") + doc("d", "dup"),  # the same chunk id twice
            [Chunk(chunk_id="d#0", doc_id="d", text="x", metadata={"list": [1, 2]})],  # type: ignore[dict-item]
        ]
        for chunks in bad_inputs:
            with pytest.raises(IngestError):
                store.replace_doc_chunks("d", chunks)
            assert active(store, "d") == [("d#0", "v1", 1)]

    def test_concurrent_replaces_of_one_document_serialize(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-a")
        store.replace_doc_chunks("d", doc("d", "start"))
        errors: list[BaseException] = []

        def writer(tag: str) -> None:
            try:
                for i in range(8):
                    store.replace_doc_chunks("d", doc("d", *[f"{tag}{i}-{j}" for j in range(1 + i % 3)]))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(t,)) for t in "xy"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        rows = store.iter_chunks(doc_id="d")
        assert len({c.version for c in rows}) == 1
        every = store.iter_chunks(doc_id="d", include_inactive=True)
        assert max(c.version for c in every) == 17


class ChunkStoreReadOnlyTests:
    def test_execute_read_reads_and_refuses_writes(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-r")
        store.replace_doc_chunks("d", doc("d", "x"))
        assert [tuple(r) for r in store.execute_read("SELECT 1")] == [(1,)]
        with pytest.raises((BackendError, RagspineError)):
            store.execute_read("CREATE TABLE conformance_probe (x INTEGER)")
        store.replace_doc_chunks("d", doc("d", "still writable"))
        assert active(store, "d") == [("d#0", "still writable", 2)]


class ChunkStoreBulkTests:
    def test_replace_many_is_a_versioned_replace_per_document_in_one_transaction(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-b")
        store.replace_doc_chunks("a", doc("a", "old a"))
        seq = store.change_seq()
        written = store.replace_many([
            DocumentChunks("a", doc("a", "new a", "more a"), "2024-01-01"),
            DocumentChunks("b", doc("b", "b one")),
            DocumentChunks("r", []),  # a retirement of an unknown document: a change, no rows
        ])
        assert written == 3
        assert active(store) == [("a#0", "new a", 2), ("a#1", "more a", 2), ("b#0", "b one", 1)]
        new_seq, changed = store.changes_since(seq)
        assert sorted(changed) == ["a", "b", "r"] and new_seq > seq
        assert store.replace_many([]) == 0 and store.change_seq() == new_seq

    def test_a_failing_batch_writes_nothing(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-b")
        store.replace_many([DocumentChunks("a", doc("a", "a v1")), DocumentChunks("x", doc("x", "x v1"))])
        before, seq = active(store), store.change_seq()
        clash = Chunk(chunk_id="x#0", doc_id="c", text="clash")  # active in doc x: found inside the transaction
        bad_batches = [
            [DocumentChunks("a", doc("a", "a v2")), DocumentChunks("b", doc("b", "b v1")), DocumentChunks("c", [clash])],
            [DocumentChunks("a", doc("a", "a v2")), DocumentChunks("b", doc("a", "wrong doc"))],
            [DocumentChunks("a", doc("a", "one")), DocumentChunks("a", doc("a", "two"))],  # a doc twice
        ]
        for batch in bad_batches:
            with pytest.raises(IngestError):
                store.replace_many(batch)
            assert active(store) == before and store.change_seq() == seq
        assert store.replace_many([DocumentChunks("a", doc("a", "a v2"))]) == 1
        assert active(store, "a") == [("a#0", "a v2", 2)]  # no version burnt by the failures

    def test_fingerprints_name_the_active_version(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-b")
        a, b = doc("a", "alpha", "beta", metadata={"year": 2024}), doc("b", "gamma", sensitivity="RESTRICTED")
        store.replace_many([DocumentChunks("a", a, "2024-06-30"), DocumentChunks("b", b)])
        store.replace_doc_chunks("r", doc("r", "retired soon"))
        store.replace_doc_chunks("r", [])
        got = store.fingerprints(["a", "b", "r", "unknown", "a"])
        assert got == {"a": fingerprint(a, "2024-06-30"), "b": fingerprint(b)}
        assert len({fingerprint(a), fingerprint(a, "2024-06-30"), fingerprint(doc("a", "alpha", "beta"))}) == 3
        store.replace_doc_chunks("a", doc("a", "changed"))
        assert store.fingerprints(["a"]) == {"a": fingerprint(doc("a", "changed"))}
        assert chunk_store_factory("lib-other").fingerprints(["a"]) == {}  # library-scoped
        assert store.fingerprints([]) == {}


def _sectioned(doc_id: str, source: str, sensitivity: dict[int, str] | None = None) -> list[Chunk]:
    """One chunk per paragraph of ``source``, each a child of its ``# heading`` section (the
    fields a parent-child chunker records): parent id, heading, window text, parent locator."""
    chunks: list[Chunk] = []
    sections = [m.start() for m in re.finditer(r"^# ", source, flags=re.M)] + [len(source)]
    for s_start, s_end in zip(sections, sections[1:], strict=False):
        section = source[s_start:s_end].rstrip()
        heading = section.splitlines()[0][2:]
        locator = make_locator(doc_id, s_start, s_start + len(section))
        for m in re.finditer(r"[^\n]+", section):
            if m.group().startswith("# "):
                continue
            n = len(chunks)
            start, end = s_start + m.start(), s_start + m.end()
            chunks.append(Chunk(
                chunk_id=chunk_id_for(doc_id, n), doc_id=doc_id, text=source[start:end], ordinal=n, char_start=start,
                char_end=end, source_locator=make_locator(doc_id, start, end), heading=heading,
                parent_id=f"{doc_id}#sec={s_start},{s_start + len(section)}", window_text=section, parent_locator=locator,
                sensitivity=(sensitivity or {}).get(n, DEFAULT_SENSITIVITY),
            ))
    return chunks


HANDBOOK = (
    "# Leave\nVacation is 25 days a year.\nSick leave days are counted separately.\n\n"
    "# Pay\nSalary is paid monthly.\nThe bonus pool is decided in March.\n"
)


class ChunkStoreExpansionTests:
    """Parent/window expansion at the exit, on this store: children keep their own text and
    locator, the parent block goes once into ``prompt_text``, and no expansion carries the
    text of a RESTRICTED sibling."""

    def _search(self, store: ChunkStore, query: str) -> list[Snippet]:
        from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
        from ragspine.retrieval.pipeline import LibraryPipeline

        return NarrativeIndexRetriever(LibraryPipeline(store, mode="economy")).retrieve(query, top_k=10)

    def test_children_cite_themselves_and_their_parent_block_comes_once(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-expand")
        store.replace_doc_chunks("hb", _sectioned("hb", HANDBOOK))
        snippets = self._search(store, "vacation sick leave days")
        leave = [s for s in snippets if s.get("heading") == "Leave"]
        assert sorted(s["chunk_id"] for s in leave) == ["hb#0", "hb#1"]
        first, second = leave
        section = HANDBOOK[: HANDBOOK.index("\n\n# Pay")]
        assert first["prompt_text"] == section and first["parent_locator"] == f"hb#char=0,{len(section)}"
        assert "prompt_text" not in second and second["prompt_text_in"] == first["chunk_id"]
        assert second["parent_locator"] == first["parent_locator"]
        for s in leave:  # the citation is the child's own span
            start, end = (int(x) for x in s["source_locator"].split("=")[1].split(","))
            assert s["text"] == HANDBOOK[start:end] and s["text"] in section and s["text"] != section

    def test_no_expansion_carries_a_restricted_siblings_text(self, chunk_store_factory: Factory) -> None:
        store = chunk_store_factory("lib-expand-restricted")
        secret = "The bonus pool is decided in March."
        store.replace_doc_chunks("hb", _sectioned("hb", HANDBOOK, sensitivity={3: "RESTRICTED"}))
        snippets = self._search(store, "salary bonus pool paid monthly March vacation")
        ids = [s["chunk_id"] for s in snippets]
        assert "hb#3" not in ids and "hb#2" in ids and "hb#0" in ids
        pay = next(s for s in snippets if s["chunk_id"] == "hb#2")
        assert "prompt_text" not in pay and pay["expansion_withheld"] is True and "prompt_text_in" not in pay
        leave = next(s for s in snippets if s["chunk_id"] == "hb#0")
        assert leave.get("prompt_text", "").startswith("# Leave")  # an open section still expands
        assert all(secret not in str(value) for s in snippets for value in s.values())


    def test_restricted_spans_are_the_active_restricted_rows_only(self, chunk_store_factory: Factory) -> None:
        from ragspine.retrieval.chunking.chunk_store import RestrictedSpans

        store = chunk_store_factory("lib-restricted-spans")
        if not isinstance(store, RestrictedSpans):
            pytest.skip("this store has no restricted_spans read (the exit falls back to reading whole documents)")
        store.replace_doc_chunks("hb", _sectioned("hb", HANDBOOK, sensitivity={1: "restricted", 3: "RESTRICTED"}))
        store.replace_doc_chunks("open", _sectioned("open", HANDBOOK))
        got = store.restricted_spans(["hb", "open", "missing"])
        hb = {c.chunk_id: c for c in store.iter_chunks(doc_id="hb")}
        assert got == {("hb", 1): [(hb["hb#1"].char_start, hb["hb#1"].char_end), (hb["hb#3"].char_start, hb["hb#3"].char_end)]}
        store.replace_doc_chunks("hb", _sectioned("hb", HANDBOOK))  # a new version without them
        assert store.restricted_spans(["hb"]) == {} and store.restricted_spans([]) == {}


#: Strings every store must keep and return unchanged — what the ingest check lets through:
#: astral-plane characters, combining marks, right-to-left and bidi controls, control
#: characters other than NUL, noncharacters, the last code point, line separators, a BOM.
ODD_BUT_VALID = (
    "🙂👩🏽‍💻𝄞", "e\u0301 n\u0303 ñ", "שלום عربي", "\u202eevil\u202c", "\x01\x07\x1b\x1f\x7f\x85",
    "\ufffe\uffff\U0010ffff", "a\u2028b\u2029c\r\n\t", "\ufeffbom", "\u200bzero\u200dwidth", "\\ \" ' %_ $1",
)
#: Strings the check refuses, the same way on every store.
UNSTORABLE = ("a\x00b", "\x00", "a\ud800", "\udfff", "\udcff.md")


class ChunkStoreUnicodeTests:
    """Every store accepts exactly what :mod:`ragspine.retrieval.storable` lets through: the
    odd-but-valid strings round-trip in every field, key and value; a NUL or a lone surrogate
    anywhere is one :class:`IngestError` naming the document and the field, before any write."""

    def test_what_the_check_passes_round_trips_in_every_field(self, chunk_store_factory: Factory) -> None:
        from ragspine.retrieval.storable import check_chunks

        store = chunk_store_factory("lib-unicode")
        long_value = "长" * 30_000 + "🙂" * 5_000
        meta: dict[str, Any] = {s: s for s in ODD_BUT_VALID}
        meta.update({"entity": ODD_BUT_VALID[2], "long": long_value, "k" * 256: "longest key", "n": 1.5})
        chunks = [
            Chunk(chunk_id=f"d#{i}", doc_id="d🙂\x01", text=text, title=ODD_BUT_VALID[1], ordinal=i,
                  source_locator=f"{text}#char=0,1", metadata=meta, parent_id=text, heading=text, window_text=text * 3,
                  parent_locator=text)
            for i, text in enumerate((*ODD_BUT_VALID, long_value))
        ]
        check_chunks("d🙂\x01", chunks, "2024-01-01\u200e")  # the check passes all of it ...
        store.replace_doc_chunks("d🙂\x01", chunks, valid_as_of="2024-01-01\u200e")  # ... so every store keeps it
        got = {c.chunk_id: c for c in store.iter_chunks(doc_id="d🙂\x01")}
        assert sorted(got) == sorted(c.chunk_id for c in chunks)
        for chunk in chunks:
            back = got[chunk.chunk_id]
            for name in ("doc_id", "text", "title", "source_locator", "parent_id", "heading", "window_text", "parent_locator"):
                assert getattr(back, name) == getattr(chunk, name), (chunk.chunk_id, name)
            assert dict(back.metadata) == meta and back.valid_as_of == "2024-01-01\u200e"
        assert [c.chunk_id for c in store.get_chunks(["d#9", "d#0"])] == ["d#9", "d#0"]
        assert store.doc_ids() == ["d🙂\x01"]

    def test_what_the_check_refuses_every_store_refuses_the_same_way(self, chunk_store_factory: Factory) -> None:
        from ragspine.retrieval.storable import check_chunks

        store = chunk_store_factory("lib-unicode")
        store.replace_doc_chunks("d", doc("d", "v1", metadata={"k": "v"}))
        seq = store.change_seq()
        for bad in UNSTORABLE:
            cases: list[tuple[str, list[Chunk], str]] = [
                ("d", doc("d", "x", metadata={bad: "v"}), f"metadata key {bad!r}"),
                ("d", doc("d", "x", metadata={"k": bad}), "the value of metadata key 'k'"),
                ("d", doc("d", f"text {bad}"), "text"),
                ("d", doc("d", "x", title=bad), "title"),
                ("d", doc("d", "x", heading=bad), "heading of chunk 'd#0'"),
                ("d", doc("d", "x", window_text=bad), "window text of chunk 'd#0'"),
                ("d", doc("d", "x", source_locator=f"{bad}#char=0,1"), "source locator of chunk 'd#0'"),
                (bad, doc(bad, "x"), "the document id"),
            ]
            for doc_id, chunks, what in cases:
                with pytest.raises(IngestError) as refused:
                    check_chunks(doc_id, chunks)
                message = str(refused.value)
                assert message.startswith(f"document {doc_id!r}: {what} holds ") and "\n" not in message, message
                with pytest.raises(IngestError) as raised:
                    store.replace_doc_chunks(doc_id, chunks)
                assert str(raised.value) == message
                with pytest.raises(IngestError) as raised:
                    store.replace_many([DocumentChunks("other", doc("other", "fine")), DocumentChunks(doc_id, chunks)])
                assert str(raised.value) == message
        with pytest.raises(IngestError, match="valid_as_of holds a NUL"):
            store.replace_doc_chunks("d", doc("d", "x"), valid_as_of="2024\x00")
        assert active(store) == [("d#0", "v1", 1)] and store.change_seq() == seq and store.doc_ids() == ["d"]


class ChunkStoreSensitivityTests:
    """Labels that look like RESTRICTED (:data:`ragspine.testing.lookalikes.RESTRICTED_LOOKALIKES`)
    are RESTRICTED on this store: every write stores them as ``RESTRICTED``, and one stored
    verbatim (a row from before labels were folded) is still withheld by every exit — no
    snippet, no parent text, a span in ``restricted_spans``."""

    @staticmethod
    def _served(store: ChunkStore, query: str) -> list[Snippet]:
        from ragspine.retrieval.link.narrative_link import NarrativeIndexRetriever
        from ragspine.retrieval.pipeline import LibraryPipeline

        return NarrativeIndexRetriever(LibraryPipeline(store, mode="economy")).retrieve(query, top_k=50)

    def test_lookalike_labels_are_stored_as_restricted_and_never_served(self, chunk_store_factory: Factory) -> None:
        from ragspine.testing.lookalikes import RESTRICTED_LOOKALIKES

        store = chunk_store_factory("lib-lookalike")
        for i, label in enumerate(RESTRICTED_LOOKALIKES.values()):
            store.replace_doc_chunks(f"memo{i}", doc(f"memo{i}", f"zanzibar merger codename board memo {i}", sensitivity=label))
        store.replace_many([DocumentChunks(f"bulk{i}", doc(f"bulk{i}", f"zanzibar merger codename bulk memo {i}", sensitivity=label))
                            for i, label in enumerate(RESTRICTED_LOOKALIKES.values())])
        store.replace_doc_chunks("open", doc("open", "zanzibar merger open note"))
        labels = {c.doc_id: c.sensitivity for c in store.iter_chunks()}
        assert {d: lab for d, lab in labels.items() if lab != "RESTRICTED"} == {"open": DEFAULT_SENSITIVITY}, labels
        assert [s["doc_id"] for s in self._served(store, "zanzibar merger codename board bulk memo")] == ["open"]

    def test_a_lookalike_stored_verbatim_is_withheld_at_every_exit(self, chunk_store_factory: Factory) -> None:
        from ragspine.retrieval.chunking.chunk_store import RestrictedSpans
        from ragspine.testing.lookalikes import RESTRICTED_LOOKALIKES, written_verbatim

        store = chunk_store_factory("lib-lookalike-verbatim")
        labels = list(RESTRICTED_LOOKALIKES.values())
        with written_verbatim():
            store.replace_doc_chunks("hb", _sectioned("hb", HANDBOOK, sensitivity={1: labels[0], 3: labels[4]}))
            for i, label in enumerate(labels):
                store.replace_doc_chunks(f"memo{i}", doc(f"memo{i}", f"zanzibar merger codename memo {i}", sensitivity=label))
        stored = {c.chunk_id: c.sensitivity for c in store.iter_chunks()}
        assert stored["hb#1"] == labels[0] and stored["hb#3"] == labels[4], "the label was not stored verbatim"
        assert self._served(store, "zanzibar merger codename memo") == [], "a lookalike-labelled chunk was served"
        snippets = self._served(store, "salary bonus pool paid monthly March vacation sick leave days counted")
        assert {s["chunk_id"] for s in snippets} == {"hb#0", "hb#2"}
        for secret in ("Sick leave days are counted separately.", "The bonus pool is decided in March."):
            assert all(secret not in str(value) for s in snippets for value in s.values()), secret
        if isinstance(store, RestrictedSpans):
            hb = {c.chunk_id: c for c in store.iter_chunks(doc_id="hb")}
            assert store.restricted_spans(["hb"]) == {("hb", 1): [(hb[c].char_start, hb[c].char_end) for c in ("hb#1", "hb#3")]}


class ChunkStoreAclTests:
    """``DocumentAcls``: a document's ACL is kept apart from its chunks, set with them or alone,
    changed without a re-ingest, recorded, scoped to its library, and deleted with it."""

    def test_acls_are_set_with_the_chunks_or_alone_and_every_change_is_recorded(self, chunk_store_factory: Factory) -> None:
        from ragspine.security.principals import ACL, OPEN

        store = chunk_store_factory("lib-acl")
        other = chunk_store_factory("lib-acl-other")
        assert isinstance(store, DocumentAcls)
        assert store.document_acls() == (0, {}) and store.acl_seq() == 0
        hr = ACL.parse({"allow": ["group:HR"], "deny": ["user:eve"]})
        store.replace_many([DocumentChunks("a", doc("a", "a one"), "", hr), DocumentChunks("b", doc("b", "b one"))])
        seq, acls = store.document_acls()
        assert acls == {"a": hr} and seq == store.acl_seq() > 0
        assert other.document_acls() == (0, {})  # libraries never see each other's ACLs
        store.replace_many([DocumentChunks("a", doc("a", "a two"))])  # None: the ACL stays
        store.replace_many([DocumentChunks("a", doc("a", "a three"), "", hr)])  # the same ACL: no change recorded
        assert store.acl_seq() == seq and store.document_acls()[1] == {"a": hr}
        board = ACL.parse("group:board")
        assert store.set_acls({"b": board, "a": hr, "later": board}, by="admin:alice") == 2  # a's is unchanged
        assert store.document_acls()[1] == {"a": hr, "b": board, "later": board}
        assert store.set_acls({"a": OPEN}, by="admin:bob") == 1
        assert store.document_acls()[1] == {"b": board, "later": board}
        history = store.acl_history()
        assert [(h.doc_id, h.after, h.changed_by) for h in history] == [
            ("a", OPEN, "admin:bob"), ("later", board, "admin:alice"), ("b", board, "admin:alice"), ("a", hr, "ingest")]
        assert history[0].before == hr and history[0].seq == store.acl_seq() and all(h.changed_at for h in history)
        assert [h.after for h in store.acl_history("a", limit=1)] == [OPEN]
        assert active(store, "a") == [("a#0", "a three", 3)]  # an ACL change rewrote no chunk

    def test_a_failed_batch_writes_no_acl(self, chunk_store_factory: Factory) -> None:
        from ragspine.security.principals import ACL

        store = chunk_store_factory("lib-acl-fail")
        store.replace_many([DocumentChunks("x", doc("x", "x one"))])
        with pytest.raises(IngestError):
            store.replace_many([DocumentChunks("a", doc("a", "a"), "", ACL.parse("group:hr")), DocumentChunks("b", doc("x", "wrong doc"))])
        assert store.document_acls() == (0, {})
        with pytest.raises(RagspineError):
            store.set_acls({"": ACL.parse("group:hr")}, by="x")

    def test_deleting_the_library_deletes_its_acls(self, chunk_store_factory: Factory) -> None:
        from ragspine.security.principals import ACL

        store = chunk_store_factory("lib-acl-del")
        store.replace_many([DocumentChunks("a", doc("a", "a one"), "", ACL.parse("group:hr"))])
        catalog = getattr(store, "db", None)
        if catalog is None or not hasattr(catalog, "delete_library"):
            pytest.skip("the store has no catalog to delete the library through")
        catalog.delete_library(store.library_id)
        assert store.document_acls()[1] == {} and store.acl_history() == []

    def test_acl_changes_since_replay_to_the_acls_of_now(self, chunk_store_factory: Factory) -> None:
        """``acl_changes_since(seq)`` applied to the ACLs as of ``seq`` gives ``document_acls()``,
        from every earlier snapshot, over a seeded random history of ``set_acls``, replaces with
        and without an ACL, deleted documents and failed batches; a ``seq`` the record no longer
        reaches (another library's, a deleted library's) gives ``None``."""
        import random

        from ragspine.retrieval.chunking.chunk_store import DocumentAclChanges
        from ragspine.security.principals import ACL, OPEN

        store = chunk_store_factory("lib-acl-since")
        other = chunk_store_factory("lib-acl-since-other")
        assert isinstance(store, DocumentAclChanges)
        assert store.acl_changes_since(0) == (0, {}) and store.acl_changes_since(-1) is None
        rng = random.Random(29)
        pool = [OPEN, *(ACL.parse(a) for a in ("group:hr", "group:board", {"allow": ["group:hr"], "deny": ["user:eve"]}, "user:bob"))]
        docs = [f"d{i}" for i in range(12)]
        snapshots = [store.document_acls()]
        for step in range(40):
            roll = rng.random()
            if roll < 0.35:
                store.set_acls({d: rng.choice(pool) for d in rng.sample(docs, rng.randint(1, 4))}, by=f"admin:{step}")
            elif roll < 0.7:  # replaces: a new ACL, the same, none given (it stays), a deleted document
                batch = []
                for d in rng.sample(docs, rng.randint(1, 3)):
                    chunks = [] if rng.random() < 0.3 else doc(d, f"{d} text {step}")
                    batch.append(DocumentChunks(d, chunks, "", rng.choice([*pool, None])))
                store.replace_many(batch)
            elif roll < 0.8:  # a failed batch: its ACLs are never recorded
                with pytest.raises(IngestError):
                    store.replace_many([DocumentChunks(docs[0], doc(docs[0], "x"), "", rng.choice(pool[1:])),
                                        DocumentChunks(docs[1], doc(docs[2], "wrong doc"), "", rng.choice(pool[1:]))])
            else:
                other.set_acls({rng.choice(docs): rng.choice(pool[1:])}, by="other")  # another library's changes
            now = store.document_acls()
            for seq, then in snapshots[-6:] + snapshots[:2]:
                changes = store.acl_changes_since(seq)
                assert changes is not None, (step, seq)
                new_seq, changed = changes
                replayed = {**then, **changed}
                assert new_seq == now[0] and {d: a for d, a in replayed.items() if not a.is_open} == now[1], (step, seq)
            assert store.acl_changes_since(now[0]) == (now[0], {})
            snapshots.append(now)
        assert len({seq for seq, _ in snapshots}) > 10
        if other.acl_seq():
            assert store.acl_changes_since(other.acl_seq()) is None  # not one of this library's changes
        catalog = getattr(store, "db", None)
        if catalog is not None and hasattr(catalog, "delete_library"):
            seq = store.acl_seq()
            catalog.delete_library(store.library_id)
            store.set_acls({"new": pool[1]}, by="admin")
            assert store.acl_changes_since(seq) is None  # the record no longer reaches back to seq: read it all
            assert store.acl_changes_since(0) == (store.acl_seq(), {"new": pool[1]})


class ChunkStoreConformance(
    ChunkStoreAclTests,
    ChunkStoreSensitivityTests,
    ChunkStoreExpansionTests,
    ChunkStoreUnicodeTests,
    ChunkStoreVersioningTests,
    ChunkStoreBulkTests,
    ChunkStorePrefilterTests,
    ChunkStoreIsolationTests,
    ChunkStoreChangeLogTests,
    ChunkStoreActiveVersionsTests,
    ChunkStoreAtomicityTests,
    ChunkStoreReadOnlyTests,
):
    """Every ChunkStore capability; needs the ``chunk_store_factory`` fixture."""
