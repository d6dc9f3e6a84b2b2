"""``ragspine query``'s query-time reasoning flags, and how its answer's refusals and trace print.

    --query-transform hyde|rag_fusion|step_back|none   (RAGSPINE_QUERY_TRANSFORM)
    --decompose llm|none                               (RAGSPINE_QUERY_DECOMPOSE)
    --adaptive heuristic|llm|none                      (RAGSPINE_ADAPTIVE)
    --corrective / --no-corrective                     (RAGSPINE_CORRECTIVE)
    --fanout N                                         (RAGSPINE_QUERY_FANOUT)
    --trace                                            print the steps (JSON) on stderr

A refusal (the security gate, or the corrective loop) prints its fixed message on stderr and
no snippet; each refused generated text is one note. Without these flags and settings the
command prints exactly what it always did.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ragspine.registries import COMPLEXITY_CLASSIFIERS, QUERY_DECOMPOSERS, QUERY_TRANSFORMS
from ragspine.retrieval.request import Answer

__all__ = ["add_reasoning_flags", "print_reasoning", "reasoning_changes"]


def add_reasoning_flags(query: argparse.ArgumentParser) -> None:
    query.add_argument("--query-transform", type=str.lower, choices=list(QUERY_TRANSFORMS),
                       help="LLM query transform (default: RAGSPINE_QUERY_TRANSFORM)")
    query.add_argument("--decompose", type=str.lower, choices=list(QUERY_DECOMPOSERS),
                       help="split the question into sub-questions with the LLM (default: RAGSPINE_QUERY_DECOMPOSE)")
    query.add_argument("--adaptive", type=str.lower, choices=list(COMPLEXITY_CLASSIFIERS),
                       help="single-shot or decomposition per question (default: RAGSPINE_ADAPTIVE)")
    query.add_argument("--corrective", action=argparse.BooleanOptionalAction, default=None,
                       help="grade the answer; drop filters, then rewrite, then refuse (default: RAGSPINE_CORRECTIVE)")
    query.add_argument("--fanout", type=int, metavar="N", help="most variants / sub-questions per question (default: RAGSPINE_QUERY_FANOUT)")
    query.add_argument("--trace", action="store_true", help="print the query-time steps (gate, transforms, rounds) as JSON on stderr")


def reasoning_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given, as setting changes (checked when the stack builds them)."""
    changes: dict[str, Any] = {}
    if getattr(args, "query_transform", None):
        changes["query_transform"] = QUERY_TRANSFORMS.canonical(args.query_transform)
    if getattr(args, "decompose", None):
        changes["query_decompose"] = QUERY_DECOMPOSERS.canonical(args.decompose)
    if getattr(args, "adaptive", None):
        changes["adaptive"] = COMPLEXITY_CLASSIFIERS.canonical(args.adaptive)
    if getattr(args, "corrective", None) is not None:
        changes["corrective"] = bool(args.corrective)
    if getattr(args, "fanout", None) is not None:
        from ragspine.errors import ConfigError
        from ragspine.retrieval.query.transforms import MAX_FANOUT

        if not 1 <= args.fanout <= MAX_FANOUT:
            raise ConfigError(f"--fanout must be within 1..{MAX_FANOUT}, got {args.fanout}")
        changes["query_fanout"] = args.fanout
    return changes


def print_reasoning(answer: Answer, args: argparse.Namespace) -> None:
    """Refusals and (with ``--trace``) the trace of an answer (where reasoning ran), on stderr."""
    for item in answer.refused or []:
        text = f" {item['query']!r}" if "query" in item else ""
        print(f"ragspine: note: refused {item['kind'].replace('_', ' ')}{text}: it names the deny-listed entity {item['entity']}",
              file=sys.stderr)
    refusal = answer.refusal
    if refusal:
        print(f"ragspine: {refusal}", file=sys.stderr)
    if getattr(args, "trace", False):
        print(json.dumps(answer.trace if answer.trace is not None else [], ensure_ascii=False, indent=2), file=sys.stderr)
