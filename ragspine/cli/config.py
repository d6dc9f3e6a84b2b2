"""``ragspine config`` and ``ragspine migrate``: the resolved settings and stores, the schema.

    ragspine config                          every RAGSPINE_* setting as resolved, each store checked
    ragspine migrate [--url URL] [--schema S] [--revision REV] [--downgrade] [--rebuild-postings LIB ...]
                                             apply the PostgreSQL schema revisions (Alembic)
"""

from __future__ import annotations

import argparse
import os
import sys

from ragspine.cli.common import CliError, Subcommands, settings_from_args, stack_from_args
from ragspine.config import describe
from ragspine.errors import RagspineError

__all__ = ["add_config_command", "add_migrate_command", "cmd_config", "cmd_migrate"]


def add_config_command(sub: Subcommands) -> None:
    """Add ``config`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    sub.add_parser("config", help="print every RAGSPINE_* setting as resolved")


def add_migrate_command(sub: Subcommands) -> None:
    """Add ``migrate``."""
    migrate = sub.add_parser("migrate", help="apply the PostgreSQL schema revisions (Alembic)")
    migrate.add_argument("--url", help="postgresql://... (default: RAGSPINE_CHUNK_STORE)")
    migrate.add_argument("--schema", help="schema holding the tables (default: RAGSPINE_PG_SCHEMA, else public)")
    migrate.add_argument("--revision", help="target revision (default: head, or base with --downgrade)")
    migrate.add_argument("--downgrade", action="store_true", help="downgrade to --revision instead of upgrading")
    migrate.add_argument("--rebuild-postings", nargs="+", metavar="LIBRARY",
                         help="after upgrading, rewrite these libraries' BM25 postings in PostgreSQL (written with RAGSPINE_PG_POSTINGS=off)")


def cmd_config(args: argparse.Namespace) -> int:
    from ragspine.stack import describe_stack

    settings = settings_from_args(args)
    for role, value in describe_stack(settings, args.mode):
        print(f"{role + ':':19s}{value}")
    print()
    for role, problem in store_checks(args):
        print(f"{'check ' + role + ':':24s}{problem or 'ok'}")
    print()
    for env, value, help_text in describe(settings):  # credentials and URL passwords masked
        print(f"{env}={value}\t# {help_text}")
    return 0


def store_checks(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """Each configured store answers and can work (``ragspine config``, ``migrate``) — a
    SQLite file not created yet is not created by looking."""
    settings = settings_from_args(args)
    path = settings.chunk_store
    if "://" not in path and path != ":memory:" and not os.path.exists(path):
        return [("chunk store", "not created yet (the first ingest creates it)")]
    try:
        with stack_from_args(args) as stack:
            checks: list[tuple[str, str | None]] = stack.check_stores()
            return checks
    except RagspineError as exc:
        return [("stack", str(exc))]


def cmd_migrate(args: argparse.Namespace) -> int:
    from ragspine.stores.postgres.engine import is_postgres_url, redact

    settings = settings_from_args(args)
    url = args.url or settings.chunk_store
    if not is_postgres_url(url):
        raise CliError(f"migrate needs a postgresql:// URL (--url or RAGSPINE_CHUNK_STORE), got {redact(url)!r}")
    from ragspine.stores.postgres.migrate import migrate

    schema = args.schema or settings.pg_schema
    before, after = migrate(url, schema=schema, revision=args.revision, down=args.downgrade)
    print(f"{redact(url)}{f' (schema {schema})' if schema else ''}: revision {before or 'base'} -> {after or 'base'}")
    if args.rebuild_postings:
        if args.downgrade:
            raise CliError("--rebuild-postings needs the current schema: drop --downgrade")
        from ragspine.stores.postgres import PostgresDatabase

        db = PostgresDatabase(url, schema=schema)
        try:
            for library in args.rebuild_postings:
                print(f"{library}: postings of {db.rebuild_postings(library):,} chunks rewritten")
        finally:
            db.close()
    if not args.downgrade and url == settings.chunk_store:
        for role, problem in store_checks(args):
            if problem:  # the schema is fine, but the configured stack cannot work yet: say so, with the fix
                print(f"ragspine: warning: {role}: {problem}", file=sys.stderr)
    return 0
