"""The graph utilities' command (registered by :mod:`ragspine.cli.app`).

    ragspine graph edges [--library L] [--glossary G] [--extractor none|cooccurrence|llm] [--as USER] [--json]
    ragspine graph rollup METRIC --entity E --period P [--channel C] [--as-of DATE] [--as USER] [...]
    ragspine graph peers  METRIC --entity E --period P [--channel C] [--as-of DATE] [--as USER] [...]
    ragspine graph trace  METRIC [--entity E --period P] [--as USER] [...]

The graph is built from the glossary (``--glossary``, else ``RAGSPINE_FACT_GLOSSARY``, else the
shipped one) and the library's facts (``RAGSPINE_GRAPH_STORE``);
``edges`` adds what ``--extractor`` (default ``RAGSPINE_RELATION_EXTRACTOR``) reads from the
library's chunks — the ``llm`` one through ``RAGSPINE_LLM``, its edges' endpoints checked by the
security gate (``RAGSPINE_SECURITY_DENYLIST``) — and withholds the nodes of deny-listed entities
and every edge touching one. ``rollup``, ``peers`` and ``trace`` are refused before anything is
read (the agent's fixed refusal, exit 1) when an input, or an entity the utility would read (a
subsidiary, a peer), is deny-listed — by any form of the glossary, a lookalike or spelled out.
``rollup``, ``peers`` and ``trace`` answer in the
language of their inputs (``营收 --entity 红隼``: Chinese), as ``ragspine ask`` answers in the
question's; ``--language`` chooses another. Exit status: ``rollup`` 0 when rolled up, 1 when
incomplete or not rollable; ``peers`` 0 when compared, 1 without peers; any command 2 when an
input is not recognized (one line on stderr). ``--json`` prints the whole result in every case.

Every command reads as a viewer, as ``ragspine query`` searches: ``--as USER [--tenant T]`` that
user with its groups, else no principal (documents without an ACL only). The graph is built from
the facts and chunks of the documents the viewer may read, so it is the graph of the library that
holds only those (its ``reports`` and ``co_occurs_with`` edges, their counts, a roll-up's members);
an extractor, the ``llm`` one too, never reads a hidden chunk.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ragspine.cli.acl import add_viewer_flags, hidden_documents, note_left_out, viewer_from_args
from ragspine.cli.common import Subcommands, settings_from_args, stack_from_args
from ragspine.cli.structured import add_glossary_flag, fact_glossary, gate_refusal
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID, DocumentAcls

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.security.principals import Viewer

ACTIONS = ("edges", "rollup", "peers", "trace")
_HINT = "pass --as USER [--tenant T] to read as a user"
_OK = {"rolled_up": 0, "compared": 0, "derived": 0, "not_derived": 0, "incomplete": 1, "not_rollable": 1, "no_peers": 1}


def add_graph_commands(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``graph`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    from ragspine.registries import RELATION_EXTRACTORS

    graph = sub.add_parser("graph", help="the relation graph: subsidiary roll-up, peers, derivations, cited edges")
    actions = graph.add_subparsers(dest="graph_action", required=True, metavar="ACTION")

    def action(name: str, help: str, metric: bool = True) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, parents=[common], help=help)
        if metric:
            parser.add_argument("metric", metavar="METRIC", help="a metric of the glossary, in any of its forms")
        parser.add_argument("--library", default=DEFAULT_LIBRARY_ID, help=f"library holding the facts (default: {DEFAULT_LIBRARY_ID})")
        add_glossary_flag(parser)
        parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
        add_viewer_flags(parser)
        return parser

    edges = action("edges", "print every node and cited edge", metric=False)
    edges.add_argument("--extractor", type=str.lower, choices=RELATION_EXTRACTORS.names() + list(RELATION_EXTRACTORS.aliases),
                       help="relations read from the library's chunks (default: RAGSPINE_RELATION_EXTRACTOR)")
    for name, help in (("rollup", "a metric summed over an entity's subsidiaries, only when every one has a fact"),
                       ("peers", "a metric for an entity and its siblings"),
                       ("trace", "what a derived metric is computed from (and which inputs have facts)")):
        parser = action(name, help)
        parser.add_argument("--entity", required=name != "trace", help="an entity of the glossary")
        parser.add_argument("--period", required=name != "trace", help="2024Q3, FY2024, 2024-07, ...")
        parser.add_argument("--channel", help="a channel of the glossary (default: the total)")
        parser.add_argument("--as-of", dest="as_of", metavar="YYYY-MM-DD", help="what a relative period counts from")
        parser.add_argument("--language", choices=["en", "zh", "ja"],
                            help="language of the answer (default: that of the inputs, read as `ragspine ask` reads a question)")


def cmd_graph(args: argparse.Namespace) -> int:
    from ragspine.graph.build import build_relation_graph, graph_to_dict, make_graph_store
    from ragspine.structured.channel import StructuredChannel
    from ragspine.structured.factory import make_fact_store

    settings = settings_from_args(args)
    glossary = fact_glossary(args, settings)
    if args.graph_action != "edges":
        refused = _refusal(args, settings, glossary)
        if refused is not None:  # nothing is read: no fact store, no graph
            print(json.dumps(refused, ensure_ascii=False, indent=2) if args.json else refused["text"])
            return 1
    with stack_from_args(args) as stack:
        viewer = viewer_from_args(args, stack)  # --as USER: that user with its groups; else no principal
        hidden = hidden_documents(stack, args.library, viewer)
        facts = make_fact_store(args.library, database=stack.db)
        visible = [f for f in facts.iter_facts() if f.source_doc_id not in hidden]  # the graph of L', read as L' holds it
        graph = make_graph_store(settings.graph_store)
        if args.graph_action == "edges":
            extractor, chunks = _extraction(args, settings, glossary, stack.db)
            chunks = [c for c in chunks if c.doc_id not in hidden]  # an extractor (a model too) never reads a hidden chunk
            build_relation_graph(glossary, facts=visible, store=graph, extractor=extractor, chunks=chunks)
            note_left_out(stack, [args.library], viewer, hint=_HINT)
            return _print_edges(args, _withheld(settings, glossary, graph_to_dict(graph)), extractor)
        build_relation_graph(glossary, facts=visible, store=graph)
        library = stack.db.chunk_store(args.library)
        channel = StructuredChannel(facts, glossary, acls=library if isinstance(library, DocumentAcls) else None)
        result = _answer(args, graph, channel, viewer)
        note_left_out(stack, [args.library], viewer, hint=_HINT)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    if result.status == "unrecognized_param":
        print(f"ragspine: error: {result.text}", file=sys.stderr)
        return 2
    if not args.json:
        print(result.text)
    return _OK[result.status]


def _refusal(args: argparse.Namespace, settings: Settings, glossary: Any) -> dict[str, Any] | None:
    """The security gate's refusal of ``rollup`` / ``peers`` / ``trace``: its inputs, the entity
    they name, and every entity the utility would read — a roll-up's subsidiaries, the peers
    (the same parent's subsidiaries) — each by all its glossary forms; else ``None``."""
    inputs = [args.metric, args.entity, args.period, args.channel]
    match = glossary.entity(args.entity) if args.entity else None
    members: list[str] = []
    if match is not None and args.graph_action != "trace":
        entities = glossary.terms["entities"]
        parent = match.key if args.graph_action == "rollup" else entities[match.key].parent
        members = [key for key, term in entities.items() if parent and term.parent == parent]
    refused: dict[str, Any] | None = gate_refusal(settings, glossary, f"graph_{args.graph_action}", inputs, args.language, members)
    return refused


def _withheld(settings: Settings, glossary: Any, graph: dict[str, Any]) -> dict[str, Any]:
    """``graph`` without the nodes of entities the security gate denies (each checked by all its
    glossary forms) and without every edge that touches one; a note on stderr counts them."""
    from ragspine.security.gate import security_gate_for

    gate = security_gate_for(settings, glossary)
    if gate is None:
        return graph
    denied = {n["id"] for n in graph["nodes"] if n["kind"] == "entity" and not gate.check_entities(glossary, [n["key"]]).allowed}
    edges = [e for e in graph["edges"] if e["source"] not in denied and e["target"] not in denied]
    if denied:
        print(f"ragspine: note: {len(denied)} node(s) and {len(graph['edges']) - len(edges)} edge(s) of deny-listed entities withheld",
              file=sys.stderr)
    return {"nodes": [n for n in graph["nodes"] if n["id"] not in denied], "edges": edges}


def _answer(args: argparse.Namespace, graph: Any, channel: Any, viewer: Viewer) -> Any:
    from ragspine.graph.queries import compare_peers, roll_up, trace_derivation

    options: dict[str, Any] = dict(as_of=args.as_of, language=answer_language(args), viewer=viewer)
    if args.graph_action == "trace":
        return trace_derivation(graph, channel, args.metric, entity=args.entity, period=args.period, channel_name=args.channel, **options)
    utility = roll_up if args.graph_action == "rollup" else compare_peers
    return utility(graph, channel, args.metric, args.entity, args.period, args.channel, **options)


def answer_language(args: argparse.Namespace) -> str:
    """``--language``, else the language of the inputs as the agent reads a question's
    (:func:`~ragspine.agent.reading.question_language`: kana → ja, other Han → zh, else en)."""
    from ragspine.agent.reading import question_language

    if args.language:
        return str(args.language)
    return question_language(" ".join(str(v) for v in (args.metric, args.entity, args.period, args.channel) if v))


def _extraction(args: argparse.Namespace, settings: Settings, glossary: Any, database: Any) -> tuple[Any, list[Any]]:
    from ragspine.graph.extractors.base import make_relation_extractor
    from ragspine.registries import RELATION_EXTRACTORS

    name = RELATION_EXTRACTORS.canonical(args.extractor or settings.relation_extractor)
    if name == "none":
        return None, []
    provider = gate = None
    if "llm" in RELATION_EXTRACTORS.needs(name):  # its registry line says it asks the model (and so is gated)
        from ragspine.llm.base import make_llm_provider
        from ragspine.security.gate import security_gate_for

        provider = make_llm_provider(settings=settings)
        gate = security_gate_for(settings, glossary)
    extractor = make_relation_extractor(name, glossary=glossary, provider=provider, gate=gate)
    return extractor, database.chunk_store(args.library).iter_chunks()


def _print_edges(args: argparse.Namespace, graph: dict[str, Any], extractor: Any) -> int:
    if args.json:
        print(json.dumps(graph, ensure_ascii=False, indent=2))
        return 0
    print(f"{len(graph['nodes'])} nodes, {len(graph['edges'])} edges")
    for e in graph["edges"]:
        chunk = f" [{e['chunk_id']}]" if e["chunk_id"] else ""
        stamp = "" if e["citable"] else "  (model-derived, unverified: never cited)"
        print(f"{e['source']} -{e['relation']}-> {e['target']}\t{e['source_doc_id']} ({e['source_locator']}){chunk}{stamp}")
    stats = getattr(extractor, "stats", None)
    if stats:
        print("ragspine: extractor: " + ", ".join(f"{k} {v}" for k, v in stats.items()), file=sys.stderr)
    return 0
