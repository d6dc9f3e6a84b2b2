"""``ragspine query``, ``ragspine libraries`` and ``ragspine stats``.

    ragspine query "..." [--library L] [--filter FIELD OP VALUE] [--top-k N] [--strict-filters] [--json]
                   [--reranker R] [--rerank-depth N] [--postprocessor A,B] [--fusion-weights LEG=W,...] [--llm SPEC]
                   [--query-transform T] [--decompose D] [--adaptive A] [--corrective] [--fanout N] [--trace] [--raptor]
                   [--boxes] [--visual] [--as USER [--tenant T]]
    ragspine libraries                       list libraries
    ragspine stats                           counts and the resolved stack

A query runs as no principal unless ``--as USER`` names a user of the tenant (``--tenant T``;
default: the only tenant): then it reads what that user and its groups may (document ACLs,
:mod:`ragspine.cli.acl`). As no principal it reads only documents without an ACL, and says
so on stderr when it left some out.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ragspine.cli.acl import add_viewer_flags, note_left_out, viewer_from_args, visible_hints
from ragspine.cli.common import CliError, Subcommands, positive_int, settings_from_args, stack_from_args
from ragspine.cli.filtering import add_filter_flag, describe_filter, filter_from_args
from ragspine.cli.raptor import add_raptor_flag, raptor_changes
from ragspine.cli.reasoning import add_reasoning_flags, print_reasoning, reasoning_changes
from ragspine.cli.visual import OFF, print_hints, query_hints
from ragspine.registries import LLM_PROVIDERS, POSTPROCESSORS, RERANKERS
from ragspine.retrieval.filtering.filters import FilterLimits
from ragspine.retrieval.request import SearchRequest
from ragspine.retrieval.snippet import page_label

__all__ = ["add_library_commands", "add_query_command", "cmd_libraries", "cmd_query", "cmd_stats"]


def add_query_command(sub: Subcommands) -> None:
    """Add ``query`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
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
    query.add_argument("--boxes", action="store_true",
                       help="each PDF snippet's line boxes on its page(s), read again from its file (`boxes` in --json)")
    query.add_argument("--visual", action="store_true",
                       help="page hints from the visual index beside the snippets (RAGSPINE_VISUAL_EMBEDDER; --json then prints"
                       " {\"snippets\": [...], \"visual_hints\": [...]})")
    query.add_argument("--reranker", type=str.lower, choices=RERANKERS.names() + list(RERANKERS.aliases),
                       help="reorder the fused head (default: RAGSPINE_RERANKER)")
    query.add_argument("--rerank-depth", type=positive_int, metavar="N",
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
    add_viewer_flags(query)


def add_library_commands(sub: Subcommands) -> None:
    """Add ``libraries`` and ``stats``."""
    sub.add_parser("libraries", help="list libraries")
    sub.add_parser("stats", help="counts and the resolved stack")


def _ranking_changes(args: argparse.Namespace) -> dict[str, Any]:
    """``ragspine query``'s ranking flags as setting changes, checked (a bad one names itself)."""
    from ragspine.retrieval.ranking import Ranking

    configured = settings_from_args(args).ranking
    ranking = Ranking.of(
        args.reranker or configured.reranker, args.postprocessor or configured.postprocessor,
        args.fusion_weights if args.fusion_weights is not None else configured.fusion_weights,
        args.rerank_depth or configured.rerank_depth,
    )
    changes = {"reranker": ranking.reranker, "postprocessor": ranking.postprocessor, "fusion_weights": ranking.fusion_weights,
               "rerank_depth": ranking.rerank_depth}
    if getattr(args, "llm", None):
        from ragspine.llm.spec import check_llm

        changes["llm"] = check_llm(args.llm)
    return changes


def cmd_query(args: argparse.Namespace) -> int:
    if args.top_k <= 0:
        raise CliError(f"--top-k must be positive, got {args.top_k}")
    if args.visual and settings_from_args(args).visual_embedder == "none":
        raise CliError(f"--visual: {OFF}")
    filters = filter_from_args(args.filter, FilterLimits.from_settings(settings_from_args(args)))
    hints = None
    with stack_from_args(args, **_ranking_changes(args), **reasoning_changes(args), **raptor_changes(args)) as stack:
        viewer = viewer_from_args(args, stack)  # --as USER: that user with its groups; else no principal
        retriever = stack.retriever(args.library, retry_without_filters=not args.strict_filters)
        answer = retriever.search(SearchRequest(args.query, filter=filters, top_k=args.top_k, viewer=viewer))
        note_left_out(stack, args.library, viewer)
        if args.visual:  # the visual index knows no ACL: its hints pass the viewer's check here
            hints = visible_hints(stack, args.library, viewer, query_hints(stack, args.query, args.library, answer))
        if args.boxes:
            _add_boxes(args, answer.snippets, stack)
    print_reasoning(answer, args)
    snippets = answer.snippets
    if answer.filters_dropped and filters:
        print(f"ragspine: note: no snippet matched the filters ({describe_filter(filters)}); these results ignore them "
              "(--strict-filters returns none instead)", file=sys.stderr)
    for library, coverage in sorted(answer.dense_incomplete.items()):
        print(f"ragspine: note: library {library!r}: {coverage.missing} of {coverage.total} chunk(s) have no vector yet; "
              f"this answer is BM25 plus the vectors that exist (run `ragspine embed --library {library}`)", file=sys.stderr)
    if args.json:
        shown = snippets if hints is None else {"snippets": snippets, "visual_hints": hints}  # the list's shape without --visual
        print(json.dumps(shown, ensure_ascii=False, indent=2))
        return 0
    if not snippets:
        print("no matching snippets")
    for rank, s in enumerate(snippets, 1):
        sc = s["scores"]
        print(f"{rank}. [{s['library_id']}] {s['title']}  ({s['doc_id']})")
        rerank = f"  rerank {sc['rerank']:.3f}" if "rerank" in sc else ""
        where = f" ({page_label(s['page'], s.get('page_end'))})" if "page" in s else ""
        print(f"   cite: {s['source_locator']}{where}   fused {sc['fused']:.4f}  bm25 {sc['bm25']:.3f}  vector {sc['vector']:.3f}{rerank}")
        print("   " + " ".join(s["text"].split())[:300])
        if "boxes" in s:
            print("   boxes: " + "; ".join(f"p{b['page']} [{', '.join(f'{v:g}' for v in b['box'])}]" for b in s["boxes"]))
    print_hints(hints)
    return 0


def _add_boxes(args: argparse.Namespace, snippets: list[Any], stack: Any) -> None:
    """``--boxes``: each snippet's line boxes as its chunk keeps them, else from its file (a chunk
    stored before boxes were kept); a note for each file that gave none."""
    from ragspine.readers.base import ReaderLimits
    from ragspine.retrieval.boxes import SourceBoxes, add_stored_boxes

    add_stored_boxes(snippets, stack.db.chunk_store)
    settings = settings_from_args(args)
    boxes = SourceBoxes(ReaderLimits.from_settings(settings), settings.max_file_bytes)
    boxes.add([s for s in snippets if "boxes" not in s])
    for source, why in sorted(boxes.why.items()):
        print(f"ragspine: note: no boxes for {source}: {why}", file=sys.stderr)


def cmd_libraries(args: argparse.Namespace) -> int:
    with stack_from_args(args, retrieval_mode="economy") as stack:
        libs = stack.libraries()
    if not libs:
        print("no libraries yet: ragspine ingest PATH --library NAME")
    for lib in libs:
        print(f"{lib.library_id}\t{lib.documents} docs\t{lib.chunks} chunks\t{lib.description}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with stack_from_args(args) as stack:
        libs = stack.libraries()
        stored = sum(stack.db.chunk_store(lib.library_id).count(include_inactive=True) for lib in libs)
        for role, value in stack.describe():
            print(f"{role + ':':19s}{value}")
        print(f"{'libraries:':19s}{len(libs)}")
        print(f"{'documents:':19s}{sum(lib.documents for lib in libs)} active")
        print(f"{'chunks:':19s}{sum(lib.chunks for lib in libs)} active, {stored} stored (all versions)")
    return 0
