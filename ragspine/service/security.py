"""The security gate of the service's routes: one dependency, :func:`security_gate`.

Every route that reaches the fact store, the graph or an index with a caller's text depends on
it (``/v1/metric``, ``/v1/answer``) or searches through the stack's link exit, which applies
the same gate around every search (``/v1/retrieve``, Dify's ``/retrieval``). The gate is the
stack's (:attr:`ragspine.stack.Stack.security_gate`: ``RAGSPINE_SECURITY_DENYLIST`` expanded
through the fact glossary). ``tests/unit/service/test_gate_routes.py`` lists every route of the
app: one that is neither gated nor declared exempt there fails it.
"""

from __future__ import annotations

from fastapi import Request

from ragspine.security.gate import SecurityGate

__all__ = ["security_gate"]


def security_gate(request: Request) -> SecurityGate | None:
    """The server's security gate (``None``: no deny list configured)."""
    gate: SecurityGate | None = request.app.state.service.stack.security_gate
    return gate
