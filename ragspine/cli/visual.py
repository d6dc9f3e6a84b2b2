"""``ragspine visual build|status|search`` (registered by :mod:`ragspine.cli.app`): the visual seam.

    ragspine visual build [--library L ...] [--dpi N]       render and embed the libraries' PDF pages
    ragspine visual status [--library L ...]                each library's visual index: pages, model, current or stale
    ragspine visual search "..." [--library L ...] [--top-k N] [--json]

Needs ``RAGSPINE_VISUAL_EMBEDDER`` (``onnx`` or ``colpali``) and ``RAGSPINE_VISUAL_MODEL``.
``search`` prints page hints (``is_visual``): where to look, never a citation — the text of a
page is never printed. RESTRICTED documents are never rendered (``build`` counts them).

``ragspine ask`` and ``ragspine query --visual`` take their hints here too
(:func:`hinted_answer`, :func:`query_hints`, :func:`print_hints`): the seam off, they print
and return what they did without it, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Sequence

from ragspine.cli.common import CliError, Subcommands, positive_int, stack_from_args

if TYPE_CHECKING:
    from ragspine.agent.base import AgentAnswer
    from ragspine.security.principals import Viewer

__all__ = ["OFF", "add_visual_commands", "cmd_visual", "hinted_answer", "print_hints", "query_hints"]

OFF = "the visual seam is off: set RAGSPINE_VISUAL_EMBEDDER (onnx|colpali) and RAGSPINE_VISUAL_MODEL"


def add_visual_commands(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``visual`` to the CLI's subcommands."""
    from ragspine.retrieval.visual.render import DEFAULT_DPI

    visual = sub.add_parser("visual", help="the visual seam: PDF pages as pictures, found as page hints (RAGSPINE_VISUAL_EMBEDDER)")
    actions = visual.add_subparsers(dest="visual_action", required=True, metavar="ACTION")
    build = actions.add_parser("build", parents=[common], help="render and embed libraries' PDF pages (RESTRICTED documents never)")
    build.add_argument("--library", action="append", help="library (repeatable; default: all)")
    build.add_argument("--dpi", type=positive_int, default=DEFAULT_DPI, help=f"render resolution (default: {DEFAULT_DPI})")
    status = actions.add_parser("status", parents=[common], help="each library's visual index")
    status.add_argument("--library", action="append", help="library (repeatable; default: all)")
    search = actions.add_parser("search", parents=[common], help="page hints for a question (never citations)")
    search.add_argument("query")
    search.add_argument("--library", action="append", help="library (repeatable; default: all)")
    search.add_argument("--top-k", type=positive_int, default=3)
    search.add_argument("--json", action="store_true", help="print the hints as JSON")


def cmd_visual(args: argparse.Namespace) -> int:
    return {"build": _build, "status": _status, "search": _search}[args.visual_action](args)


def _libraries(stack: Any, wanted: list[str] | None) -> list[str]:
    known = [lib.library_id for lib in stack.libraries()]
    unknown = [name for name in wanted or [] if name not in known]
    if unknown:
        raise CliError(f"unknown library {unknown[0]!r} (see `ragspine libraries`)")
    return list(dict.fromkeys(wanted)) if wanted else known


def _embedder(stack: Any) -> Any:
    from ragspine.retrieval.visual.base import make_visual_embedder

    embedder = make_visual_embedder(stack.settings.visual_embedder, settings=stack.settings)
    if embedder is None:
        raise CliError(OFF)
    return embedder


