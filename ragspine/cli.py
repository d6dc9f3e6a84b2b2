"""``ragspine`` — the command line.

    ragspine ingest PATH... --library NAME   add or replace documents (.txt/.md)
    ragspine query "..." [--library L] [--filter FIELD OP VALUE] [--mode M] [--top-k N] [--json]
    ragspine libraries                       list libraries
    ragspine stats                           counts and the resolved stack
    ragspine config                          every RAGSPINE_* setting as resolved
    ragspine demo                            ingest a bundled corpus and answer questions
    ragspine migrate [--url URL] [--schema S] [--revision REV] [--downgrade]
                                             apply the PostgreSQL schema revisions (Alembic)
    ragspine serve [--host H] [--port P] [--workers N]   the HTTP service (FastAPI on uvicorn)
    ragspine worker [--burst]                run ingest jobs from the Redis job queue (RQ)

Bad input exits with status 2 and one line on stderr naming the problem; nothing is
written, so the previous version of every document stays active.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Any, Iterator, NoReturn, Sequence

from ragspine import __version__
from ragspine.config import describe, filter_limits, load_settings
from ragspine.errors import RagspineError
from ragspine.registries import CHUNKERS
from ragspine.retrieval.filtering.filters import (
    OPERATORS,
    FilterCondition,
    MetadataFilter,
)
from ragspine.retrieval.mode import RETRIEVAL_MODES
from ragspine.retrieval.sensitivity import reserved_key

EXIT_USAGE = 2


class CliError(RagspineError):
    pass


class _Parser(argparse.ArgumentParser):
    """Usage errors, too, are one line on stderr (subcommand parsers inherit this class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ragspine", description="Cited, RESTRICTED-free retrieval.")
    parser.add_argument("--version", action="version", version=f"ragspine {__version__}")
    parser.add_argument("--db", help="SQLite chunk store (default: RAGSPINE_CHUNK_STORE)")
    parser.add_argument("--mode", help=f"retrieval mode: {'|'.join(RETRIEVAL_MODES)} (default: RAGSPINE_RETRIEVAL_MODE)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = sub.add_parser("ingest", help="add or replace documents from files or directories")
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--library", required=True, help="library to ingest into (created if new)")
    ingest.add_argument("--description", help="library description (used by the keyword router)")
    ingest.add_argument("--sensitivity", help="sensitivity of documents without one in front matter")
    ingest.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata for every document")
    ingest.add_argument("--no-embed", action="store_true", help="skip computing vectors now (done lazily at query time)")
    ingest.add_argument(
        "--force", action="store_true",
        help="write a new version even of documents whose stored version is identical (default: skip them, so an"
        " interrupted ingest resumes where it stopped)",
    )
    ingest.add_argument("--batch", type=_positive_int, default=5000, metavar="CHUNKS", help="chunks per transaction (default: 5000)")
    ingest.add_argument(
        "--chunker", type=str.lower, choices=CHUNKERS.names(), help="how documents are cut into chunks (default: RAGSPINE_CHUNKER)"
    )

    query = sub.add_parser("query", help="retrieve cited snippets")
    query.add_argument("query")
    query.add_argument("--library", action="append", help="library to search (repeatable; default: all)")
    query.add_argument(
        "--filter", action="append", nargs=3, default=[], metavar=("FIELD", "OP", "VALUE"),
        help=f"metadata filter, OP one of {', '.join(OPERATORS)}; VALUE is JSON or text",
    )
    query.add_argument("--top-k", type=int, default=5)
    query.add_argument(
        "--strict-filters", action="store_true",
        help="when nothing matches the filters, return nothing (default: search once more without them, and say so)",
    )
    query.add_argument("--json", action="store_true", help="print the snippets as JSON")

    sub.add_parser("libraries", help="list libraries")
    sub.add_parser("stats", help="counts and the resolved stack")
    sub.add_parser("config", help="print every RAGSPINE_* setting as resolved")
    demo = sub.add_parser("demo", help="ingest a bundled corpus and answer questions")
    demo.add_argument("--keep", action="store_true", help="keep the demo database (printed at the end)")
    demo.add_argument(
        "--stack", action="store_true",
        help="run on the configured stores (RAGSPINE_CHUNK_STORE, ...) instead of a temporary SQLite file",
    )
    migrate = sub.add_parser("migrate", help="apply the PostgreSQL schema revisions (Alembic)")
    migrate.add_argument("--url", help="postgresql://... (default: RAGSPINE_CHUNK_STORE)")
    migrate.add_argument("--schema", help="schema holding the tables (default: RAGSPINE_PG_SCHEMA, else public)")
    migrate.add_argument("--revision", help="target revision (default: head, or base with --downgrade)")
    migrate.add_argument("--downgrade", action="store_true", help="downgrade to --revision instead of upgrading")
    serve = sub.add_parser("serve", help="run the HTTP service (FastAPI on uvicorn; OpenAPI at /docs)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument("--workers", type=int, default=1, help="server processes (default: 1)")
    worker = sub.add_parser("worker", help="run ingest jobs from the Redis job queue (RQ)")
    worker.add_argument("--burst", action="store_true", help="stop when the queue is empty")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except (RagspineError, ValueError) as exc:
        print(f"ragspine: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("ragspine: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `ragspine query ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _settings(args: argparse.Namespace, **changes: Any):  # type: ignore[no-untyped-def]
    settings = load_settings()
    if args.db:
        changes["chunk_store"] = args.db
    return settings.replace(**changes) if changes else settings


def _stack(args: argparse.Namespace, **changes: Any):  # type: ignore[no-untyped-def]
    from ragspine.stack import Stack

    return Stack(_settings(args, **changes), mode=args.mode)


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ragspine.documents import collect_files, read_document
    from ragspine.retrieval.chunking.chunk_store import DocumentChunks

    defaults = dict(_parse_meta(item) for item in args.meta)
    files = collect_files(args.paths)
    seen: dict[str, str] = {}
    for path, root in tqdm(files, desc="check", unit="file", disable=None, leave=False):
        doc = read_document(path, root, defaults=defaults, sensitivity=args.sensitivity)  # every file, before any write
        if doc.doc_id in seen:
            raise CliError(f"{doc.source}: doc_id {doc.doc_id!r} is also used by {seen[doc.doc_id]}")
        seen[doc.doc_id] = doc.source
    with _stack(args, **({"chunker": args.chunker} if args.chunker else {})) as stack:
        stack.ensure_library(args.library, args.description)
        index = stack.pipeline(args.library)

        def planned() -> Iterator[DocumentChunks]:  # streamed: one file in memory at a time
            for path, root in files:
                doc = read_document(path, root, defaults=defaults, sensitivity=args.sensitivity)
                yield DocumentChunks(doc.doc_id, index.chunker.chunk(
                    doc.text, doc.doc_id, title=doc.title, metadata=doc.metadata, sensitivity=doc.sensitivity,
                    source=doc.source, source_offset=doc.body_offset,
                ), doc.valid_as_of)

        with tqdm(total=len(files), desc=f"ingest → {args.library}", unit="doc", disable=None) as bar:

            def progress(docs: int, chunks: int) -> None:
                bar.update(docs)
                bar.set_postfix(chunks=chunks, refresh=False)

            report = index.ingest_many(planned(), batch_chunks=args.batch, resume=not args.force, progress=progress)
        embedded = 0
        if index.embedding_backend is not None and not args.no_embed:
            with tqdm(total=len(index.retriever.index), desc="embed", unit="chunk", disable=None) as bar:
                embedded = index.sync_vectors(progress=bar.update)
        print(f"ingested {report.written} document(s), {report.chunks} chunk(s) into {args.library!r}"
              + (f"; {report.skipped} unchanged document(s) skipped" if report.skipped else "")
              + (f"; embedded {embedded} chunk(s)" if embedded else ""))
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    if args.top_k <= 0:
        raise CliError(f"--top-k must be positive, got {args.top_k}")
    filters = MetadataFilter(tuple(FilterCondition(f, op, _parse_value(op, v)) for f, op, v in args.filter))
    filter_limits(_settings(args)).check(filters)
    with _stack(args) as stack:
        retriever = stack.retriever(args.library, retry_without_filters=not args.strict_filters)
        answer = retriever.search(args.query, filters=filters or None, top_k=args.top_k)
    snippets = answer.snippets
    if answer.filters_dropped:
        print("ragspine: note: no snippet matched the filters; these results ignore them "
              "(--strict-filters returns none instead)", file=sys.stderr)
    if args.json:
        print(json.dumps(snippets, ensure_ascii=False, indent=2))
        return 0
    if not snippets:
        print("no matching snippets")
    for rank, s in enumerate(snippets, 1):
        sc = s["scores"]
        print(f"{rank}. [{s['library_id']}] {s['title']}  ({s['doc_id']})")
        print(f"   cite: {s['source_locator']}   fused {sc['fused']:.4f}  bm25 {sc['bm25']:.3f}  vector {sc['vector']:.3f}")
        print("   " + " ".join(s["text"].split())[:300])
    return 0


def cmd_libraries(args: argparse.Namespace) -> int:
    with _stack(args, retrieval_mode="economy") as stack:
        libs = stack.libraries()
    if not libs:
        print("no libraries yet: ragspine ingest PATH --library NAME")
    for lib in libs:
        print(f"{lib.library_id}\t{lib.documents} docs\t{lib.chunks} chunks\t{lib.description}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with _stack(args) as stack:
        libs = stack.libraries()
        stored = sum(stack.db.chunk_store(lib.library_id).count(include_inactive=True) for lib in libs)
        for role, value in stack.describe():
            print(f"{role + ':':17s}{value}")
        print(f"{'libraries:':17s}{len(libs)}")
        print(f"{'documents:':17s}{sum(lib.documents for lib in libs)} active")
        print(f"{'chunks:':17s}{sum(lib.chunks for lib in libs)} active, {stored} stored (all versions)")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from ragspine.stack import describe_stack

    settings = _settings(args)
    for role, value in describe_stack(settings, args.mode):
        print(f"{role + ':':17s}{value}")
    print()
    for env, value, help_text in describe(settings):
        shown = "***" if value != "None" and ("KEY" in env or "PASSWORD" in env or "TOKEN" in env) else value
        print(f"{env}={shown}\t# {help_text}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ragspine.demo import run_demo

    if args.stack:
        with _stack(args) as stack:
            report = run_demo(stack)
        return 1 if report.restricted_leaked else 0
    tmpdir = None if args.db else tempfile.mkdtemp(prefix="ragspine-demo-")
    workdir = args.db or f"{tmpdir}/demo.db"
    stack_args = argparse.Namespace(db=workdir, mode=args.mode)
    try:
        with _stack(stack_args) as stack:
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


def cmd_migrate(args: argparse.Namespace) -> int:
    from ragspine.stores.postgres.engine import is_postgres_url, redact

    settings = _settings(args)
    url = args.url or settings.chunk_store
    if not is_postgres_url(url):
        raise CliError(f"migrate needs a postgresql:// URL (--url or RAGSPINE_CHUNK_STORE), got {redact(url)!r}")
    from ragspine.stores.postgres.migrate import migrate

    schema = args.schema or settings.pg_schema
    before, after = migrate(url, schema=schema, revision=args.revision, down=args.downgrade)
    print(f"{redact(url)}{f' (schema {schema})' if schema else ''}: revision {before or 'base'} -> {after or 'base'}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    if args.workers <= 0 or not 0 < args.port < 65536:
        raise CliError("--workers must be positive and --port within 1..65535")
    try:
        import uvicorn
    except ImportError:
        from ragspine.errors import MissingDependencyError

        raise MissingDependencyError("uvicorn", "server", "ragspine serve") from None
    from ragspine.config import SETTINGS

    changes = {"chunk_store": args.db} if args.db else {}
    if args.mode:
        changes["retrieval_mode"] = args.mode
    for key, value in changes.items():  # server processes read their settings from the environment
        os.environ[SETTINGS[key].env] = value
    settings = _settings(args)  # a bad setting fails here, once, before uvicorn starts
    # SIGTERM/SIGINT: stop accepting, let in-flight requests finish (each is bounded by its
    # deadline), then stop — never wait longer than that
    uvicorn.run(
        "ragspine.service.app:create_app", factory=True, host=args.host, port=args.port, workers=args.workers,
        timeout_graceful_shutdown=int(settings.request_timeout) + 5,
    )
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from ragspine.service.jobs import run_worker

    return run_worker(_settings(args, **({"retrieval_mode": args.mode} if args.mode else {})), burst=args.burst)


def _positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {raw!r}")
    return value


def _parse_meta(item: str) -> tuple[str, Any]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise CliError(f"--meta {item!r} is not KEY=VALUE")
    field = reserved_key(key)
    if field is not None:  # else e.g. Sensitivity=RESTRICTED would be plain metadata
        hint = "--sensitivity" if field == "sensitivity" else "front matter"
        raise CliError(f"--meta {key}=... is not metadata; set {field} with {hint}")
    return key, _json_or_text(value)


def _parse_value(op: str, raw: str) -> Any:
    op = op.lower()
    value = _json_or_text(raw)
    if op in ("in", "nin", "between") and isinstance(value, str):
        value = [_json_or_text(part.strip()) for part in value.split(",")] if value else []
    elif op in ("in", "nin") and not isinstance(value, list):  # one JSON value: a one-item list
        value = [value]
    return value


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


_COMMANDS = {
    "ingest": cmd_ingest,
    "query": cmd_query,
    "libraries": cmd_libraries,
    "stats": cmd_stats,
    "config": cmd_config,
    "demo": cmd_demo,
    "migrate": cmd_migrate,
    "serve": cmd_serve,
    "worker": cmd_worker,
}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
