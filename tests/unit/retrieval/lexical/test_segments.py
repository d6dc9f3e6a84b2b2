"""The saved index's hashes and digests: the same in every process (pinned values: a change is
a new file format), whatever the block size, the ASCII fast path equal to the general one;
the version digest independent of row order and changed by any row."""

from __future__ import annotations

import random

import numpy as np

from ragspine.retrieval.lexical import segments
from ragspine.retrieval.lexical.segments import StringTable, blob_hashes, stable_hashes, version_digest


def test_hashes_are_pinned_because_saved_files_hold_them() -> None:
    got = [hex(int(h)) for h in stable_hashes(["", "doc-1#0", "文書#2", "\ud800"])]
    assert got == ["0xe220a8397b1dcdaf", "0x64532ec1ad6c7521", "0xd2bc01d66e2cc7da", "0x9e8956a0f19d1428"]
    assert hex(version_digest(stable_hashes(["a", "b"]), np.array([1, 2]))) == "0xdfa04d538ff0e12"
    assert segments.FORMAT == "ragspine-lexical/3"  # a new hash or layout is a new format


def test_hashes_do_not_depend_on_blocks_or_on_the_ascii_fast_path(monkeypatch) -> None:
    rng = random.Random(4)
    strings = ["", "a", "ab", "ba", "é", "文書-7#0"] + [
        "".join(rng.choice("abyz09#-é文") for _ in range(rng.randint(0, 30))) for _ in range(3000)
    ]
    whole = stable_hashes(strings)
    one_by_one = np.concatenate([stable_hashes([s]) for s in strings])
    assert (whole == one_by_one).all()  # mixed batches take the general path, singles often the ASCII one
    monkeypatch.setattr(segments, "_HASH_BLOCK", 5)
    assert (stable_hashes(strings) == whole).all()
    distinct = {s: int(h) for s, h in zip(strings, whole, strict=True)}
    assert len(set(distinct.values())) == len(distinct)
    table = StringTable.from_strings(strings)
    assert (np.asarray(table.hashes) == blob_hashes(table.blob, table.offsets)).all()
    assert table.find("ab") == [i for i, s in enumerate(strings) if s == "ab"]


def test_the_version_digest_is_a_set_checksum() -> None:
    ids = [f"d{i}#{i % 3}" for i in range(500)]
    hashes, versions = stable_hashes(ids), np.arange(500) % 7 + 1
    digest = version_digest(hashes, versions)
    order = np.random.default_rng(1).permutation(500)
    assert version_digest(hashes[order], versions[order]) == digest
    bumped = versions.copy()
    bumped[17] += 1
    assert version_digest(hashes, bumped) != digest
    assert version_digest(hashes[1:], versions[1:]) != digest
    assert version_digest(hashes[:0], versions[:0]) == 0
