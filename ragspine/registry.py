"""``Registry``: one per role — the names a setting accepts, each an import string.

A registry maps a name (``RAGSPINE_RERANKER=listwise``) to an :class:`Entry`: the
``module:attribute`` that builds it (a class or a factory; ``None`` for "off"), a line of
help, and the pip extra that brings its dependencies. Nothing is imported until a name is
built, so ``import ragspine`` stays light, and a missing dependency is a
:class:`MissingDependencyError` naming the extra. Every "unknown X" message, the CLI's and
the service's choices and ``ragspine config``'s help are read from the registry, so they never
go stale. The registries themselves are in :mod:`ragspine.registries`.

Store roles (chunk store, vector store, embedding cache) are configured by a value that is a
name or a URL: their entries say which values they ``accept`` (exact names, or prefixes
ending in ``:``), and :meth:`Registry.match` picks the entry a value selects.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ragspine.errors import ConfigError, MissingDependencyError


@dataclass(frozen=True)
class Entry:
    """One registry line."""

    target: str | None  # "package.module:attribute[.attribute]"; None = the role is off
    help: str = ""
    extra: str | None = None  # the pip extra that provides its dependencies
    accepts: tuple[str, ...] = ()  # store roles: configured values selecting it (names, or prefixes ending in ":")
    #: what building it takes from the stack, handed in by keyword (``Stack.needs``): "llm" (the
    #: guarded LLM provider: ``provider=``), "embedding" (the library's embedding backend:
    #: ``embedding_backend=``), "cache" (the embedding cache, for index-time work kept by content
    #: hash: ``cache=``), "profile" (a postprocessor: the library's recipe, a
    #: :class:`~ragspine.profile.Profile`, handed to its ``from_settings`` as ``profile=``). The
    #: wiring reads this instead of branching on names.
    needs: tuple[str, ...] = ()


class Registry(Mapping[str, Entry]):
    """See the module docstring."""

    def __init__(
        self, role: str, entries: Mapping[str, Entry], *, env: str | None = None, aliases: Mapping[str, str] | None = None
    ) -> None:
        self.role = role
        self.env = env
        self._entries = {name.lower(): entry for name, entry in entries.items()}
        self.aliases = {alias.lower(): name.lower() for alias, name in (aliases or {}).items()}
        for alias, name in self.aliases.items():
            if name not in self._entries:
                raise ValueError(f"alias {alias!r} of the {role} registry names no entry ({name!r})")

    def __getitem__(self, name: str) -> Entry:
        return self._entries[self.aliases.get(name, name)]

    def __iter__(self) -> Iterator[str]:
        """Every accepted name: the entries, then the aliases."""
        yield from self._entries
        yield from self.aliases

    def __len__(self) -> int:
        return len(self._entries) + len(self.aliases)

    def __repr__(self) -> str:
        return f"Registry({self.role!r}, {list(self._entries)})"

    def register(self, name: str, entry: Entry) -> None:
        """Add (or replace) a line: how a plugin, or a test, adds a backend."""
        self._entries[name.lower()] = entry

    def unregister(self, name: str) -> None:
        self._entries.pop(name.lower(), None)

    def needs(self, name: str) -> tuple[str, ...]:
        """What building ``name`` takes from the stack (:attr:`Entry.needs`); unknown: ``ConfigError``."""
        return self[self.canonical(name)].needs

    def names(self) -> list[str]:
        """The entries' names (aliases left out)."""
        return list(self._entries)

    def choices(self, sep: str = ", ") -> str:
        return sep.join(self._entries)

    def unknown(self, spec: object) -> ConfigError:
        where = f" ({self.env})" if self.env else ""
        aliases = f" (aliases: {', '.join(self.aliases)})" if self.aliases else ""
        return ConfigError(f"unknown {self.role} {spec!r}{where}; choose one of {self.choices()}{aliases}")

    def canonical(self, spec: object) -> str:
        """``spec`` as a registry name (stripped, lowercased), or ``ConfigError`` naming the choices."""
        name = str(spec).strip().lower()
        name = self.aliases.get(name, name)
        if name not in self._entries:
            raise self.unknown(spec)
        return name

    def load(self, spec: object) -> Any:
        """The object ``spec``'s entry names (``None`` for an "off" entry), imported now."""
        name = self.canonical(spec)
        entry = self._entries[name]
        if entry.target is None:
            return None
        module_name, _, attribute = entry.target.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or module_name
            if entry.extra and not missing.startswith("ragspine"):
                raise MissingDependencyError(missing, entry.extra, f"the {self.role} {name!r}") from None
            raise
        for part in attribute.split("."):
            obj = getattr(obj, part)
        return obj

    def build(self, spec: object, /, *args: Any, **kwargs: Any) -> Any:
        """``load(spec)(*args, **kwargs)``; ``None`` for an "off" entry."""
        factory = self.load(spec)
        return None if factory is None else factory(*args, **kwargs)

    # -- store roles: a configured value (a name or a URL) selects an entry --------------------
    def match(self, value: str) -> str | None:
        """The name of the entry whose ``accepts`` covers ``value`` (case-insensitive), else ``None``."""
        low = value.strip().lower()
        for name, entry in self._entries.items():
            for form in entry.accepts:
                if low == form or (form.endswith(":") and low.startswith(form)):
                    return name
        return None

    def forms(self) -> str:
        """Every entry's help, for "use ..." messages of the store roles."""
        return "; ".join(entry.help for entry in self._entries.values())
