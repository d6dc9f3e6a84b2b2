"""The ``ragspine`` parser and dispatch: the global options, then each command's module.

The global options (``--db``, ``--mode``, ``--profile``, ``--option``, ``--contextual``) are accepted before
the command and after it (every subcommand parser has them as a parent), and every command
turns them into settings through :func:`ragspine.cli.common.settings_from_args`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Sequence

from ragspine import __version__
from ragspine.cli.acl import add_acl_commands, cmd_acl
from ragspine.cli.agent import add_ask_command, cmd_ask
from ragspine.cli.common import EXIT_USAGE, CliParser
from ragspine.cli.config import add_config_command, add_migrate_command, cmd_config, cmd_migrate
from ragspine.cli.demo import add_demo_command, cmd_demo
from ragspine.cli.graph import add_graph_commands, cmd_graph
from ragspine.cli.ingest import add_embed_command, add_ingest_command, cmd_embed, cmd_ingest
from ragspine.cli.principals import add_principals_commands, cmd_principals
from ragspine.cli.query import add_library_commands, add_query_command, cmd_libraries, cmd_query, cmd_stats
from ragspine.cli.raptor import add_raptor_commands, cmd_raptor
from ragspine.cli.serve import add_serve_commands, cmd_serve, cmd_worker
from ragspine.cli.show import add_show_command, cmd_show
from ragspine.cli.structured import add_structured_commands, cmd_facts, cmd_metric
from ragspine.cli.visual import add_visual_commands, cmd_visual
from ragspine.cli.workflow import add_workflow_commands, cmd_workflow
from ragspine.errors import RagspineError
from ragspine.profile import PROFILES
from ragspine.retrieval.mode import RETRIEVAL_MODES

__all__ = ["COMMANDS", "build_parser", "main"]

CONTEXTUAL_CHOICES = ["none", "header", "on", "off"]


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(prog="ragspine", description="Cited, RESTRICTED-free retrieval.")
    parser.add_argument("--version", action="version", version=f"ragspine {__version__}")
    db_help = "SQLite chunk store (default: RAGSPINE_CHUNK_STORE)"
    mode_help = f"retrieval mode: {'|'.join(RETRIEVAL_MODES)} (default: RAGSPINE_RETRIEVAL_MODE)"
    parser.add_argument("--db", help=db_help)
    parser.add_argument("--mode", help=mode_help)
    parser.add_argument("--contextual", type=str.lower, choices=CONTEXTUAL_CHOICES, help=argparse.SUPPRESS)
    profile_help = f"named recipe: {'|'.join(PROFILES)} (default: RAGSPINE_PROFILE, else seed); a RAGSPINE_* variable overrides its field"
    parser.add_argument("--profile", help=profile_help)
    option_help = "a registered per-library option (plugins; repeatable; default: RAGSPINE_PROFILE_OPTIONS)"
    parser.add_argument("--option", action="append", metavar="NAME=VALUE", help=option_help)
    common = CliParser(add_help=False)  # the same options after the command too
    common.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
    common.add_argument("--profile", default=argparse.SUPPRESS, help=profile_help)
    common.add_argument("--option", action="append", default=argparse.SUPPRESS, metavar="NAME=VALUE", help=option_help)
    common.add_argument("--mode", default=argparse.SUPPRESS, help=mode_help)
    common.add_argument(
        "--contextual", type=str.lower, choices=CONTEXTUAL_CHOICES, default=argparse.SUPPRESS,
        help="contextual header (title · entity · period · heading) on the text BM25 indexes and the dense leg embeds"
        " (default: RAGSPINE_CONTEXTUAL)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    class _Sub:
        def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
            return subparsers.add_parser(name, parents=[common], **kwargs)

    sub = _Sub()
    add_ingest_command(sub)
    add_query_command(sub)
    add_show_command(sub)
    add_embed_command(sub)
    add_library_commands(sub)
    add_config_command(sub)
    add_demo_command(sub)
    add_migrate_command(sub)
    add_serve_commands(sub)
    add_structured_commands(sub, common)
    add_graph_commands(sub, common)
    add_workflow_commands(sub, common)
    add_ask_command(sub, common)
    add_raptor_commands(sub, common)
    add_visual_commands(sub, common)
    add_principals_commands(sub, common)
    add_acl_commands(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (RagspineError, ValueError) as exc:
        print(f"ragspine: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("ragspine: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `ragspine query ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "ingest": cmd_ingest,
    "query": cmd_query,
    "show": cmd_show,
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
    "visual": cmd_visual,
    "principals": cmd_principals,
    "acl": cmd_acl,
}
