"""``ragspine acl ...`` (registered by :mod:`ragspine.cli.app`): who may read a library's documents.

    ragspine acl set LIBRARY DOC_ID [--allow ENTRY,...] [--deny ENTRY,...]   give the document an ACL
    ragspine acl set LIBRARY DOC_ID --open                                     take its ACL away
    ragspine acl show LIBRARY [DOC_ID] [--json]        the library's ACLs, or one document's with its history

An entry is ``user:<name>`` or ``group:<name>`` (names compare case- and width-insensitively:
:mod:`ragspine.security.principals`). A change needs no re-ingest or re-embedding, counts on the
next query, and is recorded with who made it (``cli:<OS user>``) and when. A document without an
ACL is read by every principal of its tenant; the ACL of a document not ingested yet waits for it.

The ACL parts of the other commands live here too: ``ragspine query --as USER [--tenant T]``
(:func:`viewer_from_args`: the user with its groups, read from the service tables) and the note a
query without ``--as`` prints when it leaves documents with an ACL out (:func:`note_left_out`);
``ragspine ingest``'s front matter / sidecar ACLs (:class:`IngestAcls`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragspine.cli.common import CliError, Subcommands, stack_from_args
from ragspine.errors import ConfigError

if TYPE_CHECKING:
    from ragspine.documents import SourceDocument
    from ragspine.retrieval.chunking.chunking import Chunk
    from ragspine.security.principals import ACL, Viewer

__all__ = ["IngestAcls", "add_acl_commands", "add_viewer_flags", "cli_user", "cmd_acl", "hidden_documents", "note_left_out", "viewer_from_args",
           "visible_hints"]


def add_acl_commands(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``acl`` to the CLI's subcommands."""
    acl = sub.add_parser("acl", help="who may read a library's documents (document ACLs: users and groups)")
    actions = acl.add_subparsers(dest="acl_action", required=True, metavar="ACTION")
    set_ = actions.add_parser("set", parents=[common], help="give a document an ACL (or --open: none), without a re-ingest")
    set_.add_argument("library")
    set_.add_argument("doc_id")
    set_.add_argument("--allow", action="append", default=[], metavar="ENTRY,...",
                      help="who may read it: user:<name> / group:<name> (repeatable; comma-separated)")
    set_.add_argument("--deny", action="append", default=[], metavar="ENTRY,...", help="who may not, even when allowed (repeatable)")
    set_.add_argument("--open", action="store_true", help="no ACL: every principal of the tenant reads the document")
    show = actions.add_parser("show", parents=[common], help="the library's document ACLs, or one document's ACL and history")
    show.add_argument("library")
    show.add_argument("doc_id", nargs="?")
    show.add_argument("--json", action="store_true", help="print JSON")


def cmd_acl(args: argparse.Namespace) -> int:
    with stack_from_args(args, retrieval_mode="economy") as stack:
        if stack.library(args.library) is None:
            raise CliError(f"unknown library {args.library!r} (see `ragspine libraries`)")
        store = _acl_store(stack.db.chunk_store(args.library))
        return _set(store, args) if args.acl_action == "set" else _show(store, args)


def _acl_store(store: Any) -> Any:
    from ragspine.retrieval.chunking.chunk_store import DocumentAcls

    if not isinstance(store, DocumentAcls):
        raise CliError(f"this chunk store ({type(store).__name__}) keeps no document ACLs; use the embedded default or PostgreSQL")
    return store


