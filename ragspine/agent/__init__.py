"""The agent: one question → a structured, narrative or composite answer with its sources.

``Agent(structured=..., narrative=..., gate=..., router=...).answer(question, history=None,
as_of=None)`` reads the question's glossary slots and shape, routes it, runs the fact-table path
and/or the cited-snippet path separately, and merges their texts and source lists
(:class:`AgentAnswer`). ``make_agent(stack, library_ids)`` builds one over a stack's libraries.

    layout: base.py (roles, answer types) · spotting.py + reading.py (the question, read
    deterministically) · router.py (deterministic | llm) · structured.py · narrative.py ·
    messages.py (fixed texts) · agent.py (answer) · factory.py (make_agent) · render.py (printing an answer; `ragspine ask` is ragspine/cli/agent.py)
"""

from ragspine.agent.agent import REFUSED, Agent
from ragspine.agent.base import (
    COMPOSITE,
    NARRATIVE,
    ROUTES,
    STRUCTURED,
    AgentAnswer,
    AgentRouter,
    Citation,
    NarrativePart,
    QueryGate,
    StructuredPart,
)
from ragspine.agent.factory import make_agent
from ragspine.agent.narrative import NarrativePath
from ragspine.agent.reading import Reading, read_question
from ragspine.agent.router import DeterministicRouter, LLMAgentRouter, make_agent_router
from ragspine.agent.structured import StructuredPath

__all__ = [
    "COMPOSITE",
    "NARRATIVE",
    "REFUSED",
    "ROUTES",
    "STRUCTURED",
    "Agent",
    "AgentAnswer",
    "AgentRouter",
    "Citation",
    "DeterministicRouter",
    "LLMAgentRouter",
    "NarrativePart",
    "NarrativePath",
    "QueryGate",
    "Reading",
    "StructuredPart",
    "StructuredPath",
    "make_agent",
    "make_agent_router",
    "read_question",
]
