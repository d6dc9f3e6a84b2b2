"""``ragspine demo``: ingest a bundled corpus and answer questions (:mod:`ragspine.demo`).

    ragspine demo [--keep] [--stack]

On a temporary SQLite file (``--db`` names another; ``--keep`` keeps it), or with ``--stack`` on
the configured stores. Exits 1 if a RESTRICTED snippet was returned.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile

from ragspine.cli.common import Subcommands, stack_from_args

__all__ = ["add_demo_command", "cmd_demo"]


def add_demo_command(sub: Subcommands) -> None:
    """Add ``demo`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    demo = sub.add_parser("demo", help="ingest a bundled corpus and answer questions")
    demo.add_argument("--keep", action="store_true", help="keep the demo database (printed at the end)")
    demo.add_argument(
        "--stack", action="store_true",
        help="run on the configured stores (RAGSPINE_CHUNK_STORE, ...) instead of a temporary SQLite file",
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from ragspine.demo import run_demo

    if args.stack:
        with stack_from_args(args) as stack:
            report = run_demo(stack)
        return 1 if report.restricted_leaked else 0
    tmpdir = None if args.db else tempfile.mkdtemp(prefix="ragspine-demo-")
    workdir = args.db or f"{tmpdir}/demo.db"
    try:
        with stack_from_args(args, chunk_store=workdir) as stack:
            report = run_demo(stack)
    finally:
        if tmpdir and not args.keep:  # a temporary database is removed unless --keep
            shutil.rmtree(tmpdir, ignore_errors=True)
    if args.keep or args.db:
        print(f"\ndemo database: {workdir}  (try: ragspine --db {workdir} query \"warranty\")")
    if report.restricted_leaked:
        print("ragspine: error: a RESTRICTED snippet was returned", file=sys.stderr)
        return 1
    return 0
