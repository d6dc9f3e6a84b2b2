"""``NormalizePathMiddleware``: ``//retrieval`` and ``/retrieval/`` reach ``/retrieval``.

Dify appends ``/retrieval`` to the endpoint a user saved, so ``http://host:8000/`` becomes
``http://host:8000//retrieval``; a client joining URLs naively does the same elsewhere.
Repeated slashes are collapsed and a trailing slash dropped (except on ``/``) before routing,
authentication and metrics see the path — so every route answers, or answers its own error
shape, instead of a bare 404 or a redirect a POST would not follow.
"""

from __future__ import annotations

import re
from typing import Any

_SLASHES = re.compile(r"/{2,}")


def normalize(path: str) -> str:
    path = _SLASHES.sub("/", path)
    return path.rstrip("/") or "/"


class NormalizePathMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = normalize(scope["path"])
            if path != scope["path"]:
                scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)
