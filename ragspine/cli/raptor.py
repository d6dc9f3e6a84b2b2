"""``ragspine raptor build|status|show`` and ``ragspine query --raptor`` (registered by :mod:`ragspine.cli.app`).

    ragspine raptor build [--library L ...] [--force] [--summarizer extractive|llm]
    ragspine raptor status [--library L ...]
    ragspine raptor show --library L [--level N] [--limit N] [--json]
    ragspine query "..." --raptor        RAPTOR for this query (RAGSPINE_RAPTOR for every query)

A build needs vectors (hybrid mode, an embedding backend): in economy mode it is refused with
one line, as is ``query --raptor``. ``show`` prints synthesis texts — probes the tree searches
with, never evidence: a query never returns them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ragspine.cli.common import Subcommands, stack_from_args
from ragspine.registries import RAPTOR_SUMMARIZERS

__all__ = ["add_raptor_commands", "add_raptor_flag", "cmd_raptor", "raptor_changes"]


def add_raptor_flag(query: argparse.ArgumentParser) -> None:
    query.add_argument("--raptor", action="store_true", default=None,
                       help="search the library's RAPTOR tree too: synthesis hits as their leaves (default: RAGSPINE_RAPTOR;"
                       " needs hybrid mode and `ragspine raptor build`)")


def raptor_changes(args: argparse.Namespace) -> dict[str, Any]:
    """``query --raptor`` as a setting change."""
    return {"raptor": True} if getattr(args, "raptor", None) else {}


def add_raptor_commands(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``raptor`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    raptor = sub.add_parser("raptor", help="RAPTOR trees: build, status, show")
    actions = raptor.add_subparsers(dest="raptor_action", required=True, metavar="ACTION")
    build = actions.add_parser("build", parents=[common], help="build (or rebuild) libraries' trees from their chunk vectors")
    build.add_argument("--library", action="append", help="library (repeatable; default: all)")
    build.add_argument("--force", action="store_true", help="build even when the stored tree is current")
    build.add_argument("--summarizer", type=str.lower, choices=RAPTOR_SUMMARIZERS.names(),
                       help="who writes the synthesis texts (default: RAGSPINE_RAPTOR_SUMMARIZER)")
    status = actions.add_parser("status", parents=[common], help="each library's tree: size, model, current or stale")
    status.add_argument("--library", action="append", help="library (repeatable; default: all)")
    show = actions.add_parser("show", parents=[common], help="a library's synthesis nodes (text, children, leaves)")
    show.add_argument("--library", required=True)
    show.add_argument("--level", type=int, help="only nodes of this level")
    show.add_argument("--limit", type=int, default=20, help="nodes printed (default: 20)")
    show.add_argument("--json", action="store_true", help="print the nodes as JSON (without vectors)")


def _libraries(stack: Any, wanted: list[str] | None) -> list[str]:
    from ragspine.errors import ConfigError

    known = [lib.library_id for lib in stack.libraries()]
    for name in wanted or []:
        if name not in known:
            raise ConfigError(f"unknown library {name!r} (see `ragspine libraries`)")
    return list(dict.fromkeys(wanted)) if wanted else known


def cmd_raptor(args: argparse.Namespace) -> int:
    return {"build": _build, "status": _status, "show": _show}[args.raptor_action](args)


def _build(args: argparse.Namespace) -> int:
    from ragspine.retrieval.raptor.base import RaptorOptions
    from ragspine.retrieval.raptor.build import economy_refusal, rebuild
    from ragspine.retrieval.raptor.summarize import make_summarizer

    changes = {"raptor_summarizer": args.summarizer} if args.summarizer else {}
    with stack_from_args(args, **changes) as stack:
        names = _libraries(stack, args.library)
        if not names:
            print("no libraries")
            return 0
        options = RaptorOptions.from_settings(stack.settings)
        for name in names:  # every library's refusal before any work
            pipeline = stack.pipeline(name)
            if pipeline.embedding_backend is None:
                raise economy_refusal(name, pipeline.mode.name)
        summarizer = make_summarizer(options.summarizer, **stack.needs(RAPTOR_SUMMARIZERS, options.summarizer))
        for name in names:
            tree, outcome = rebuild(stack.pipeline(name), stack.raptor_store(name), options=options, summarizer=summarizer,
                                    force=args.force)
            if tree is None:
                print(f"{name}: the tree is current (the library has not changed); --force rebuilds it")
                continue
            info = tree.info
            print(f"{name}: {info.nodes} synthesis node(s) over {info.chunks} chunk(s), {info.levels} level(s),"
                  f" {info.build_seconds:.2f}s ({options.summarizer})")
    return 0


def _status(args: argparse.Namespace) -> int:
    from ragspine.retrieval.chunking.chunk_store import ChangeLog
    from ragspine.retrieval.raptor.build import describe_tree

    with stack_from_args(args, retrieval_mode="economy") as stack:
        names = _libraries(stack, args.library)
        if not names:
            print("no libraries")
        for name in names:
            store = stack.db.chunk_store(name)
            seq = store.change_seq() if isinstance(store, ChangeLog) else None
            print(f"{name}: {describe_tree(stack.raptor_store(name).info(), seq)}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from ragspine.errors import ConfigError

    with stack_from_args(args, retrieval_mode="economy") as stack:
        _libraries(stack, [args.library])
        tree = stack.raptor_store(args.library).load()
    if tree is None:
        raise ConfigError(f"library {args.library!r} has no RAPTOR tree: run `ragspine raptor build --library {args.library}`")
    nodes = [n for n in tree.nodes if args.level is None or n.level == args.level][: max(args.limit, 0)]
    if args.json:
        print(json.dumps([{"node_id": n.node_id, "level": n.level, "is_synthesis": True, "written_by": n.written_by,
                           "text": n.text, "children": list(n.children),
                           "leaves": [leaf.__dict__ for leaf in n.leaves]} for n in nodes], ensure_ascii=False, indent=2))
        return 0
    print(f"{args.library}: {tree.info.nodes} node(s); synthesis texts are probes, never evidence", file=sys.stderr)
    for n in nodes:
        print(f"{n.node_id}  level {n.level}  {len(n.leaves)} leaves in {len(n.doc_ids)} document(s)  ({n.written_by})")
        print("   " + " ".join(n.text.split())[:300])
        print("   leaves: " + ", ".join(f"{leaf.chunk_id} ({leaf.source_locator})" for leaf in n.leaves[:6])
              + (" ..." if len(n.leaves) > 6 else ""))
    return 0
