"""Principals and document ACLs (pure: no I/O).

A **principal** is a user of a tenant, a member of any number of groups. A document's **ACL**
names who may read it: ``allow`` (users and groups) and, optionally, ``deny``. A document
without an ACL is visible to every principal of its tenant (what every library held before
ACLs existed). RESTRICTED stays above every ACL: nobody reads RESTRICTED content.

Names
-----
A user or group name is 1–128 characters with no white space, no control or format
characters (zero-width spaces, bidi marks) and none of ``, ; : / \\ * ? " ' < > | = ( ) [ ] { }``
(so a list of names can always be split, and an entry ``user:alice`` has one reading).
Names compare by :func:`name_key`: NFKC (full-width letters are the plain ones) then
case-folded — ``HR``, ``hr`` and ``ＨＲ`` are one group. A name that only *looks* like another
(Cyrillic ``һr`` beside Latin ``hr``) is a different name; registries refuse to create it
next to the one it imitates (:func:`look_alike_key`, UTS #39's skeleton), and a name mixing
scripts (``hr`` with a Cyrillic ``һ``) is refused everywhere: no admin can be fooled into
adding someone to the wrong group.

ACL entries are ``user:<name>`` or ``group:<name>``; ``ACL.parse`` reads the forms a user
writes (front matter, sidecar, upload form, API): a mapping ``{"allow": [...], "deny": [...]}``,
a list of entries (allow), or one comma-separated string (allow).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ragspine.errors import ConfigError

__all__ = ["ACL", "ANONYMOUS", "EVERYTHING", "KINDS", "OPEN", "Principal", "Viewer", "look_alike_key", "name_key", "parse_entry", "sees"]

MAX_NAME_CHARS = 128
KINDS = ("user", "group")
_FORBIDDEN = re.compile(r"[,;:/\\*?\"'<>|=()\[\]{}]")
#: scripts that write one language together (Japanese: kanji and both kana; Korean: hangul and hanja)
_SCRIPT_FAMILIES = ({"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA"}, {"HANGUL", "CJK"})


def _script(ch: str) -> str | None:
    """The script of a letter (the first word of its Unicode name), ``None`` for a non-letter."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(ch, "")
    word = name.split(" ", 1)[0]
    return "CJK" if word in ("CJK", "IDEOGRAPHIC") else word


def _check_scripts(name: str, what: str) -> None:
    scripts = {s for ch in unicodedata.normalize("NFKC", name) if (s := _script(ch)) is not None}
    if len(scripts) > 1 and not any(scripts <= family for family in _SCRIPT_FAMILIES):
        raise ConfigError(f"{what} name {name!r} mixes scripts ({', '.join(sorted(scripts))}): write it in one script")


def name_key(name: Any, what: str = "user") -> str:
    """The canonical form of a user or group ``name`` (see the module docstring); ``ConfigError``
    naming the problem when it is not a valid name."""
    if not isinstance(name, str):
        raise ConfigError(f"a {what} name must be a string, got {type(name).__name__}")
    if not name:
        raise ConfigError(f"a {what} name must not be empty")
    if len(name) > MAX_NAME_CHARS:
        raise ConfigError(f"{what} name {name[:20]!r}... is longer than {MAX_NAME_CHARS} characters")
    for ch in name:
        cat = unicodedata.category(ch)
        if ch.isspace() or cat in ("Cc", "Cf", "Zs", "Zl", "Zp", "Cs", "Co", "Cn"):
            raise ConfigError(f"{what} name {name!r} holds {unicodedata.name(ch, hex(ord(ch)))!r}: use letters, digits and . _ - @ +")
    if _FORBIDDEN.search(name):
        raise ConfigError(f"{what} name {name!r} holds {_FORBIDDEN.search(name).group()!r}: use letters, digits and . _ - @ +")  # type: ignore[union-attr]
    _check_scripts(name, what)
    key = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    if _FORBIDDEN.search(key) or any(ch.isspace() for ch in key):  # a compatibility form that folds to a separator
        raise ConfigError(f"{what} name {name!r} folds to {key!r}, which holds a separator: use letters, digits and . _ - @ +")
    return key


def look_alike_key(name: str) -> str:
    """What ``name`` looks like (its confusable skeleton, UTS #39): two different names with the
    same look-alike key must not both exist."""
    from ragspine.security.fold import skeleton

    name_key(name)  # a valid name
    return skeleton(name)  # folded from the name as written: capital Cyrillic ТОМ looks like TOM, its lower case does not


