"""Bounds shared by the settings and the stages they configure, in a leaf module both import.

:mod:`ragspine.config` checks a ``RAGSPINE_*`` value against them; the stage checks a
library's or a request's value against the same number. Nothing is imported here, so the
settings never import the retrieval code they configure.
"""

from __future__ import annotations

__all__ = ["MAX_CLUSTER_LIMIT", "MAX_LEVELS", "MAX_RERANK_DEPTH", "PARENT_CHUNKS"]

#: The deepest rerank a setting, a library or a request may ask for (each candidate is a model call's worth of work).
MAX_RERANK_DEPTH = 200
#: RAPTOR: the most members a cluster may have (``RAGSPINE_RAPTOR_MAX_CLUSTER``, a build's ``max_cluster``).
MAX_CLUSTER_LIMIT = 64
#: RAPTOR: the most levels of synthesis nodes a tree may have (``RAGSPINE_RAPTOR_LEVELS``).
MAX_LEVELS = 5
#: A parent holds at most this many child budgets by default (``RAGSPINE_PARENT_CHARS`` = 4 x ``RAGSPINE_CHUNK_CHARS``).
PARENT_CHUNKS = 4
