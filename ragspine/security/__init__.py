"""Deterministic security checks that run before retrieval: the deny-list gate."""

from ragspine.security.gate import (
    GateDecision,
    SecurityGate,
    TermMatcher,
    expand_denylist,
    load_denylist,
    make_security_gate,
    normalize,
    security_gate_for,
)

__all__ = [
    "GateDecision", "SecurityGate", "TermMatcher", "expand_denylist", "load_denylist", "make_security_gate", "normalize",
    "security_gate_for",
]
