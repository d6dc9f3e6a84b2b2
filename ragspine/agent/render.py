"""An :class:`~ragspine.agent.base.AgentAnswer` as text: what ``ragspine ask`` and the demo print."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ragspine.agent.base import AgentAnswer

__all__ = ["print_answer", "source_line"]


def print_answer(answer: AgentAnswer, out: TextIO | None = None) -> None:
    """The answer's text, its sources and its route, as ``ragspine ask`` prints them."""
    out = out or sys.stdout
    print(answer.text, file=out)
    if answer.sources:
        print("\nsources:", file=out)
    for source in answer.sources:
        print("  " + source_line(source), file=out)
    why = answer.routing.get("why")
    print(f"\nroute: {answer.route}" + (f" ({why})" if why else ""), file=out)


def source_line(source: dict[str, Any]) -> str:
    if source["kind"] == "fact":
        return (f"fact  {source['source_doc_id']}, {source['source_locator']} (library {source['library_id']}; "
                f"{source['metric']} / {source['entity']} / {source['period']} / {source['channel']}, valid as of {source['valid_as_of']})")
    return f"[{source['id']}] {source['title'] or source['doc_id']} (library {source['library_id']}): {source['source_locator']}"
