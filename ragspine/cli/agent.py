"""``ragspine ask``: one question answered by the agent (registered by :mod:`ragspine.cli.app`).

    ragspine ask "question" [--library L ...] [--as-of YYYY-MM-DD] [--top-k N] [--glossary FILE] [--as USER [--tenant T]] [--json]

Prints the answer's text, then its sources (the found fact, then each cited snippet) and the
route it took; ``--json`` prints the whole answer (:meth:`AgentAnswer.to_dict`). With the visual
seam on (``RAGSPINE_VISUAL_EMBEDDER``) and a visual index built, an answered question also gets
``visual_hints`` (page references, never cited; :func:`ragspine.cli.visual.hinted_answer`). Exits 0 with
an answer, 1 when the security gate refused the question; bad input exits 2 with one line on
stderr. Both channels answer for one viewer, as ``ragspine query`` searches: ``--as USER``, else
no principal (documents without an ACL only) — a fact read from a document the viewer may not
read is not found, and no snippet or hint comes from one.
"""

from __future__ import annotations

import argparse
import json

from ragspine.agent.factory import DEFAULT_TOP_K
from ragspine.agent.render import print_answer
from ragspine.cli.acl import add_viewer_flags, note_left_out, viewer_from_args
from ragspine.cli.common import Subcommands, stack_from_args
from ragspine.cli.structured import add_glossary_flag
from ragspine.cli.visual import hinted_answer, print_hints

__all__ = ["add_ask_command", "cmd_ask"]


def add_ask_command(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``ask`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    ask = sub.add_parser("ask", help="answer a question from the fact table and/or cited snippets (structured / narrative / composite)")
    ask.add_argument("question", help="e.g. \"What was Kestrel's revenue in Q3 2024?\" or \"Why did revenue fall, and by how much?\"")
    ask.add_argument("--library", action="append", help="library to answer from (repeatable; default: all)")
    ask.add_argument("--as-of", dest="as_of", metavar="YYYY-MM-DD",
                     help="the date a relative period (last quarter, 上季度, 前年度) or a bare quarter (Q3) counts from")
    ask.add_argument("--top-k", type=int, default=DEFAULT_TOP_K, help=f"snippets a narrative answer cites at most (default: {DEFAULT_TOP_K})")
    add_glossary_flag(ask)
    add_viewer_flags(ask)
    ask.add_argument("--json", action="store_true", help="print the whole answer as JSON")


def cmd_ask(args: argparse.Namespace) -> int:
    from ragspine.agent.agent import REFUSED
    from ragspine.agent.factory import make_agent
    from ragspine.errors import QuestionError

    if not 1 <= args.top_k <= 50:
        raise QuestionError(f"--top-k must be within 1..50, got {args.top_k}")
    changes = {"fact_glossary": args.glossary} if args.glossary else {}  # --glossary wins over the setting
    with stack_from_args(args, **changes) as stack:
        viewer = viewer_from_args(args, stack)  # --as USER: that user with its groups; else no principal
        agent = make_agent(stack, args.library, top_k=args.top_k)
        answer = agent.answer(args.question, as_of=args.as_of, viewer=viewer)
        answer = hinted_answer(stack, answer, args.library, viewer)  # after the agent's gate; itself when the seam is off
        note_left_out(stack, args.library, viewer, hint="pass --as USER [--tenant T] to ask as a user")
    if args.json:
        print(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
    else:
        print_answer(answer)
        print_hints(answer.visual_hints)
    return 1 if answer.route == REFUSED else 0
