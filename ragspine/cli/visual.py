"""``ragspine visual build|status|search`` (registered by :mod:`ragspine.cli.app`): the visual seam.

    ragspine visual build [--library L ...] [--dpi N]       render and embed the libraries' PDF pages
    ragspine visual status [--library L ...]                each library's visual index: pages, model, current or stale
    ragspine visual search "..." [--library L ...] [--top-k N] [--json]

Needs ``RAGSPINE_VISUAL_EMBEDDER`` (``onnx`` or ``colpali``) and ``RAGSPINE_VISUAL_MODEL``.
``search`` prints page hints (``is_visual``): where to look, never a citation — the text of a
page is never printed. RESTRICTED documents are never rendered (``build`` counts them).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ragspine.cli.common import CliError, Subcommands, positive_int, stack_from_args

__all__ = ["add_visual_commands", "cmd_visual"]


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
        raise CliError("the visual seam is off: set RAGSPINE_VISUAL_EMBEDDER (onnx|colpali) and RAGSPINE_VISUAL_MODEL")
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
