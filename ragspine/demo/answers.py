"""The demo's agent part: a fact table for the Kestrel corpus, and four questions to ``ask``.

``demo/facts/<library>.csv`` holds the numbers the corpus states (Q3 2024 revenue and gross
margin from the results commentary; China's Q3 revenue from its review), each with its source
document and paragraph. The agent then answers, as of :data:`AS_OF`:

* a numeric question → ``found``, with the fact's source;
* the same metric for a period with no fact → ``not_found`` (no digits);
* a metric the glossary does not know → ``unrecognized_param`` (naming it);
* "why did Kestrel's Q3 revenue fall, and by how much?" → composite: the stored number with
  its source, and the cited snippets that explain it — both source lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ragspine.agent.factory import AgentStack

FACTS_DIR = Path(__file__).parent / "facts"
#: The date the demo's relative periods and bare quarters ("Q3") count from.
AS_OF = "2024-11-15"


@dataclass(frozen=True)
class AgentQuestion:
    question: str
    expect: str  # what the demo shows: found | not_found | unrecognized_param | composite


QUESTIONS = (
    AgentQuestion("What was Kestrel's revenue in Q3 2024?", "found"),
    AgentQuestion("How much revenue did Kestrel report for Q3 2023?", "not_found"),
    AgentQuestion("How much EBITDA did Kestrel make in Q3 2024?", "unrecognized_param"),
    AgentQuestion("why did Kestrel's Q3 revenue fall, and by how much?", "composite"),
)


def ingest_demo_facts(stack: AgentStack) -> int:
    """Each library's facts file into its fact store (the chunk store's database); facts written."""
    from ragspine.structured.factory import make_fact_store
    from ragspine.structured.ingest import ingest_facts

    written = 0
    for path in sorted(FACTS_DIR.glob("*.csv")):
        written += ingest_facts(make_fact_store(path.stem, database=stack.db), path).facts
    return written


def run_agent_demo(stack: AgentStack, *, echo: Callable[[str], None] = print) -> list[tuple[AgentQuestion, Any]]:
    """Ingest the fact table and ask :data:`QUESTIONS`; each question with its answer."""
    from ragspine.agent.factory import make_agent
    from ragspine.agent.render import source_line

    facts = ingest_demo_facts(stack)
    agent = make_agent(stack)
    echo(f"\nThe agent (ragspine ask): {facts} facts from {FACTS_DIR.parent.name}/{FACTS_DIR.name}/, answers as of {AS_OF}\n")
    answers = []
    for item in QUESTIONS:
        answer = agent.answer(item.question, as_of=AS_OF)
        answers.append((item, answer))
        status = answer.structured.result.status if answer.structured is not None else answer.route
        echo(f"Q: {item.question}   [{answer.route}: {status}]")
        for line in answer.text.splitlines():
            echo(f"  {_short(line)}" if line else "")
        for source in answer.sources:
            echo(f"  source: {source_line(source)}")
        echo("")
    return answers


def _short(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
