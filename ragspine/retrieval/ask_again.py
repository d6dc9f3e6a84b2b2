"""The one place that decides to ask a search again — and says when it dropped the filters.

A search (one library's pipeline, or the fusion of several) is asked for ``want`` results
under a filter and answers a :class:`Page`. :func:`ask_again` then decides, in this order:

1. **A version committed mid-query** — the search raised :class:`StaleRanking` (a chunk was
   replaced between scoring and fetching): run it again, at most :data:`MAX_STALE_RETRIES`
   times; the last attempt leaves such chunks out instead. A result is never shown torn.
2. **Results set aside took the places** — fewer than ``top_k`` items pass ``keep`` (the link
   exit keeps only non-RESTRICTED ones) and the search could find more: ask for more
   (doubling, at most :data:`MAX_TOP_UPS` rounds).
3. **Nothing matched the filter** — no item passes and ``retry_without_filters`` (the seed's
   default at the link exit): search once more without the filter. The answer then says so
   (``filters_dropped``), so the caller can tell the user; it is never silent.

"Nothing" is judged after ``keep``: otherwise an empty answer versus a retried one would tell
the caller whether a RESTRICTED chunk matches the filter.

What a search learned about itself travels back in its :class:`Page` and the :class:`Answer`
(the dense leg's coverage, of the page the answer kept), never on the searching object, which
concurrent requests share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Generic, TypeVar

from ragspine.deadline import check as check_deadline
from ragspine.retrieval.filtering.filters import MetadataFilter

if TYPE_CHECKING:  # a value the dense leg computes; this module needs no vector code to pass it on
    from ragspine.retrieval.vector.dense import DenseCoverage

T = TypeVar("T")

MAX_STALE_RETRIES = 3
MAX_TOP_UPS = 8


class StaleRanking(Exception):
    """A ranked chunk was replaced by a newer version before its text was fetched."""


@dataclass(frozen=True)
class Page(Generic[T]):
    """What one search returned: up to ``want`` items, best first, whether asking for
    more could find more (``exhausted``: the candidates ran out), and how many of its dense
    leg's candidates had no vector (``None``: no dense leg ran)."""

    items: list[T]
    exhausted: bool
    dense_coverage: DenseCoverage | None = None


@dataclass(frozen=True)
class Answer(Generic[T]):
    """The kept items (at most ``top_k``), whether they were found without the filter, and
    the dense coverage of the search they came from."""

    items: list[T]
    filters_dropped: bool = False
    dense_coverage: DenseCoverage | None = None


#: ``search(want, metadata_filter, skip_stale) -> Page``; raises StaleRanking unless skip_stale.
Search = Callable[[int, "MetadataFilter | None", bool], Page[T]]


def ask_again(
    search: Search[T],
    *,
    top_k: int,
    metadata_filter: MetadataFilter | None = None,
    keep: Callable[[T], bool] | None = None,
    retry_without_filters: bool = False,
) -> Answer[T]:
    """See the module docstring."""
    if top_k <= 0:
        return Answer([])
    kept, page = _top_up(search, top_k, metadata_filter, keep)
    if kept or not metadata_filter or not retry_without_filters:
        return Answer(kept[:top_k], dense_coverage=page.dense_coverage)
    kept, page = _top_up(search, top_k, None, keep)
    return Answer(kept[:top_k], filters_dropped=True, dense_coverage=page.dense_coverage)


def _top_up(
    search: Search[T], top_k: int, metadata_filter: MetadataFilter | None, keep: Callable[[T], bool] | None,
) -> tuple[list[T], Page[T]]:
    """The kept items and the page they came from (the last one asked for)."""
    want = top_k
    for _ in range(MAX_TOP_UPS):
        page = _fresh(search, want, metadata_filter)
        kept = page.items if keep is None else [item for item in page.items if keep(item)]
        if len(kept) >= top_k or page.exhausted:
            break
        want = max(2 * want, want + top_k - len(kept))
    return kept, page


def _fresh(search: Search[T], want: int, metadata_filter: MetadataFilter | None) -> Page[T]:
    for _ in range(MAX_STALE_RETRIES):
        check_deadline("the search")
        try:
            return search(want, metadata_filter, False)
        except StaleRanking:
            continue
    check_deadline("the search")
    return search(want, metadata_filter, True)
