"""Deterministic security checks that run before retrieval: the deny-list gate."""

from ragspine.security.gate import GateDecision, SecurityGate, TermMatcher, load_denylist, make_security_gate, normalize

__all__ = ["GateDecision", "SecurityGate", "TermMatcher", "load_denylist", "make_security_gate", "normalize"]