def parse_entry(entry: Any) -> str:
    """``"user:<key>"`` / ``"group:<key>"`` of an ACL entry written ``user:Alice`` or ``group:HR``."""
    if not isinstance(entry, str):
        raise ConfigError(f"an ACL entry must be a string like 'group:hr' or 'user:alice', got {type(entry).__name__}")
    kind, sep, name = entry.strip().partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in KINDS:
        raise ConfigError(f"ACL entry {entry!r} must be 'user:<name>' or 'group:<name>'")
    return f"{kind}:{name_key(name.strip(), kind)}"


def _entries(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        items: Iterable[Any] = [v for v in value.split(",") if v.strip()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    else:
        raise ConfigError(f"ACL {where} must be a list of 'user:<name>' / 'group:<name>' entries, got {type(value).__name__}")
    return tuple(sorted({parse_entry(v) for v in items}))


@dataclass(frozen=True)
class ACL:
    """Who may read a document: ``allow`` (empty: every principal of the tenant) minus ``deny``;
    entries canonical (``user:<key>`` / ``group:<key>``), sorted, distinct."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    @classmethod
    def parse(cls, value: Any) -> ACL:
        """An ACL from what a user writes (see the module docstring); ``None`` or empty: :data:`OPEN`."""
        if isinstance(value, ACL):
            return value
        if value is None:
            return OPEN
        if isinstance(value, Mapping):
            unknown = set(value) - {"allow", "deny"}
            if unknown:
                raise ConfigError(f"an ACL has keys 'allow' and 'deny', not {', '.join(sorted(map(str, unknown)))}")
            return cls(_entries(value.get("allow"), "allow"), _entries(value.get("deny"), "deny"))
        return cls(_entries(value, "allow"), ())

    @classmethod
    def from_json(cls, text: str | None) -> ACL:
        """The ACL :meth:`to_json` wrote (``None`` / ``""``: :data:`OPEN`)."""
        return cls.parse(json.loads(text)) if text else OPEN

    @property
    def is_open(self) -> bool:
        """No ACL: every principal of the tenant reads the document."""
        return not self.allow and not self.deny

    def to_json(self) -> str:
        """Canonical compact JSON (equal ACLs, equal text: what stores key visibility classes by)."""
        return json.dumps({"allow": list(self.allow), "deny": list(self.deny)}, separators=(",", ":"), ensure_ascii=False)

    def as_dict(self) -> dict[str, list[str]]:
        return {"allow": list(self.allow), "deny": list(self.deny)}


OPEN = ACL()


@dataclass(frozen=True)
class Principal:
    """Who asks: a tenant's user and the groups it belongs to (canonical keys; build it with
    :meth:`of`). A request without one sees only documents without an ACL."""

    user: str
    groups: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, user: str, groups: Iterable[str] = ()) -> Principal:
        return cls(name_key(user, "user"), frozenset(name_key(g, "group") for g in groups))

    @cached_property
    def identities(self) -> frozenset[str]:
        """Every ACL entry that names this principal: its user and each of its groups."""
        return frozenset({f"user:{self.user}", *(f"group:{g}" for g in self.groups)})

    def sees(self, acl: ACL) -> bool:
        """Whether this principal may read a document with ``acl`` (RESTRICTED is decided apart)."""
        if acl.is_open:
            return True
        ids = self.identities
        if any(e in ids for e in acl.deny):
            return False
        return not acl.allow or any(e in ids for e in acl.allow)


def sees(principal: Principal | None, acl: ACL) -> bool:
    """Whether ``principal`` (``None``: a caller who is no principal) may read a document with ``acl``."""
    return acl.is_open if principal is None else principal.sees(acl)


@dataclass(frozen=True)
class Viewer:
    """Whom a search runs for: a :class:`Principal`, a caller who is none (``principal=None``:
    documents without an ACL only), or — for the library's own maintenance, never a request —
    ``everything``."""

    principal: Principal | None = None
    everything: bool = False

    def sees(self, acl: ACL) -> bool:
        return self.everything or sees(self.principal, acl)


#: The library's own maintenance (index builds, exports): every document. Never a request's.
EVERYTHING = Viewer(everything=True)
#: A caller who is no principal: documents without an ACL only.
ANONYMOUS = Viewer()
