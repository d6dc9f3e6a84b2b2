"""A saved lexical index is checked before it is trusted: against its own manifest when read,
then against the store once the changes since the save are replayed (the chunk versions it
covers, and a sample of rows' tokens). A file that fails is never served: the index is
rebuilt from the store, saved again (the next process loads the healed file), the refusal is
counted by reason and logged once."""

from __future__ import annotations

import json
import logging
import os
import random

import numpy as np
import pytest

from ragspine.retrieval.lexical import segments, verify
from ragspine.retrieval.lexical.index import InMemoryLexicalIndex
from ragspine.retrieval.lexical.segments import StringTable, read_segment, save_segment
from ragspine.stores.sqlite import SQLiteDatabase
from ragspine.testing.bm25_reference import IncrementalReference
from tests.helpers import needs
from tests.unit.retrieval.lexical.test_index import _queries, _random_doc


@pytest.fixture
def library(tmp_path):
    """A saved library of ~1,500 chunks written in steps (merges past 1,000 rows), its saved
    directory and the reference."""
    db = SQLiteDatabase(tmp_path / "chunks.db")
    store = db.chunk_store("lib")
    rng = random.Random(5)
    index = InMemoryLexicalIndex(store)
    for d in range(150):
        store.replace_many([(f"d{d}-{i}", _random_doc(rng, f"d{d}-{i}", 8)) for i in range(2)])
        index.refresh()
    index.save()
    ref = IncrementalReference()
    ref.reload(store)
    yield db, store, store.persist_dir("lexical"), ref
    db.close()


def _matches(index: InMemoryLexicalIndex, ref: IncrementalReference) -> None:
    for q in _queries(random.Random(1), 30):
        for top_k in (None, 5):
            got = [(h.chunk_id, h.score, h.version) for h in index.search(q, top_k=top_k)]
            assert got == ref.ranking(q, None, top_k), q


def _reopen(store, reason: str | None, caplog) -> InMemoryLexicalIndex:
    """A new index over ``store``: loaded when ``reason`` is None, else refused for ``reason``
    (counted once, logged once) and rebuilt."""
    before = verify.saved_index_rejections()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ragspine.retrieval.lexical.verify"):
        index = InMemoryLexicalIndex(store)
        index.refresh()
        index.refresh()
    after = verify.saved_index_rejections()
    if reason is None:
        assert index.origin == "loaded" and after == before
        assert not caplog.records
    else:
        assert index.origin == "built"
        assert after.get(reason, 0) == before.get(reason, 0) + 1
        assert sum(after.values()) == sum(before.values()) + 1
        assert len(caplog.records) == 1 and reason in caplog.records[0].getMessage()
    return index


def _rewrite(where: str, change) -> None:
    """Save the current segment again after ``change(segment)``, with a manifest that agrees
    with the changed arrays (a file consistent with itself, wrong about the store)."""
    segment = read_segment(where)
    segment.lengths = np.array(segment.lengths)
    segment.versions = np.array(segment.versions)
    change(segment)
    save_segment(segment, where)


def _current(where: str) -> str:
    with open(os.path.join(where, "CURRENT"), encoding="utf-8") as fh:
        return os.path.join(where, fh.read().strip())


def test_a_good_saved_index_is_loaded_and_checked_without_a_rebuild(library, caplog) -> None:
    _, store, _, ref = library
    index = _reopen(store, None, caplog)
    assert not index._unverified
    _matches(index, ref)


def test_tokens_pointing_at_other_tokens_postings_are_caught_by_the_content_check(library, caplog) -> None:
    """The shape of the bug files of format 2 held: a token's id naming another token's
    postings. Counts, lengths and versions all agree; the sampled rows' tokens do not."""
    _, store, where, ref = library

    def swap_common_tokens(segment) -> None:
        tokens = [segment.vocab[i] for i in range(len(segment.vocab))]
        df = np.diff(np.asarray(segment.postings.indptr))
        a, b = (int(t) for t in np.asarray(segment.postings.terms)[np.argsort(-df)[:2]])
        tokens[a], tokens[b] = tokens[b], tokens[a]
        segment.vocab = StringTable.from_strings(tokens)

    _rewrite(where, swap_common_tokens)
    _matches(_reopen(store, "content", caplog), ref)
    _reopen(store, None, caplog)  # healed: the rebuilt index was saved


def test_other_chunk_versions_are_caught_by_the_version_digest(library, caplog) -> None:
    _, store, where, ref = library

    def bump(segment) -> None:
        segment.versions[7] += 1

    _rewrite(where, bump)
    _matches(_reopen(store, "versions", caplog), ref)