def cli_user() -> str:
    """Who a CLI change is recorded as: ``cli:<OS user>``."""
    import getpass
    import os

    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no passwd entry (a container's numeric user)
        return f"cli:uid-{os.getuid()}" if hasattr(os, "getuid") else "cli:unknown"


def _set(store: Any, args: argparse.Namespace) -> int:
    from ragspine.security.principals import ACL, OPEN

    if args.open and (args.allow or args.deny):
        raise CliError("--open takes the document's ACL away: give it without --allow/--deny")
    if not (args.open or args.allow or args.deny):
        raise CliError("say who may read the document: --allow ENTRY,... and/or --deny ENTRY,... (user:<name>, group:<name>), or --open")
    try:
        acl = OPEN if args.open else ACL.parse({"allow": ",".join(args.allow), "deny": ",".join(args.deny)})
    except ConfigError as exc:
        raise CliError(f"--allow/--deny: {exc}") from None
    if acl.is_open and not args.open:
        raise CliError("--allow/--deny name nobody; list entries (user:<name>, group:<name>), or pass --open to take the ACL away")
    before = store.document_acls()[1].get(args.doc_id, OPEN)
    changed = store.set_acls({args.doc_id: acl}, by=cli_user())
    where = f"library {args.library!r} document {args.doc_id!r}"
    print(f"{where}: {describe(acl)}" + (f" (was: {describe(before)})" if changed else " (unchanged)"))
    if not _has_document(store, args.doc_id):
        print(f"ragspine: note: {where} has no active version yet; its ACL waits for it", file=sys.stderr)
    return 0


def _has_document(store: Any, doc_id: str) -> bool:
    from ragspine.retrieval.chunking.chunk_store import Fingerprints

    if isinstance(store, Fingerprints):
        return doc_id in store.fingerprints([doc_id])
    return next(iter(store.iter_chunks(doc_id=doc_id)), None) is not None


def describe(acl: ACL) -> str:
    """One line: ``allow group:hr, user:alice; deny user:bob`` (``open (no ACL)``)."""
    if acl.is_open:
        return "open (no ACL: every principal of the tenant)"
    parts = [f"allow {', '.join(acl.allow)}" if acl.allow else "allow every principal of the tenant"]
    if acl.deny:
        parts.append(f"deny {', '.join(acl.deny)}")
    return "; ".join(parts)


def _show(store: Any, args: argparse.Namespace) -> int:
    from ragspine.security.principals import OPEN

    seq, acls = store.document_acls()
    if args.doc_id is None:
        if args.json:
            print(json.dumps({"library": args.library, "acl_seq": seq,
                              "documents": {d: acls[d].as_dict() for d in sorted(acls)}}, ensure_ascii=False))
            return 0
        print(f"library {args.library!r}: {len(acls)} document(s) with an ACL (the others: every principal of the tenant)")
        for doc_id in sorted(acls):
            print(f"  {doc_id}  {describe(acls[doc_id])}")
        return 0
    acl = acls.get(args.doc_id, OPEN)
    history = store.acl_history(args.doc_id)
    if args.json:
        print(json.dumps({"library": args.library, "doc_id": args.doc_id, "acl": acl.as_dict(), "history": [
            {"seq": h.seq, "changed_at": h.changed_at, "changed_by": h.changed_by, "before": h.before.as_dict(),
             "after": h.after.as_dict()} for h in history]}, ensure_ascii=False))
        return 0
    print(f"library {args.library!r} document {args.doc_id!r}: {describe(acl)}")
    print(f"changes: {len(history)}" + (" (newest first)" if history else ""))
    for h in history:
        print(f"  #{h.seq}  {h.changed_at}  by {h.changed_by}: {describe(h.before)} -> {describe(h.after)}")
    return 0


# -- ragspine query --as USER -----------------------------------------------------------------
def add_viewer_flags(parser: argparse.ArgumentParser) -> None:
    """``--as USER`` and ``--tenant T``: whom a query runs for (see :func:`viewer_from_args`)."""
    parser.add_argument("--as", dest="as_user", metavar="USER",
                        help="search as this user of the tenant, with its groups (default: as no principal, who reads only"
                        " documents without an ACL)")
    parser.add_argument("--tenant", metavar="T", help="the tenant whose user --as names (default: the only tenant)")


def viewer_from_args(args: argparse.Namespace, stack: Any) -> Viewer:
    """The viewer of ``--as USER [--tenant T]``: that user with its groups, read from the service
    tables now; without ``--as``, :data:`~ragspine.security.principals.ANONYMOUS`. An unknown
    user or tenant is a one-line :class:`CliError`."""
    from ragspine.security.principals import ANONYMOUS, Viewer, name_key

    user, tenant = getattr(args, "as_user", None), getattr(args, "tenant", None)
    if user is None:
        if tenant is not None:
            raise CliError("--tenant names the tenant of --as USER: give --as too")
        return ANONYMOUS
    try:
        key = name_key(user, "user")
    except ConfigError as exc:
        raise CliError(f"--as: {exc}") from None
    try:
        from ragspine.service.store import ServiceStore
    except ImportError:
        raise CliError("--as reads the tenant's users from the service tables: pip install 'ragspine[server]'") from None
    store = ServiceStore.for_stack(stack)
    try:
        tenant = tenant if tenant is not None else _only_tenant(store)
        if store.get_tenant(tenant) is None:
            raise CliError(f"--tenant: tenant {tenant!r} not found (see POST /v1/admin/tenants)")
        principal = store.principal_for(tenant, key)
    finally:
        store.close()
    if principal is None:
        raise CliError(f"--as: no user {user!r} in tenant {tenant!r} (see `ragspine principals list --tenant {tenant}`)")
    return Viewer(principal)


def _only_tenant(store: Any) -> str:
    tenants: list[str] = sorted(t.tenant_id for t in store.list_tenants())
    if len(tenants) == 1:
        return tenants[0]
    if not tenants:
        raise CliError("--as: there is no tenant, so no user (create one with POST /v1/admin/tenants, its users with"
                       " `ragspine principals add-user`)")
    raise CliError(f"--as: {len(tenants)} tenants ({', '.join(tenants[:5])}{', ...' if len(tenants) > 5 else ''}): name the"
                   " user's with --tenant T")


def _library_acls(stack: Any, library_ids: Sequence[str] | None) -> dict[str, dict[str, ACL]]:
    """``{library: {doc_id: ACL}}`` of the libraries searched (default: all) that hold an ACL."""
    from ragspine.retrieval.chunking.chunk_store import DocumentAcls

    names = list(dict.fromkeys(library_ids)) if library_ids else [lib.library_id for lib in stack.libraries()]
    out: dict[str, dict[str, ACL]] = {}
    for name in names:
        store = stack.db.chunk_store(name)
        if isinstance(store, DocumentAcls) and store.acl_seq():  # 0: never an ACL here (no read of the table)
            acls = store.document_acls()[1]
            if acls:
                out[name] = acls
    return out


def hidden_documents(stack: Any, library_id: str, viewer: Viewer) -> set[str]:
    """The doc ids of ``library_id`` that ``viewer`` may not read (``set()`` for a viewer that sees
    everything, or a library without any ACL: no read of the ACL table)."""
    if viewer.everything:
        return set()
    acls = _library_acls(stack, [library_id]).get(library_id, {})
    return {doc_id for doc_id, acl in acls.items() if not viewer.sees(acl)}


def note_left_out(stack: Any, library_ids: Sequence[str] | None, viewer: Viewer, *,
                  hint: str = "pass --as USER [--tenant T] to search as a user") -> None:
    """Without ``--as``, one note on stderr when the searched libraries hold documents with an
    ACL: the search ran as no principal, so it left them out."""
    if viewer.principal is not None or viewer.everything:
        return
    held = _library_acls(stack, library_ids)
    if held:
        where = ", ".join(f"{len(acls)} in {name!r}" for name, acls in held.items())
        print(f"ragspine: note: documents with an ACL ({where}) were left out: this search ran as no principal"
              f" (documents without an ACL only); {hint}", file=sys.stderr)


def visible_hints(stack: Any, library_ids: Sequence[str] | None, viewer: Viewer, hints: list[dict[str, Any]] | None) -> Any:
    """``hints`` (``--visual``'s page hints) less those of documents ``viewer`` may not read: the
    visual index knows no ACL, so its hints are checked here, as the snippets were."""
    from ragspine.security.principals import OPEN

    if not hints or viewer.everything:
        return hints
    held = _library_acls(stack, library_ids)
    return [h for h in hints if viewer.sees(held.get(h["library_id"], {}).get(h["doc_id"], OPEN))]


# -- ragspine ingest: front matter / sidecar ACLs ------------------------------------------------
class IngestAcls:
    """What ``ragspine ingest`` does with each document's ACL (front matter / sidecar): it travels
    with the document's chunks (``DocumentChunks.acl``, one transaction) — except for a document
    whose text is unchanged, which a resumed ingest skips by its fingerprint (an ACL is no part of
    it: changing only the ACL re-embeds nothing): its ACL is written here, before the skip
    (``set_acls``, recorded, no new version). :attr:`changed` counts those."""

    def __init__(self, store: Any, *, resume: bool) -> None:
        self.store, self.resume, self.changed = store, resume, 0
        self._stored: dict[str, ACL] | None = None

    def carry(self, doc: SourceDocument, chunks: Sequence[Chunk]) -> ACL | None:
        """``doc``'s ACL for its :class:`~ragspine.retrieval.chunking.chunk_store.DocumentChunks`."""
        from ragspine.retrieval.chunking.chunk_store import DocumentAcls, Fingerprints, fingerprint
        from ragspine.security.principals import OPEN

        if doc.acl is None:
            return None
        if not isinstance(self.store, DocumentAcls):
            raise CliError(f"{doc.source}: sets an ACL, but this chunk store ({type(self.store).__name__}) keeps none;"
                           " use the embedded default or PostgreSQL, or remove acl/allow/deny from its fields")
        if self._stored is None:
            self._stored = self.store.document_acls()[1]
        if self.resume and isinstance(self.store, Fingerprints) and self._stored.get(doc.doc_id, OPEN) != doc.acl:
            if self.store.fingerprints([doc.doc_id]).get(doc.doc_id) == fingerprint(chunks, doc.valid_as_of):
                self.changed += self.store.set_acls({doc.doc_id: doc.acl}, by="ingest")
        return doc.acl
