"""The Redis tests need redis-py (``ragspine[redis]``): skipped without it, failed in CI."""

from __future__ import annotations

import pytest

from tests import backends


@pytest.fixture(autouse=True)
def _redis_py():
    try:
        import redis  # noqa: F401
    except ImportError:
        backends.unavailable("redis", "redis-py is not installed (pip install 'ragspine[redis]')")