def test_a_missing_row_is_caught_by_the_chunk_count(library, caplog) -> None:
    _, store, where, ref = library
    segment = read_segment(where)
    keep = np.arange(1, segment.n_rows)
    live = np.zeros(segment.n_rows, dtype=bool)
    live[keep] = True
    renumber = np.full(segment.n_rows, -1, dtype=np.int64)
    renumber[keep] = np.arange(len(keep))
    fewer = segments.Segment(
        segments.merge_postings([segment.postings], live, renumber), segment.vocab, segment.chunk_ids.gather(keep),
        segment.doc_ids.gather(keep), np.array(segment.lengths)[keep], np.array(segment.versions)[keep],
        segment.meta.gather(keep), segment.seq, segment.marker,
    )
    save_segment(fewer, where)
    _matches(_reopen(store, "versions", caplog), ref)


def test_a_file_that_disagrees_with_its_manifest_is_corrupt(library, caplog) -> None:
    _, store, where, ref = library
    path = os.path.join(_current(where), "tf.npy")
    tf = np.load(path)
    tf[3] += 1
    np.save(path, tf)
    with pytest.raises(segments.SegmentError, match="tf_total"):
        read_segment(where)
    _matches(_reopen(store, "corrupt", caplog), ref)


def test_files_of_the_previous_format_heal_on_upgrade(library, caplog) -> None:
    """Format 2's files may hold the wrong term ids: every one is rebuilt once, then loaded."""
    _, store, where, ref = library
    manifest = os.path.join(_current(where), "manifest.json")
    with open(manifest, encoding="utf-8") as fh:
        data = json.load(fh)
    data["format"] = "ragspine-lexical/2"
    with open(manifest, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    _matches(_reopen(store, "format", caplog), ref)
    assert caplog.records[0].levelno == logging.INFO  # an expected upgrade step, not a warning
    _matches(_reopen(store, None, caplog), ref)


def test_changes_after_the_save_are_replayed_then_checked(library, caplog) -> None:
    _, store, where, ref = library
    rng = random.Random(9)
    for d in range(20):
        store.replace_doc_chunks(f"late{d}", _random_doc(rng, f"late{d}", 4))
    store.replace_doc_chunks("d3-0", [])
    store.replace_doc_chunks("d4-1", _random_doc(rng, "d4-1", 3))
    ref.reload(store)
    _matches(_reopen(store, None, caplog), ref)


def test_a_store_written_during_the_check_is_checked_again_at_the_next_refresh(library, monkeypatch) -> None:
    _, store, _, ref = library
    real = verify.store_digest
    calls = []

    def racing(s, **kwargs):
        calls.append(1)
        found = real(s, **kwargs)
        if len(calls) == 1:  # a writer commits while the digest is read
            s.replace_doc_chunks("racer", _random_doc(random.Random(2), "racer", 3))
        return found

    monkeypatch.setattr(verify, "store_digest", racing)
    index = InMemoryLexicalIndex(store)
    index.refresh()
    assert index.origin == "loaded" and index._unverified  # inconclusive: not judged either way
    index.refresh()
    assert len(calls) == 2 and not index._unverified and index.origin == "loaded"
    ref.reload(store)
    _matches(index, ref)


def test_the_service_exports_the_refusals(library, caplog) -> None:
    needs("prometheus_client")
    from ragspine.service.metrics import _ServiceCollector

    _, store, where, _ = library
    _rewrite(where, lambda segment: segment.versions.__setitem__(0, segment.versions[0] + 5))
    _reopen(store, "versions", caplog)
    families = {f.name: f for f in _ServiceCollector(lambda: None).collect()}
    samples = {s.labels["reason"]: s.value for s in families["ragspine_lexical_saved_index_rejected"].samples}
    assert samples["versions"] >= 1


def test_string_hashes_of_another_function_are_corrupt(library, caplog) -> None:
    """A table's stored hashes are what lookups search: ones that do not match the strings
    (another hash function, a damaged file) would lose chunks and documents silently."""
    _, store, where, ref = library
    path = os.path.join(_current(where), "doc_ids.hashes.npy")
    hashes = np.load(path)
    np.save(path, hashes ^ np.uint64(1))
    with pytest.raises(segments.SegmentError, match="doc_ids table's hashes"):
        read_segment(where)
    _matches(_reopen(store, "corrupt", caplog), ref)
