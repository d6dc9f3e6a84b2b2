"""``ragspine show LOCATOR``: the cited passage, its page, and the text around it.

    ragspine show 'report.pdf#char=1200,1480' [--library L] [--context N] [--json]
    ragspine show 'report.pdf#3' --library L          a chunk_id works too

The passage is what the library's store holds (what a snippet cites), never re-read from the
file; the context is the document's neighbouring stored text (:mod:`ragspine.retrieval.passage`).
RESTRICTED text is never printed: such a locator is a one-line refusal, as is one that does
not resolve.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from ragspine.cli.common import CliError, Subcommands, stack_from_args
from ragspine.retrieval.passage import DEFAULT_CONTEXT_CHARS, Passage, find_passage
from ragspine.retrieval.snippet import page_label

__all__ = ["add_show_command", "cmd_show", "render_passage"]

OPEN, CLOSE = ">>>", "<<<"  # the passage's marks in the context


def add_show_command(sub: Subcommands) -> None:
    """Add ``show`` to the CLI's subcommands."""
    show = sub.add_parser("show", help="print a cited passage (a snippet's source_locator) with its page and context")
    show.add_argument("locator", help="a snippet's source_locator (path#char=start,end) or chunk_id")
    show.add_argument("--library", action="append", help="library to look in (repeatable; default: every library)")
    show.add_argument("--context", type=int, default=DEFAULT_CONTEXT_CHARS, metavar="N",
                      help=f"characters of context either side (default: {DEFAULT_CONTEXT_CHARS}; 0: none)")
    show.add_argument("--json", action="store_true", help="print the passage as JSON")


def cmd_show(args: argparse.Namespace) -> int:
    if args.context < 0:
        raise CliError(f"--context must be 0 or more, got {args.context}")
    found: list[Passage] = []
    with stack_from_args(args, retrieval_mode="economy") as stack:
        known = [lib.library_id for lib in stack.libraries()]
        for name in args.library or []:
            if name not in known:
                raise CliError(f"unknown library {name!r} (see `ragspine libraries`)")
        names = list(dict.fromkeys(args.library)) if args.library else known
        for name in names:
            passage = find_passage(stack.db.chunk_store(name), args.locator, context=args.context)
            if passage is not None:
                found.append(passage)
    if not found:
        where = f"library {names[0]!r}" if len(names) == 1 else f"{len(names)} libraries" if names else "no library (none yet)"
        raise CliError(f"{args.locator}: no document cited this way in {where}; give a snippet's source_locator or chunk_id")
    if len(found) > 1:
        libraries = ", ".join(repr(p.library_id) for p in found)
        raise CliError(f"{args.locator}: found in libraries {libraries}; choose one with --library")
    passage = found[0]
    if args.json:
        print(json.dumps(asdict(passage), ensure_ascii=False, indent=2))
    else:
        print(render_passage(passage))
    return 0


def render_passage(passage: Passage) -> str:
    """A header line (locator, title, document, library, page) and the passage between
    :data:`OPEN` and :data:`CLOSE` in its context (``…``: text not shown, or not held)."""
    where = f", {page_label(passage.page, passage.page_end)}" if passage.page is not None else ""
    header = f"{passage.locator}  {passage.title or passage.doc_id} ({passage.doc_id}, library {passage.library_id}){where}"
    return f"{header}\n\n{passage.before}{OPEN}{passage.text}{CLOSE}{passage.after}"
