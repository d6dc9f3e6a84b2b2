"""The HTTP service (``ragspine serve``): tenants and API keys, libraries, ingestion jobs,
routed retrieval, Dify's external-knowledge endpoint, health and metrics.

``create_app(settings=None, *, stack=None)`` (in :mod:`ragspine.service.app`) builds the
FastAPI application; importing this package imports neither FastAPI nor a driver.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from ragspine.service.app import create_app

        return create_app
    raise AttributeError(name)
