"""``ragspine`` — the command line.

    ragspine ingest PATH... --library NAME   add or replace documents (.txt/.md)
    ragspine query "..." [--library L] [--filter FIELD OP VALUE] [--mode M] [--top-k N] [--llm SPEC] [--json]
                   [--query-transform T] [--decompose D] [--adaptive A] [--corrective] [--trace] [--raptor]
    ragspine libraries                       list libraries
    ragspine stats                           counts and the resolved stack
    ragspine config                          every RAGSPINE_* setting as resolved
    ragspine demo                            ingest a bundled corpus and answer questions
    ragspine migrate [--url URL] [--schema S] [--revision REV] [--downgrade] [--rebuild-postings LIB ...]
                                             apply the PostgreSQL schema revisions (Alembic)
    ragspine serve [--host H] [--port P] [--workers N]   the HTTP service (FastAPI on uvicorn)
    ragspine worker [--burst]                run ingest jobs from the Redis job queue (RQ)
    ragspine facts ingest FILE | facts list  the structured channel's facts (see ragspine/structured/cli.py)
    ragspine metric METRIC --entity E --period P [--channel C] [--as-of DATE] [--json]
                                             one number from the fact table: found / not_found / unrecognized_param
    ragspine graph edges|rollup|peers|trace  the relation graph: cited edges, subsidiary roll-up, peers, derivations
    ragspine workflow preview [--format json|yaml]   the pipeline as a Dify workflow picture (not executable)
    ragspine ask "question" [--library L] [--as-of DATE] [--json]
                                             the agent: structured, narrative or composite, with sources
    ragspine raptor build|status|show [--library L]   RAPTOR trees (see ragspine/retrieval/raptor/cli.py)

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
from ragspine.agent.cli import add_ask_command, cmd_ask
from ragspine.config import describe, filter_limits, load_settings
from ragspine.errors import RagspineError
from ragspine.graph.cli import add_graph_commands, cmd_graph
from ragspine.profile import PROFILES
from ragspine.registries import CHUNKERS, LLM_PROVIDERS, POSTPROCESSORS, RERANKERS
from ragspine.retrieval.filtering.cli import add_filter_flag, describe_filter, filter_from_args
from ragspine.retrieval.mode import RETRIEVAL_MODES
from ragspine.retrieval.raptor.cli import add_raptor_commands, add_raptor_flag, cmd_raptor, raptor_changes
from ragspine.retrieval.reasoning.cli import add_reasoning_flags, print_reasoning, reasoning_changes
from ragspine.retrieval.sensitivity import reserved_key
from ragspine.structured.cli import add_structured_commands, cmd_facts, cmd_metric
from ragspine.workflow.cli import add_workflow_commands, cmd_workflow

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
    db_help = "SQLite chunk store (default: RAGSPINE_CHUNK_STORE)"
    mode_help = f"retrieval mode: {'|'.join(RETRIEVAL_MODES)} (default: RAGSPINE_RETRIEVAL_MODE)"
    parser.add_argument("--db", help=db_help)
    parser.add_argument("--mode", help=mode_help)
    parser.add_argument("--contextual", type=str.lower, choices=["none", "header", "on", "off"], help=argparse.SUPPRESS)
    profile_help = f"named recipe: {'|'.join(PROFILES)} (default: RAGSPINE_PROFILE, else seed); a RAGSPINE_* variable overrides its field"
    parser.add_argument("--profile", help=profile_help)
    common = _Parser(add_help=False)  # the same options after the command too
    common.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
    common.add_argument("--profile", default=argparse.SUPPRESS, help=profile_help)
    common.add_argument("--mode", default=argparse.SUPPRESS, help=mode_help)
    common.add_argument(
        "--contextual", type=str.lower, choices=["none", "header", "on", "off"], default=argparse.SUPPRESS,
        help="contextual header (title · entity · period · heading) on the text BM25 indexes and the dense leg embeds"
        " (default: RAGSPINE_CONTEXTUAL)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    class _Sub:
        def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
            return subparsers.add_parser(name, parents=[common], **kwargs)

    sub = _Sub()

    ingest = sub.add_parser("ingest", help="add or replace documents from files or directories")
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--library", required=True, help="library to ingest into (created if new)")
    ingest.add_argument("--description", help="library description (used by the keyword router)")
    ingest.add_argument("--sensitivity", help="sensitivity of documents without one in front matter")
    ingest.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="metadata for every document")
    ingest.add_argument(
        "--no-embed", action="store_true",
        help="write the chunks only; queries answer from BM25 (and say the dense leg is incomplete) until `ragspine embed`",
    )
    ingest.add_argument(
        "--force", action="store_true",
        help="write a new version even of documents whose stored version is identical (default: skip them, so an"
        " interrupted ingest resumes where it stopped)",
    )
    ingest.add_argument(
        "--skip-bad", action="store_true",
        help="ingest the good files when some are bad (each bad one is listed); default: refuse the run, write nothing",
    )
    ingest.add_argument(
        "--replace-source", action="store_true",
        help="let a file replace the library's document of the same default doc_id although that one was read from"
        " another path (a moved file); default: refuse such a file",
    )
    ingest.add_argument("--batch", type=_positive_int, default=5000, metavar="CHUNKS", help="chunks per transaction (default: 5000)")
    ingest.add_argument(
        "--chunker", type=str.lower, choices=CHUNKERS.names(), help="how documents are cut into chunks (default: RAGSPINE_CHUNKER)"
    )

    query = sub.add_parser("query", help="retrieve cited snippets")
    query.add_argument("query")
    query.add_argument("--library", action="append", help="library to search (repeatable; default: all)")
    add_filter_flag(query)
    query.add_argument("--top-k", type=int, default=5)
    query.add_argument(
        "--strict-filters", action="store_true",
        help="when nothing matches the filters, return nothing (default: search once more without them, and say so)",
    )
    query.add_argument("--json", action="store_true", help="print the snippets as JSON")
    query.add_argument("--reranker", type=str.lower, choices=RERANKERS.names() + list(RERANKERS.aliases),
                       help="reorder the fused head (default: RAGSPINE_RERANKER)")
    query.add_argument("--rerank-depth", type=_positive_int, metavar="N", 
                       help="fused candidates the reranker and postprocessors see (default: RAGSPINE_RERANK_DEPTH)")
    query.add_argument("--postprocessor", metavar="A,B", help=f"chain after rerank: {POSTPROCESSORS.choices(', ')} (default: RAGSPINE_POSTPROCESSOR)")
    query.add_argument("--fusion-weights", metavar="LEG=W,...",
                       help="weighted RRF, e.g. bm25=1,vector=0.5; adaptive; zscore (score fusion) (default: RAGSPINE_FUSION_WEIGHTS)")
    query.add_argument(
        "--llm", metavar="SPEC", help=f"language model of the listwise judge, LLM router and LLM filter extractor: {LLM_PROVIDERS.choices('|')}"
        " or an OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (default: RAGSPINE_LLM)",
    )
    add_reasoning_flags(query)
    add_raptor_flag(query)

    embed = sub.add_parser("embed", help="compute the vectors a library lacks (after `ingest --no-embed`, a failed vector write)")
    embed.add_argument("--library", action="append", help="library to embed (repeatable; default: all)")

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
    migrate.add_argument("--rebuild-postings", nargs="+", metavar="LIBRARY",
                         help="after upgrading, rewrite these libraries' BM25 postings in PostgreSQL (written with RAGSPINE_PG_POSTINGS=off)")
    serve = sub.add_parser("serve", help="run the HTTP service (FastAPI on uvicorn; OpenAPI at /docs)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument("--workers", type=int, default=1, help="server processes (default: 1)")
    worker = sub.add_parser("worker", help="run ingest jobs from the Redis job queue (RQ)")
    worker.add_argument("--burst", action="store_true", help="stop when the queue is empty")
    add_structured_commands(sub, common)
    add_graph_commands(sub, common)
    add_workflow_commands(sub, common)
    add_ask_command(sub, common)
    add_raptor_commands(sub, common)
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
    profile = getattr(args, "profile", None)
    settings = load_settings({**os.environ, "RAGSPINE_PROFILE": profile} if profile else None)
    if args.db:
        changes["chunk_store"] = args.db
    if getattr(args, "contextual", None):
        from ragspine.retrieval.contextual import parse_contextual

        changes["contextual"] = parse_contextual(args.contextual)
    return settings.replace(**changes) if changes else settings


def _stack(args: argparse.Namespace, **changes: Any):  # type: ignore[no-untyped-def]
    from ragspine.stack import Stack

    return Stack(_settings(args, **changes), mode=args.mode)


def cmd_ingest(args: argparse.Namespace) -> int:
    from ragspine.documents import collect_files, read_document
    from ragspine.progress import progress

    defaults = dict(_parse_meta(item) for item in args.meta)
    max_bytes = _settings(args).max_file_bytes
    problems: list[str] = []
    files = collect_files(args.paths, problems)
    seen: dict[str, str] = {}
    by_path: dict[str, str] = {}  # default doc_ids (the file's path): doc_id -> the file
    good: list[tuple[Any, Any]] = []
    with progress(total=len(files), desc="check", unit="file", leave=False) as bar:
        for path, root in files:  # every file, before any write; every problem, not just the first
            try:
                doc = read_document(path, root, defaults=defaults, sensitivity=args.sensitivity, max_bytes=max_bytes)
                if doc.doc_id in seen:
                    raise CliError(f"{doc.source}: doc_id {doc.doc_id!r} is also used by {seen[doc.doc_id]};"
                                   " give one of them its own doc_id in front matter")
            except RagspineError as exc:
                problems.append(str(exc))
            else:
                seen[doc.doc_id] = doc.source
                if doc.id_from_path:
                    by_path[doc.doc_id] = doc.source
                good.append((path, root))
            bar.update(1)
    _refuse_or_skip(problems, args.skip_bad)
    if not good:
        raise CliError("no file to ingest: every one was bad")
    files, args.max_file_bytes = good, max_bytes
    with _stack(args, **({"chunker": args.chunker} if args.chunker else {})) as stack:
        stack.preflight(args.library)  # stores, extension, model, vector space: before the first write
        new_library = stack.library(args.library) is None
        if not new_library and by_path and not args.replace_source:
            files = _without_id_clashes(stack, args, files, by_path)
        stack.ensure_library(args.library, args.description)
        try:
            return _ingest_into(stack, args, files, defaults)
        except RagspineError:
            if new_library:  # all or nothing: a library this run created does not outlive its failure
                stack.delete_library(args.library)
            raise


def _refuse_or_skip(problems: list[str], skip_bad: bool) -> None:
    """Refuse the run naming every problem, or (``--skip-bad``) list them as skipped."""
    if problems and not skip_bad:
        if len(problems) == 1:
            raise CliError(problems[0])
        raise CliError(f"{len(problems)} bad files, nothing was written (--skip-bad ingests the others):\n  "
                       + "\n  ".join(problems))
    for problem in problems:
        print(f"ragspine: skipped: {problem}", file=sys.stderr)


def _without_id_clashes(stack: Any, args: argparse.Namespace, files: Any, by_path: dict[str, str]) -> Any:
    """``files`` less those whose default doc_id is the library's document read from another
    file (two folders' ``copyright.txt``): that one is never replaced silently — the run is
    refused, or with ``--skip-bad`` the file is skipped, each named with both paths and the fix."""
    from ragspine.documents import other_sources

    clashes = other_sources(stack.db.chunk_store(args.library), by_path)
    problems = [
        f"{by_path[doc_id]}: doc_id {doc_id!r} (from its path) is already library {args.library!r}'s document read from"
        f" {recorded}; give this file its own doc_id in front matter, or pass --replace-source to replace that document"
        for doc_id, recorded in clashes.items()
    ]
    _refuse_or_skip(problems, args.skip_bad)
    skipped = {by_path[doc_id] for doc_id in clashes}
    kept = [(path, root) for path, root in files if str(path) not in skipped]
    if not kept:
        raise CliError("no file to ingest: every one was bad")
    return kept


def _ingest_into(stack: Any, args: argparse.Namespace, files: Any, defaults: dict[str, Any]) -> int:
    from ragspine.documents import read_document
    from ragspine.progress import progress
    from ragspine.retrieval.chunking.chunk_store import DocumentChunks

    index = stack.pipeline(args.library)  # the library's recipe: a choice that would change what it stores is refused here
    stack.record_profile(args.library)
    chunkers: dict[str, Any] = {}

    def chunker_for(name: str | None) -> Any:  # front matter `chunker:` picks a file's own
        if name is None or name == stack.settings.chunker:
            return index.chunker
        if name not in chunkers:
            chunkers[name] = stack.chunker(name, index.embedding_backend)
        return chunkers[name]

    def planned() -> Iterator[DocumentChunks]:  # streamed: one file in memory at a time
        for path, root in files:
            doc = read_document(path, root, defaults=defaults, sensitivity=args.sensitivity, max_bytes=args.max_file_bytes)
            yield DocumentChunks(doc.doc_id, chunker_for(doc.chunker).chunk(
                doc.text, doc.doc_id, title=doc.title, metadata=doc.metadata, sensitivity=doc.sensitivity,
                source=doc.source, source_offset=doc.body_offset,
            ), doc.valid_as_of)

    with progress(total=len(files), desc=f"ingest → {args.library}", unit="doc") as bar:

        def advance(docs: int, chunks: int) -> None:
            bar.update(docs)
            bar.set_postfix(chunks=chunks, refresh=False)

        report = index.ingest_many(planned(), batch_chunks=args.batch, resume=not args.force, progress=advance)
    embedded = 0
    if index.embedding_backend is not None and not args.no_embed:
        embedded = _embed(index, args.library)
    print(f"ingested {report.written} document(s), {report.chunks} chunk(s) into {args.library!r}"
          + (f"; {report.skipped} unchanged document(s) skipped" if report.skipped else "")
          + (f"; embedded {embedded} chunk(s)" if embedded else "")
          + ("; vectors not computed (--no-embed): run `ragspine embed`" if args.no_embed and index.embedding_backend else ""))
    return 0


def _embed(index: Any, library: str) -> int:
    """Compute the vectors ``index`` lacks, with a progress bar over what the model must embed
    (cached vectors are stored first and not counted)."""
    from ragspine.progress import progress

    with progress(desc=f"embed → {library}", unit="chunk") as bar:

        def expect(n: int) -> None:
            bar.total = n
            if hasattr(bar, "refresh"):
                bar.refresh()

        return int(index.sync_vectors(progress=bar.update, expect=expect))


def cmd_embed(args: argparse.Namespace) -> int:
    with _stack(args) as stack:
        known = [lib.library_id for lib in stack.libraries()]
        names = args.library or known
        if not names:
            print("no libraries")
            return 0
        for name in names:
            if name not in known:
                raise CliError(f"unknown library {name!r} (see `ragspine libraries`)")
            index = stack.pipeline(name)
            if index.embedding_backend is None:
                print(f"{name}: {index.mode.name} mode uses no vectors; nothing to embed (use --mode hybrid to compute them)")
                continue
            embedded = _embed(index, name)
            print(f"{name}: embedded {embedded} chunk(s); every active chunk has its vector")
    return 0


def _ranking_changes(args: argparse.Namespace) -> dict[str, Any]:
    """``ragspine query``'s ranking flags as setting changes, checked (a bad one names itself)."""
    from ragspine.retrieval.ranking import Ranking

    settings = _settings(args)
    ranking = Ranking.of(
        args.reranker or settings.reranker, args.postprocessor or settings.postprocessor,
        args.fusion_weights if args.fusion_weights is not None else settings.fusion_weights,
        args.rerank_depth or settings.rerank_depth,
    )
    changes = {"reranker": ranking.reranker, "postprocessor": ranking.postprocessor, "fusion_weights": ranking.fusion_weights,
               "rerank_depth": ranking.rerank_depth}
    if getattr(args, "llm", None):
        from ragspine.config import check_llm

        changes["llm"] = check_llm(args.llm)
    return changes


def cmd_query(args: argparse.Namespace) -> int:
    if args.top_k <= 0:
        raise CliError(f"--top-k must be positive, got {args.top_k}")
    filters = filter_from_args(args.filter, filter_limits(_settings(args)))
    with _stack(args, **_ranking_changes(args), **reasoning_changes(args), **raptor_changes(args)) as stack:
        retriever = stack.retriever(args.library, retry_without_filters=not args.strict_filters)
        answer = retriever.search(args.query, filters=filters, top_k=args.top_k)
    print_reasoning(answer, args)
    snippets = answer.snippets
    if answer.filters_dropped and filters:
        print(f"ragspine: note: no snippet matched the filters ({describe_filter(filters)}); these results ignore them "
              "(--strict-filters returns none instead)", file=sys.stderr)
    for library, coverage in sorted(answer.dense_incomplete.items()):
        print(f"ragspine: note: library {library!r}: {coverage.missing} of {coverage.total} chunk(s) have no vector yet; "
              f"this answer is BM25 plus the vectors that exist (run `ragspine embed --library {library}`)", file=sys.stderr)
    if args.json:
        print(json.dumps(snippets, ensure_ascii=False, indent=2))
        return 0
    if not snippets:
        print("no matching snippets")
    for rank, s in enumerate(snippets, 1):
        sc = s["scores"]
        print(f"{rank}. [{s['library_id']}] {s['title']}  ({s['doc_id']})")
        rerank = f"  rerank {sc['rerank']:.3f}" if "rerank" in sc else ""
        print(f"   cite: {s['source_locator']}   fused {sc['fused']:.4f}  bm25 {sc['bm25']:.3f}  vector {sc['vector']:.3f}{rerank}")
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
            print(f"{role + ':':19s}{value}")
        print(f"{'libraries:':19s}{len(libs)}")
        print(f"{'documents:':19s}{sum(lib.documents for lib in libs)} active")
        print(f"{'chunks:':19s}{sum(lib.chunks for lib in libs)} active, {stored} stored (all versions)")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from ragspine.stack import describe_stack

    settings = _settings(args)
    for role, value in describe_stack(settings, args.mode):
        print(f"{role + ':':19s}{value}")
    print()
    for role, problem in _store_checks(args):
        print(f"{'check ' + role + ':':24s}{problem or 'ok'}")
    print()
    for env, value, help_text in describe(settings):  # credentials and URL passwords masked
        print(f"{env}={value}\t# {help_text}")
    return 0


def _store_checks(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """Each configured store answers and can work (``ragspine config``, ``migrate``) — a
    SQLite file not created yet is not created by looking."""
    settings = _settings(args)
    path = settings.chunk_store
    if "://" not in path and path != ":memory:" and not os.path.exists(path):
        return [("chunk store", "not created yet (the first ingest creates it)")]
    try:
        with _stack(args) as stack:
            checks: list[tuple[str, str | None]] = stack.check_stores()
            return checks
    except RagspineError as exc:
        return [("stack", str(exc))]


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
        for role, problem in _store_checks(args):
            if problem:  # the schema is fine, but the configured stack cannot work yet: say so, with the fix
                print(f"ragspine: warning: {role}: {problem}", file=sys.stderr)
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


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


_COMMANDS = {
    "ingest": cmd_ingest,
    "query": cmd_query,
    "embed": cmd_embed,
    "libraries": cmd_libraries,
    "stats": cmd_stats,
    "config": cmd_config,
    "demo": cmd_demo,
    "migrate": cmd_migrate,
    "serve": cmd_serve,
    "worker": cmd_worker,
    "facts": cmd_facts,
    "metric": cmd_metric,
    "graph": cmd_graph,
    "workflow": cmd_workflow,
    "ask": cmd_ask,
    "raptor": cmd_raptor,
}


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