def _build(args: argparse.Namespace) -> int:
    from ragspine.readers.base import ReaderLimits
    from ragspine.retrieval.visual.index import VisualIndex, visual_dir

    with stack_from_args(args, retrieval_mode="economy") as stack:
        embedder = _embedder(stack)
        for name in _libraries(stack, args.library):
            store = stack.db.chunk_store(name)
            where = visual_dir(store)
            if where is None:
                raise CliError(f"library {name!r}: its chunk store keeps no files (in memory): nowhere to save a visual index")
            index = VisualIndex.build(store, embedder, dpi=args.dpi, limits=ReaderLimits.from_settings(stack.settings),
                                      max_bytes=stack.settings.max_file_bytes)
            index.save(where)
            skipped = ", ".join(f"{n} {why}" for why, n in sorted(index.skipped.items())) or "none"
            print(f"{name}: {len(index)} page(s) of {len({p.doc_id for p in index.pages})} PDF(s) at {args.dpi} dpi;"
                  f" documents skipped: {skipped}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from ragspine.retrieval.chunking.chunk_store import ChangeLog
    from ragspine.retrieval.visual.index import VisualIndex, visual_dir

    with stack_from_args(args, retrieval_mode="economy") as stack:
        for name in _libraries(stack, args.library):
            store = stack.db.chunk_store(name)
            where = visual_dir(store)
            index = VisualIndex.load(where) if where else None
            if index is None:
                print(f"{name}: no visual index (ragspine visual build --library {name})")
                continue
            seq = store.change_seq() if isinstance(store, ChangeLog) else None
            state = "current" if seq is not None and seq == index.change_seq else "stale (the library changed since the build)"
            print(f"{name}: {len(index)} page(s), {index.dpi} dpi, model {index.fingerprint}, {state}")
    return 0


def _search(args: argparse.Namespace) -> int:
    from ragspine.retrieval.visual.search import VisualSearch

    with stack_from_args(args, retrieval_mode="economy") as stack:
        search = VisualSearch(_embedder(stack), stack.db)
        hints = search.hints(args.query, _libraries(stack, args.library), top_k=args.top_k)
    if args.json:
        print(json.dumps({"query": args.query, "visual_hints": [h.to_dict() for h in hints]}, ensure_ascii=False, indent=2))
        return 0
    if not hints:
        print("no visual hint (is the visual index built? ragspine visual status)")
    for rank, h in enumerate(hints, 1):
        print(f"{rank}. [{h.library_id}] {h.title}  ({h.doc_id})  page {h.page}  score {h.score:.3f}")
        print(f"   look at: {h.source_locator}   (a visual hint, not a citation)")
    return 0


# -- hints beside ``ask`` and ``query`` ------------------------------------------------------------
def _note(exc: Exception) -> None:
    print(f"ragspine: note: no visual hints: {exc}", file=sys.stderr)


def hinted_answer(stack: Any, answer: AgentAnswer, library_ids: Sequence[str] | None, viewer: Viewer | None = None) -> AgentAnswer:
    """``ragspine ask``: ``answer`` with its visual hints (``library_ids``; ``None``: every
    library) of the documents ``viewer`` may read (``None``: no principal) — itself when the seam is off or none is due
    (:func:`~ragspine.retrieval.visual.search.answer_with_hints`). A hint that cannot be had (an
    index of another model) is a note on stderr: the answer stands without it."""
    if stack.settings.visual_embedder == "none":
        return answer  # nothing imported, nothing built
    from ragspine.errors import RagspineError
    from ragspine.retrieval.visual.search import answer_with_hints, visual_search_for

    search = visual_search_for(stack)
    if search is None:
        return answer
    ids = list(library_ids) if library_ids else [lib.library_id for lib in stack.libraries()]
    try:
        from ragspine.security.principals import ANONYMOUS

        return answer_with_hints(search, answer, ids, gate=stack.security_gate, viewer=viewer or ANONYMOUS)
    except RagspineError as exc:
        _note(exc)
        return answer


def query_hints(stack: Any, query: str, library_ids: Sequence[str] | None, answer: Any) -> list[dict[str, Any]]:
    """``ragspine query --visual``: the hints for ``query`` (``[]`` when the question or a text
    made from it was refused, nothing matched, or no library has a visual index — said on stderr)."""
    from ragspine.errors import RagspineError
    from ragspine.retrieval.visual.search import gated_hints, visual_search_for

    search = visual_search_for(stack)
    if search is None:
        raise CliError(f"--visual: {OFF}")
    if answer.refusal is not None or getattr(answer, "refused", None) or not answer.snippets:
        return []
    ids = list(library_ids) if library_ids else [lib.library_id for lib in stack.libraries()]
    try:
        hints = gated_hints(search, query, ids, gate=stack.security_gate)
    except RagspineError as exc:
        _note(exc)
        return []
    if hints is None:
        print(f"ragspine: note: no visual index in {', '.join(map(repr, ids))}: ragspine visual build", file=sys.stderr)
        return []
    return [h.to_dict() for h in hints]


def print_hints(hints: Sequence[dict[str, Any]] | None, *, out: Any = None) -> None:
    """The short block ``ask`` and ``query --visual`` print: page references, never page text."""
    if not hints:
        return
    print("\nvisual hints (pages to look at; not citations):", file=out)
    for h in hints:
        print(f"  [{h['library_id']}] {h['title'] or h['doc_id']}, page {h['page']}: {h['source_locator']}"
              f"  (score {h['score']:.3f})", file=out)
