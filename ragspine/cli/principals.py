"""``ragspine principals ...`` (registered by :mod:`ragspine.cli.app`): a tenant's users and groups.

    ragspine principals add-user NAME --tenant T          a user (a key bound to it acts as it)
    ragspine principals remove-user NAME --tenant T       the user, its memberships, and the keys bound to it (revoked)
    ragspine principals add-group NAME --tenant T
    ragspine principals remove-group NAME --tenant T      the group and its memberships
    ragspine principals add-member GROUP USER --tenant T
    ragspine principals remove-member GROUP USER --tenant T
    ragspine principals list --tenant T [--json]          users with their groups, then groups with their member counts

The same tables the service's ``/v1/admin/tenants/{t}/users`` and ``/groups`` endpoints write:
on the embedded default the service tables in the chunk store's SQLite file (``--db`` /
``RAGSPINE_CHUNK_STORE``), on PostgreSQL the database ``RAGSPINE_CHUNK_STORE`` names (migrated:
``ragspine migrate``). Names compare case- and width-insensitively (``HR`` is ``ｈｒ``); a name
that looks like an existing one (Cyrillic ``асе`` beside ``ace``) is refused, naming it. A
membership change counts on the next request of every key of that user.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ragspine.cli.common import CliError, Subcommands, stack_from_args

__all__ = ["add_principals_commands", "cmd_principals"]

#: the one-name actions: action → (kind, help)
_ONE = {"add-user": ("user", "create a user"),
        "remove-user": ("user", "remove a user, its memberships, and revoke the keys bound to it"),
        "add-group": ("group", "create a group"), "remove-group": ("group", "remove a group and its memberships")}


def add_principals_commands(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add ``principals`` to the CLI's subcommands."""
    principals = sub.add_parser("principals", help="a tenant's users and groups (who a key acts as; document ACLs name them)")
    actions = principals.add_subparsers(dest="principals_action", required=True, metavar="ACTION")

    def action(name: str, help: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, parents=[common], help=help)
        parser.add_argument("--tenant", required=True, help="the tenant (created with POST /v1/admin/tenants)")
        return parser

    for name, (kind, help) in _ONE.items():
        action(name, help).add_argument("name", help=f"the {kind}'s name")
    for name, verb in (("add-member", "put a user in a group"), ("remove-member", "take a user out of a group")):
        parser = action(name, verb)
        parser.add_argument("group")
        parser.add_argument("user")
    action("list", "users with their groups, then groups").add_argument("--json", action="store_true", help="print JSON")


def cmd_principals(args: argparse.Namespace) -> int:
    handlers: dict[str, Callable[[Any, argparse.Namespace], int]] = {
        "add-member": _add_member, "remove-member": _remove_member, "list": _list,
        **dict.fromkeys(("add-user", "add-group"), _add), **dict.fromkeys(("remove-user", "remove-group"), _remove),
    }
    with _store(args) as store:
        return handlers[args.principals_action](store, args)


@contextmanager
def _store(args: argparse.Namespace) -> Iterator[Any]:
    """The service store of the configured stack; its refusals as one-line CLI errors."""
    from ragspine.service.store import Conflict, ServiceStore, Unknown

    with stack_from_args(args, retrieval_mode="economy") as stack:
        store = ServiceStore.for_stack(stack)
        try:
            if store.get_tenant(args.tenant) is None:
                raise CliError(f"tenant {args.tenant!r} not found (create it with POST /v1/admin/tenants)")
            yield store
        except (Conflict, Unknown) as exc:
            raise CliError(str(exc)) from None
        finally:
            store.close()


def _add(store: Any, args: argparse.Namespace) -> int:
    kind = _ONE[args.principals_action][0]
    entry = store.add_principal(args.tenant, kind, args.name)
    print(f"added {kind} {entry.name!r} to tenant {args.tenant!r} (key {entry.key!r})")
    return 0


def _remove(store: Any, args: argparse.Namespace) -> int:
    kind = _ONE[args.principals_action][0]
    entry, revoked = store.remove_principal(args.tenant, kind, args.name)
    print(f"removed {kind} {entry.name!r} from tenant {args.tenant!r} with its memberships"
          + (f"; revoked {len(revoked)} key(s) bound to it: {', '.join(revoked)}" if revoked else ""))
    return 0


def _pair(store: Any, args: argparse.Namespace) -> tuple[str, str]:
    """The group's and the user's names as created; a CLI error naming the one missing."""
    names = []
    for kind, name in (("group", args.group), ("user", args.user)):
        entry = store.get_principal(args.tenant, kind, name)
        if entry is None:
            raise CliError(f"{kind} {name!r} of tenant {args.tenant!r} not found")
        names.append(entry.name)
    return names[0], names[1]


def _add_member(store: Any, args: argparse.Namespace) -> int:
    group, user = _pair(store, args)
    added = store.add_member(args.tenant, args.group, args.user)
    print(f"{user!r} {'is now' if added else 'was already'} in group {group!r}")
    return 0


def _remove_member(store: Any, args: argparse.Namespace) -> int:
    group, user = _pair(store, args)
    if not store.remove_member(args.tenant, args.group, args.user):
        raise CliError(f"user {user!r} is not in group {group!r}")
    print(f"{user!r} is no longer in group {group!r}")
    return 0


def _list(store: Any, args: argparse.Namespace) -> int:
    groups = {g.key: g.name for g in store.list_principals(args.tenant, "group")}
    member_of = store.memberships(args.tenant)
    users = [(u.name, [groups[g] for g in member_of.get(u.key, []) if g in groups]) for u in store.list_principals(args.tenant, "user")]
    counts = {key: sum(key in gs for gs in member_of.values()) for key in groups}
    if args.json:
        print(json.dumps({"users": [{"name": n, "groups": gs} for n, gs in users],
                          "groups": [{"name": name, "members": counts[key]} for key, name in groups.items()]}, ensure_ascii=False))
        return 0
    print(f"users of tenant {args.tenant!r}: {len(users)}")
    for name, gs in users:
        print(f"  {name}" + (f"  groups: {', '.join(gs)}" if gs else "  (no group)"))
    print(f"groups: {len(groups)}")
    for key, name in groups.items():
        print(f"  {name}  {counts[key]} member(s)")
    return 0
