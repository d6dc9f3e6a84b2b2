"""``ragspine ingest`` and ``ragspine embed``: documents into a library, and their vectors.

    ragspine ingest PATH... --library NAME [--description D] [--sensitivity S] [--meta KEY=VALUE ...]
                    [--no-embed] [--force] [--skip-bad] [--replace-source] [--batch CHUNKS] [--chunker C]
    ragspine embed [--library L ...]

A file's front matter or sidecar may set its ACL (``allow:`` / ``deny:`` / ``acl:``, see
:mod:`ragspine.front_matter`): written with its chunks; when only the ACL changed, the ACL alone
(:class:`ragspine.cli.acl.IngestAcls`: recorded, no new version, nothing re-embedded).

Every file is read and checked before the first write; a bad one refuses the run naming every
problem (``--skip-bad``: ingest the others), so the previous version of every document stays
active. A library the run created does not outlive the run's failure. A file is read once: the
check pass's extraction of a PDF, Word file, ... waits on disk for the write pass
(:class:`~ragspine.read_spool.ReadSpool`), so what is written is what was checked.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Iterator

from ragspine.cli.common import CliError, Subcommands, positive_int, settings_from_args, stack_from_args
from ragspine.errors import RagspineError
from ragspine.registries import CHUNKERS
from ragspine.retrieval.sensitivity import reserved_key

__all__ = ["add_embed_command", "add_ingest_command", "cmd_embed", "cmd_ingest"]


def add_ingest_command(sub: Subcommands) -> None:
    """Add ``ingest`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    ingest = sub.add_parser("ingest", help="add or replace documents from files or directories")
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--library", required=True, help="library to ingest into (created if new)")
    ingest.add_argument("--description", help="library description (used by the keyword router)")
    ingest.add_argument("--sensitivity", help="sensitivity of documents without one in front matter (RESTRICTED here, or in a file, always wins)")
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
    ingest.add_argument("--batch", type=positive_int, default=5000, metavar="CHUNKS", help="chunks per transaction (default: 5000)")
    ingest.add_argument(
        "--chunker", type=str.lower, choices=CHUNKERS.names(), help="how documents are cut into chunks (default: RAGSPINE_CHUNKER)"
    )


def add_embed_command(sub: Subcommands) -> None:
    """Add ``embed`` to the CLI's subcommands."""
    embed = sub.add_parser("embed", help="compute the vectors a library lacks (after `ingest --no-embed`, a failed vector write)")
    embed.add_argument("--library", action="append", help="library to embed (repeatable; default: all)")


def cmd_ingest(args: argparse.Namespace) -> int:
    from ragspine.read_spool import ReadSpool

    with ReadSpool() as spool:  # the check pass's extractions, for the write pass
        args.spool = spool
        return _checked_ingest(args)


def _checked_ingest(args: argparse.Namespace) -> int:
    from ragspine.documents import collect_files, read_document
    from ragspine.progress import progress
    from ragspine.readers.base import ReaderLimits

    defaults = dict(_parse_meta(item) for item in args.meta)
    settings = settings_from_args(args)
    max_bytes, limits = settings.max_file_bytes, ReaderLimits.from_settings(settings)
    problems: list[str] = []
    passed_over: list[str] = []
    files = collect_files(args.paths, problems, images=settings.ocr != "none", passed_over=passed_over)  # images: OCR on
    seen: dict[str, str] = {}
    by_path: dict[str, str] = {}  # default doc_ids (the file's path): doc_id -> the file
    good: list[tuple[Any, Any]] = []
    with progress(total=len(files), desc="check", unit="file", leave=False) as bar:
        for path, root in files:  # every file, before any write; every problem, not just the first
            try:
                doc = read_document(path, root, defaults=defaults, sensitivity=args.sensitivity, max_bytes=max_bytes, limits=limits)
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
                args.spool.put(str(path), doc)
            bar.update(1)
    _refuse_or_skip(problems, args.skip_bad)
    if not good:
        raise CliError("no file to ingest: every one was bad")
    files, args.max_file_bytes, args.reader_limits = good, max_bytes, limits
    with stack_from_args(args, **({"chunker": args.chunker} if args.chunker else {})) as stack:
        stack.preflight(args.library)  # stores, extension, model, vector space: before the first write
        new_library = stack.library(args.library) is None
        if not new_library and by_path and not args.replace_source:
            files = _without_id_clashes(stack, args, files, by_path)
        stack.ensure_library(args.library, args.description)
        try:
            written = _ingest_into(stack, args, files, defaults)
            _list_passed_over(passed_over)  # after the summary: what a directory walk left alone, and why
            return written
        except RagspineError:
            if new_library:  # all or nothing: a library this run created does not outlive its failure
                stack.delete_library(args.library)
            raise


def _list_passed_over(passed_over: list[str], shown: int = 20) -> None:
    """The files a directory walk did not read, and why (on stderr; the first ``shown``)."""
    if not passed_over:
        return
    print(f"ragspine: not read: {len(passed_over)} file(s) of other formats", file=sys.stderr)
    for line in passed_over[:shown]:
        print(f"  {line}", file=sys.stderr)
    if len(passed_over) > shown:
        print(f"  ... and {len(passed_over) - shown} more", file=sys.stderr)


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
    from ragspine.cli.acl import IngestAcls
    from ragspine.documents import chunk_source, read_document
    from ragspine.progress import progress
    from ragspine.retrieval.chunking.chunk_store import DocumentChunks

    recipe = stack.profile_for(args.library)  # the library's: a choice that would change what it stores is refused here
    index = stack.pipeline(args.library, recipe)
    stack.record_profile(args.library, recipe)
    chunkers: dict[str, Any] = {}

    def chunker_for(name: str | None) -> Any:  # front matter `chunker:` picks a file's own, at the library's budget
        if name is None or name == recipe.chunker:
            return index.chunker
        if name not in chunkers:
            chunkers[name] = stack.chunker(name, index.embedding_backend, chars=recipe.chunk_chars, packing=recipe.chunk_packing)
        return chunkers[name]

    acls = IngestAcls(index.store, resume=not args.force)  # front matter / sidecar ACLs: an ACL-only change is no new version

    def planned() -> Iterator[DocumentChunks]:  # streamed: one file in memory at a time
        for path, root in files:
            doc = args.spool.take(str(path)) or read_document(
                path, root, defaults=defaults, sensitivity=args.sensitivity, max_bytes=args.max_file_bytes,
                limits=args.reader_limits)
            chunks = chunk_source(doc, chunker_for(doc.chunker))
            yield DocumentChunks(doc.doc_id, chunks, doc.valid_as_of, acls.carry(doc, chunks))

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
          + (f"; the ACL of {acls.changed} unchanged document(s) changed (no new version)" if acls.changed else "")
          + (f"; embedded {embedded} chunk(s)" if embedded else "")
          + ("; vectors not computed (--no-embed): run `ragspine embed`" if args.no_embed and index.embedding_backend else ""))
    _peak_memory()
    return 0


def _peak_memory() -> None:
    """The process's peak memory, on stderr (a long ingest's cost, next to its rate)."""
    from ragspine.progress import peak_rss_mb

    peak = peak_rss_mb()
    if peak is not None:
        print(f"peak memory: {peak:,.0f} MB", file=sys.stderr)


def _embed(index: Any, library: str) -> int:
    """Compute the vectors ``index`` lacks, with a progress bar over what the model must embed
    (cached vectors are stored first and not counted)."""
    from ragspine.progress import progress

    with progress(desc=f"embed → {library}", unit="chunk") as bar:

        def expect(n: int) -> None:
            bar.total = n
            if hasattr(bar, "refresh"):
                bar.refresh()

        # this process ends next: an in-process vector store is not filled (the embedding cache
        # keeps the vectors; the next process's first query loads them), so memory stays flat
        embedded = int(index.sync_vectors(progress=bar.update, expect=expect, fill_local=False))
    dense = getattr(index.retriever, "dense", None)
    if dense is not None and not dense.vectors_outlive_process:
        print(f"ragspine: warning: library {library!r}: its vectors live in this process only (an in-process vector store and"
              " embedding cache), so later processes' queries have no dense leg; set RAGSPINE_EMBEDDING_CACHE"
              " (sqlite:PATH, redis://...) or a persistent RAGSPINE_VECTOR_STORE", file=sys.stderr)
    return embedded


def cmd_embed(args: argparse.Namespace) -> int:
    with stack_from_args(args) as stack:
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
    _peak_memory()
    return 0


def _parse_meta(item: str) -> tuple[str, Any]:
    from ragspine.front_matter import acl_key

    key, sep, value = item.partition("=")
    if not sep or not key:
        raise CliError(f"--meta {item!r} is not KEY=VALUE")
    if acl_key(key) is not None:  # an ACL is never metadata
        raise CliError(f"--meta {key}=... is not metadata; set a document's ACL in its front matter or sidecar"
                       " (allow: [group:hr]), or with `ragspine acl set`")
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
