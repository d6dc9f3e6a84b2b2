"""Routing a read question: structured, narrative or composite (``RAGSPINE_AGENT_ROUTER``).

**deterministic** (the default) decides on the question's shape and glossary hits
(:class:`~ragspine.agent.reading.Reading`), the same way every time:

1. it asks *why/how* and *how much* → **composite** (both paths, separately);
2. it asks *why/how* only → **narrative** (cited snippets);
3. it names a glossary metric — or a glossary form inside a longer term, or two metrics,
   entities or periods — → **structured** (the fact table, which answers found, not_found, or
   names the input it could not read or the ambiguity — never prose);
4. it asks *how much/how many* of a glossary entity but names no glossary metric →
   **structured** (the fact table names the metric it could not read, with suggestions);
5. anything else → **narrative** — a *how many* question the glossary does not recognise
   (``how many vacation days``) gets the cited snippets, with a line saying no fact matched.

**llm** asks the configured model for one word (STRUCTURED, NARRATIVE or COMPOSITE). The model
chooses the route only: the slots are still read deterministically, and a failed call, a spent
call budget or an answer that is not exactly one of the three words degrades to the
deterministic route (a malformed answer is counted, like every other seam's).
"""

from __future__ import annotations

import re

from ragspine.agent.base import COMPOSITE, NARRATIVE, STRUCTURED, AgentRouter
from ragspine.agent.reading import Reading
from ragspine.errors import ConfigError
from ragspine.llm.base import LLMProvider
from ragspine.llm.observe import report_malformed

ROUTER_PROMPT = """Classify the user's question for a retrieval system with two channels.
STRUCTURED: it asks for a number (a metric of a company for a period) that a fact table holds.
NARRATIVE: it asks why or how something happened, or about anything else a document explains.
COMPOSITE: it asks both for such a number and for the explanation.
Answer with exactly one word: STRUCTURED, NARRATIVE or COMPOSITE.

Question: {question}"""
_WORD = re.compile(r"^\W*(structured|narrative|composite)\W*$", re.IGNORECASE)


class DeterministicRouter:
    """See the module docstring (rules 1-4)."""

    name = "deterministic"

    def route(self, reading: Reading) -> tuple[str, str]:
        if reading.explains and reading.asks_number:
            return COMPOSITE, "asks why/how and how much"
        if reading.explains:
            return NARRATIVE, "asks why/how"
        if reading.metric is not None:
            return STRUCTURED, "names a glossary metric"
        if reading.unread:
            return STRUCTURED, "names a glossary metric's form inside a longer term"
        if reading.ambiguous:
            return STRUCTURED, "names more than one " + " / ".join(p for p, _ in reading.ambiguous)
        if reading.asks_number and reading.entity is not None:
            return STRUCTURED, "asks how much/how many of a glossary entity"
        if reading.asks_number:
            return NARRATIVE, "asks how much/how many but names no glossary metric or entity"
        return NARRATIVE, "names no glossary metric and asks no number"


class LLMAgentRouter:
    """The model picks the route; anything else degrades to :class:`DeterministicRouter`."""

    name = "llm"

    def __init__(self, provider: LLMProvider, fallback: AgentRouter | None = None) -> None:
        self.provider = provider
        self.fallback = fallback or DeterministicRouter()

    def route(self, reading: Reading) -> tuple[str, str]:
        try:
            answer = self.provider.chat([{"role": "user", "content": ROUTER_PROMPT.format(question=reading.question)}])
        except Exception:  # a failed call or a spent budget: degrade (the provider reported it)
            route, why = self.fallback.route(reading)
            return route, f"{why} (the model did not answer)"
        match = _WORD.match(str(answer))
        if match is None:
            report_malformed(self.provider, "agent_router", answer)
            route, why = self.fallback.route(reading)
            return route, f"{why} (the model's answer was not a route)"
        return match.group(1).lower(), "the model's choice"


def make_agent_router(name: str = "deterministic", *, provider: LLMProvider | None = None) -> AgentRouter:
    """The router ``name`` of ``RAGSPINE_AGENT_ROUTER`` (``llm`` needs ``provider``)."""
    from ragspine.registries import AGENT_ROUTERS

    canonical = AGENT_ROUTERS.canonical(name)
    if canonical == "llm":
        if provider is None:
            raise ConfigError("RAGSPINE_AGENT_ROUTER=llm needs a language model: set RAGSPINE_LLM, or use deterministic")
        router: AgentRouter = AGENT_ROUTERS.build(canonical, provider)
        return router
    return DeterministicRouter()
