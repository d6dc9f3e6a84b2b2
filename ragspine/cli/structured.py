"""The structured channel's commands (registered by :mod:`ragspine.cli.app`).

    ragspine facts ingest FILE [--library L] [--glossary G]   CSV/JSON/JSONL facts, all or nothing
    ragspine facts list [--library L] [--source S] [--json]   the active facts (RESTRICTED never shown)
    ragspine metric METRIC --entity E --period P [--channel C] [--as-of DATE] [--language en|zh|ja]
                    [--library L] [--glossary G] [--json]

Every fact command (``facts ingest``, ``metric``, ``graph``, ``ask``) reads the same
controlled glossary: ``--glossary FILE`` (:func:`add_glossary_flag`), else
``RAGSPINE_FACT_GLOSSARY``, else the shipped demo glossary (:func:`fact_glossary`).

``metric`` exits 0 when ``found`` (the rebuilt prose on stdout), 1 when ``not_found`` (the fixed
refusal on stdout) or ``refused`` (an input names an entity of the security deny list, by any
alias the glossary knows, a lookalike or spelled out: the agent's fixed refusal, and nothing is
looked up) and 2 when a parameter is unrecognized (one line on stderr); ``--json`` prints the
whole result on stdout in every case. Bad input exits 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ragspine.cli.common import Subcommands, settings_from_args
from ragspine.retrieval.chunking.chunk_store import DEFAULT_LIBRARY_ID

if TYPE_CHECKING:
    from ragspine.config import Settings
    from ragspine.structured.glossary import Glossary

LIBRARY_HELP = f"library holding the facts (default: {DEFAULT_LIBRARY_ID})"
GLOSSARY_HELP = "controlled glossary, YAML or JSON (default: RAGSPINE_FACT_GLOSSARY, else the shipped demo glossary)"


def add_glossary_flag(parser: argparse.ArgumentParser) -> None:
    """The ``--glossary FILE`` flag of every fact command."""
    parser.add_argument("--glossary", metavar="FILE", help=GLOSSARY_HELP)


def glossary_path(args: argparse.Namespace, settings: Settings) -> str | None:
    """The glossary file a fact command reads: ``--glossary``, else ``RAGSPINE_FACT_GLOSSARY``
    (``None``: the shipped demo glossary)."""
    flag: str | None = getattr(args, "glossary", None)
    return flag or settings.fact_glossary


def fact_glossary(args: argparse.Namespace, settings: Settings) -> Any:
    """The :class:`~ragspine.structured.glossary.Glossary` of :func:`glossary_path` (the agent's
    loader: one glossary per file, whichever command reads it)."""
    from ragspine.agent.spotting import load_fact_glossary

    return load_fact_glossary(glossary_path(args, settings))


def add_structured_commands(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``facts`` and ``metric`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    facts = sub.add_parser("facts", help="ingest or list the structured channel's numeric facts")
    actions = facts.add_subparsers(dest="facts_action", required=True, metavar="ACTION")
    ingest = actions.add_parser("ingest", parents=[common], help="replace the facts of the sources a CSV/JSON file names")
    ingest.add_argument("file", metavar="FILE", help="a .csv (with a header line), .json or .jsonl file of facts")
    ingest.add_argument("--library", default=DEFAULT_LIBRARY_ID, help=LIBRARY_HELP)
    add_glossary_flag(ingest)
    listing = actions.add_parser("list", parents=[common], help="list the active facts")
    listing.add_argument("--library", default=DEFAULT_LIBRARY_ID, help=LIBRARY_HELP)
    listing.add_argument("--source", help="only this source document's facts")
    listing.add_argument("--json", action="store_true", help="print the facts as JSON")

    metric = sub.add_parser("metric", help="look one number up in the fact table (found / not_found / unrecognized_param)")
    metric.add_argument("metric", metavar="METRIC", help="a metric of the glossary, in any of its forms (revenue, 营收, 売上高)")
    metric.add_argument("--entity", required=True, help="an entity of the glossary (Kestrel, 红隼机器人, KSTR)")
    metric.add_argument("--period", required=True, help="2024Q3, FY2024, 2024-07, 2024年第三季度, last quarter (with --as-of), ...")
    metric.add_argument("--channel", help="a channel of the glossary (default: the total over all channels)")
    metric.add_argument("--as-of", dest="as_of", metavar="YYYY-MM-DD", help="the date a relative period (last quarter, 上季度, 前年度) counts from")
    metric.add_argument("--language", choices=["en", "zh", "ja"], help="language of the answer (default: that of the inputs)")
    metric.add_argument("--library", default=DEFAULT_LIBRARY_ID, help=LIBRARY_HELP)
    add_glossary_flag(metric)
    metric.add_argument("--json", action="store_true", help="print the whole result as JSON")


def _database(settings: Settings) -> Any:
    from ragspine.stores.registry import make_chunk_store

    return make_chunk_store(settings=settings)


def cmd_facts(args: argparse.Namespace) -> int:
    from ragspine.structured.factory import make_fact_store

    settings = settings_from_args(args)
    database = _database(settings)
    try:
        glossary = fact_glossary(args, settings) if args.facts_action == "ingest" else None
        store = make_fact_store(args.library, database=database)
        if args.facts_action == "ingest":
            return _ingest(args, database, store, glossary, settings.max_file_bytes)
        return _list(args, store)
    finally:
        database.close()


def _ingest(args: argparse.Namespace, database: Any, store: Any, glossary: Any, max_bytes: int) -> int:
    from ragspine.errors import IngestError
    from ragspine.structured.ingest import ingest_facts

    try:
        size = os.path.getsize(args.file)
    except OSError as exc:
        raise IngestError(f"cannot read {args.file!r}: {exc.strerror}") from None
    if size > max_bytes:
        raise IngestError(f"{args.file!r} is {size:,} bytes, above RAGSPINE_MAX_FILE_BYTES ({max_bytes:,})")
    report = ingest_facts(store, args.file, glossary=glossary)  # checks every row before any write
    database.ensure_library(args.library)
    restricted = f" ({report.restricted} RESTRICTED, never answered)" if report.restricted else ""
    print(f"ingested {report.facts} fact(s){restricted} from {len(report.sources)} source(s) into {args.library!r};"
          " each source's previous facts were replaced")
    return 0


def _list(args: argparse.Namespace, store: Any) -> int:
    from ragspine.structured.converters import value_text

    facts = store.iter_facts(source_doc_id=args.source)
    hidden = len(store.iter_facts(source_doc_id=args.source, include_restricted=True)) - len(facts)
    rows = [{"metric": f.metric, "entity": f.entity, "period": f.period, "channel": f.channel, "value": value_text(f.value),
             "unit": f.unit, "source_doc_id": f.source_doc_id, "source_locator": f.source_locator,
             "valid_as_of": f.valid_as_of, "sensitivity": f.sensitivity, "version": f.version} for f in facts]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    elif not rows:
        print(f"no facts in {args.library!r}: ragspine facts ingest FILE --library {args.library}")
    for r in [] if args.json else rows:
        print(f"{r['metric']}\t{r['entity']}\t{r['period']}\t{r['channel']}\t{r['value']} {r['unit']}".rstrip()
              + f"\t{r['source_doc_id']} ({r['source_locator']})\t{r['valid_as_of']}")
    if hidden:
        print(f"ragspine: note: {hidden} RESTRICTED fact(s) stored, never shown", file=sys.stderr)
    return 0


def cmd_metric(args: argparse.Namespace) -> int:
    from ragspine.structured.channel import StructuredChannel
    from ragspine.structured.factory import make_fact_store
    from ragspine.structured.result import FOUND, NOT_FOUND

    settings = settings_from_args(args)
    glossary = fact_glossary(args, settings)
    refused = gate_refusal(settings, glossary, "metric", [args.metric, args.entity, args.period, args.channel], args.language)
    if refused is not None:  # nothing is looked up
        print(json.dumps(refused, ensure_ascii=False, indent=2) if args.json else refused["text"])
        return 1
    database = _database(settings)
    try:
        channel = StructuredChannel(make_fact_store(args.library, database=database), glossary)
        result = channel.query_metric(args.metric, args.entity, args.period, args.channel, as_of=args.as_of, language=args.language)
    finally:
        database.close()
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    if result.status == FOUND:
        if not args.json:
            print(result.text)
        return 0
    if result.status == NOT_FOUND:
        if not args.json:
            print(result.text)
        return 1
    print(f"ragspine: error: {result.text}", file=sys.stderr)
    return 2


def gate_refusal(settings: Settings, glossary: Glossary, kind: str, inputs: list[str | None], language: str | None,
                 members: list[str] | None = None) -> dict[str, Any] | None:
    """The security gate's refusal of a lookup (``RAGSPINE_SECURITY_DENYLIST`` expanded through
    ``glossary``): its inputs, each entity they name and the glossary entity keys ``members``
    (what a graph utility would read), else ``None``; ``language``: the refusal's, else that of
    the inputs (as ``ragspine ask`` reads a question)."""
    from ragspine.agent.reading import question_language
    from ragspine.security.gate import refusal, security_gate_for

    gate = security_gate_for(settings, glossary)
    if gate is None:
        return None
    decision = gate.check_lookup(glossary, inputs)
    if decision.allowed and members:
        decision = gate.check_entities(glossary, members)
    if decision.allowed:
        return None
    return refusal(decision, kind, language or question_language(" ".join(text for text in inputs if text)))
