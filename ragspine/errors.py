"""One error tree for RAGSpine. Driver exceptions are wrapped at the adapter boundary."""

from __future__ import annotations

__all__ = [
    "RagspineError",
    "ConfigError",
    "MissingDependencyError",
    "BackendError",
    "FilterError",
    "IngestError",
    "QuestionError",
    "SchemaError",
]


class RagspineError(Exception):
    """Base of every error RAGSpine raises on purpose."""


class ConfigError(RagspineError, ValueError):
    """A setting or argument has a value RAGSpine cannot use."""


class MissingDependencyError(RagspineError, ImportError):
    """An optional dependency is not installed; the message names the extra."""

    def __init__(self, package: str, extra: str, purpose: str = "") -> None:
        what = f" for {purpose}" if purpose else ""
        super().__init__(
            f"{package} is not installed{what}: pip install 'ragspine[{extra}]'"
        )
        self.package = package
        self.extra = extra

    def naming(self, where: str) -> MissingDependencyError:
        """This error with its message naming ``where`` first (the file that needed the package)."""
        named = MissingDependencyError(self.package, self.extra)
        named.msg = f"{where}: {self}"  # ImportError's str() is its msg
        named.args = (named.msg,)
        return named


class BackendError(RagspineError):
    """A store, cache or model backend failed (connection, query, driver error)."""


class SchemaError(BackendError):
    """A database's schema is not the one this RAGSpine needs; the message names the fix
    (``ragspine migrate``)."""


class FilterError(RagspineError, ValueError):
    """A metadata filter is malformed (raised before any I/O)."""


class IngestError(RagspineError, ValueError):
    """A document cannot be ingested (empty, not UTF-8, bad metadata, ...)."""


class QuestionError(RagspineError, ValueError):
    """A question the agent cannot take (empty, too long, a bad as-of date or history), raised
    before any lookup."""
