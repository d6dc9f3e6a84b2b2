"""``ragspine workflow preview`` (registered by :mod:`ragspine.cli.app`).

    ragspine workflow preview [--format json|yaml] [--output FILE] [--mode M]

Prints (or writes) the configured pipeline as a Dify DSL graph: import it into Dify to see the
pipeline on its canvas. A picture, not evidence and not executable (see ragspine/workflow/dify.py).
"""

from __future__ import annotations

import argparse
import sys

from ragspine.cli.common import Subcommands, settings_from_args


def add_workflow_commands(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``workflow`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    workflow = sub.add_parser("workflow", help="the configured pipeline as a Dify workflow picture (not executable)")
    actions = workflow.add_subparsers(dest="workflow_action", required=True, metavar="ACTION")
    preview = actions.add_parser("preview", parents=[common], help="export the pipeline as a redacted Dify DSL graph")
    preview.add_argument("--format", choices=["json", "yaml"], default="json", help="JSON (default) or YAML, as Dify exports")
    preview.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")


def cmd_workflow(args: argparse.Namespace) -> int:
    from ragspine.workflow.dify import dify_preview, render
    from ragspine.workflow.view import pipeline_view

    settings = settings_from_args(args)
    text = render(dify_preview(pipeline_view(settings, getattr(args, "mode", None))), args.format)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote the pipeline preview to {args.output} (a picture for Dify's canvas: not evidence, not executable)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
