"""Document fields written beside the text: YAML front matter at the top of a text file, or a
*sidecar* beside any file (``report.pdf.meta.yaml``) holding the same ``key: value`` lines.

Both are parsed by :func:`parse_fields` (a key written twice is an error; dates become ISO
strings), so every rule of :mod:`ragspine.documents` applies to either unchanged. A file with
both is an error there; a directory walk never reads a sidecar as a document, and a sidecar no
document reads (:func:`orphan_sidecars`) is an error: the file it meant would be read without
its sensitivity.

A document's ACL (who of its tenant may read it) is written there too, and is never metadata:
``acl: {allow: [group:hr], deny: [user:bob]}``, or the top-level keys ``allow:`` / ``deny:``
(a list of entries, or one comma-separated string), or ``acl: open`` (no ACL: every principal
of the tenant reads it). :func:`split_acl` takes these keys out of the fields (in any case or
look-alike spelling, as the document fields are) and parses them with
:meth:`~ragspine.security.principals.ACL.parse`; a bad entry is an error naming the file.
Fields without them say nothing about the ACL: the document keeps the one it has.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragspine.errors import ConfigError, IngestError
from ragspine.readers.base import decode_text
from ragspine.security.principals import ACL, OPEN

ACL_KEYS = ("acl", "allow", "deny")  # a document's ACL in its fields: never metadata
SIDECAR_SUFFIX = ".meta.yaml"  # report.pdf.meta.yaml: report.pdf's fields, for a file without front matter
MAX_SIDECAR_BYTES = 64 * 1024
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def sidecar_of(path: Path) -> Path:
    """Where the sidecar of ``path`` is: ``report.pdf`` → ``report.pdf.meta.yaml`` beside it."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def is_sidecar(path: Path) -> bool:
    """Whether ``path`` is named as a sidecar (``.meta.yaml``, also misspelt ``.meta.yml``, in any case)."""
    return path.name.lower().endswith((SIDECAR_SUFFIX, ".meta.yml"))


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The fields of ``path``'s sidecar (``None``: it has none), read as front matter is
    (:func:`parse_fields`): ``doc_id, title, sensitivity, valid_as_of, chunker`` and metadata."""
    side = sidecar_of(path)
    if not side.is_file():
        return None
    try:
        size = side.stat().st_size
        if size > MAX_SIDECAR_BYTES:
            raise IngestError(f"{side}: {size:,} bytes; a sidecar holds key: value lines (at most {MAX_SIDECAR_BYTES:,} bytes)")
        raw = side.read_bytes()
    except OSError as exc:
        raise IngestError(f"{side}: cannot read ({exc.strerror})") from None
    return parse_fields(decode_text(raw, str(side), "a sidecar holds YAML key: value lines"), str(side), "sidecar")


def orphan_sidecars(directory: Path) -> list[str]:
    """What is wrong with each sidecar below ``directory`` that no document would read: one
    without its file beside it, or named otherwise than ``<file>.meta.yaml`` (the document
    it meant would be read without its fields — its sensitivity — so this fails closed)."""
    out = []
    for side in sorted(p for p in directory.rglob("*") if is_sidecar(p) and p.is_file()):
        document = side.name[: side.name.lower().rindex(".meta.")]
        if not side.name.endswith(SIDECAR_SUFFIX):
            out.append(f"{side}: a sidecar is named {document}{SIDECAR_SUFFIX} exactly; rename it")
        elif not side.with_name(document).is_file():
            out.append(f"{side}: a sidecar without its document ({document} is not beside it); rename or remove it")
    return out


def decode_document(raw: bytes, where: str) -> tuple[dict[str, Any], str, int]:
    """Bytes of a ``.txt``/``.md`` document → ``(front matter, body, body offset)``.

    Raises :class:`IngestError` naming ``where`` for binary (NUL) or non-UTF-8 content and for
    an empty body. A UTF-8 byte-order mark is dropped.
    """
    front, body, offset = split_front_matter(decode_text(raw, where, "use .txt or .md text files"), where)
    if not body.strip():
        raise IngestError(f"{where}: the document is empty")
    return front, body, offset


def split_front_matter(content: str, where: str = "document") -> tuple[dict[str, Any], str, int]:
    """``(front matter, body, body offset)``; no front matter → ``({}, content, 0)``. A key
    written twice (``sensitivity: RESTRICTED`` then ``sensitivity: PUBLIC``; ``1`` and
    ``'1'``) is an error: YAML would keep the last one silently."""
    match = _FRONT_MATTER.match(content)
    if not match:
        return {}, content, 0
    return parse_fields(match.group(1), where, "front matter", first_line=2), content[match.end() :], match.end()


def parse_fields(text: str, where: str, what: str = "front matter", *, first_line: int = 1) -> dict[str, Any]:
    """The ``key: value`` lines of front matter (or of a sidecar, ``what``) as a dict, by the
    same rules: YAML's safe loader, a mapping, no key written twice (in any spelling: ``1`` and
    ``'1'``). ``first_line``: the line of ``text``'s first line in its file (for messages)."""
    import yaml

    try:
        data = yaml.load(text, Loader=_unique_key_loader()) or {}
    except _DuplicateKey as exc:
        raise IngestError(f"{where}: {what} sets {exc.key!r} twice (line {exc.line + first_line}); keep one") from None
    except yaml.YAMLError as exc:
        raise IngestError(f"{where}: {what} is not valid YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise IngestError(f"{where}: {what} is nested too deeply; use flat key: value lines") from None
    if not isinstance(data, dict):
        raise IngestError(f"{where}: {what} must be a mapping of key: value lines")
    out: dict[str, Any] = {}
    spelled: dict[str, Any] = {}
    for key, value in data.items():
        if str(key) in out:
            raise IngestError(f"{where}: {what} keys {spelled[str(key)]!r} and {key!r} are both {str(key)!r}; keep one")
        out[str(key)], spelled[str(key)] = value, key
    return out


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(key)
        self.key, self.line = key, line


@lru_cache(maxsize=1)
def _unique_key_loader() -> type:
    """PyYAML's safe loader, refusing a key written twice in one mapping (explicit keys; a
    ``<<`` merge may still be overridden, as YAML intends)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            if isinstance(node, yaml.MappingNode):
                seen: set[Any] = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        duplicate = key in seen
                    except TypeError:  # an unhashable key: SafeLoader refuses it below
                        continue
                    if duplicate:
                        raise _DuplicateKey(key, key_node.start_mark.line)
                    seen.add(key)
            result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return result

    return UniqueKeyLoader


def acl_key(name: object) -> str | None:
    """The ACL key (:data:`ACL_KEYS`) ``name`` spells, ignoring case, surrounding spaces and
    look-alike letters (``Allow``, ``ａｌｌｏｗ``, a Cyrillic ``а``); ``None``: another key. A key
    that only looks like ``allow`` is the ACL, never metadata: it fails closed."""
    from ragspine.security.fold import skeleton

    if not isinstance(name, str) or len(name) > 64:
        return None
    folded = name.strip().casefold()
    if folded not in ACL_KEYS:
        folded = skeleton(name).strip()
    return folded if folded in ACL_KEYS else None


def split_acl(fields: dict[str, Any], where: str) -> tuple[dict[str, Any], ACL | None]:
    """``(fields without the ACL keys, the ACL they set)``; ``None``: they set none (the
    document keeps its ACL). ``acl: open`` is :data:`~ragspine.security.principals.OPEN`; a key
    without a value, an ACL that names nobody, ``acl`` beside ``allow``/``deny``, or a bad
    entry is an :class:`IngestError` naming ``where`` and the fix."""
    rest: dict[str, Any] = {}
    given: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in fields.items():
        which = acl_key(key)
        if which is None:
            rest[key] = value
            continue
        if which in given:
            raise IngestError(f"{where}: {spelled[which]!r} and {key!r} both set {which}; keep one")
        if value is None:
            raise IngestError(f"{where}: {key}: has no value; list who may read the document (allow: [group:hr, user:alice])"
                              " or write acl: open")
        given[which], spelled[which] = value, key
    if not given:
        return rest, None
    if "acl" in given and len(given) > 1:
        raise IngestError(f"{where}: sets acl: and {' and '.join(sorted(k for k in given if k != 'acl'))}: beside it;"
                          " write the ACL once (acl: {allow: [...], deny: [...]}, or allow: / deny:)")
    value = given.get("acl", dict(given))
    if isinstance(value, str) and value.strip().lower() == "open":
        return rest, OPEN
    try:
        acl = ACL.parse(value)
    except ConfigError as exc:
        raise IngestError(f"{where}: {' / '.join(spelled.values())}: {exc}") from None
    if acl.is_open:  # `allow: []` would open the document: say it in words, or it is a mistake
        raise IngestError(f"{where}: the ACL names nobody; list who may read the document (allow: [group:hr, user:alice]),"
                          " or write acl: open to let every principal of the tenant read it")
    return rest, acl


def plain_value(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def first_heading(body: str, name: str) -> str:
    """The title a document's body gives: in Markdown its first ``#`` heading; in a ``.txt``
    file only a ``# `` line that opens it (elsewhere in plain text, ``#`` is just a character)."""
    if name.lower().endswith(".txt"):
        first = body.lstrip().split("\n", 1)[0]
        match = _HEADING.match(first)
    else:
        match = _HEADING.search(body)
    return match.group(1).strip() if match else ""


__all__ = ["ACL_KEYS", "MAX_SIDECAR_BYTES", "SIDECAR_SUFFIX", "acl_key", "decode_document", "first_heading", "is_sidecar", "orphan_sidecars",
           "parse_fields", "plain_value", "read_sidecar", "sidecar_of", "split_acl", "split_front_matter"]
