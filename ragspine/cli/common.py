"""What every ``ragspine`` subcommand shares.

:func:`settings_from_args` is the one place the command line loads settings: the global
options (``--db``, ``--profile``, ``--option``, ``--contextual``; before or after the command) become
settings there, for every subcommand alike; :func:`stack_from_args` adds ``--mode``. No other
CLI module calls :func:`~ragspine.config.load_settings`.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from ragspine.config import Settings, load_settings
from ragspine.errors import RagspineError

if TYPE_CHECKING:
    from ragspine.stack import Stack

__all__ = ["EXIT_USAGE", "CliError", "CliParser", "Subcommands", "positive_int", "settings_from_args", "stack_from_args"]

EXIT_USAGE = 2


class CliError(RagspineError):
    pass


class Subcommands(Protocol):
    """Where a CLI module adds its subcommands: the argparse subparsers action (or a wrapper of it)."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


class CliParser(argparse.ArgumentParser):
    """Usage errors, too, are one line on stderr (subcommand parsers inherit this class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def settings_from_args(args: argparse.Namespace, **changes: Any) -> Settings:
    """The settings a command runs with: ``RAGSPINE_*`` as resolved under ``--profile`` (else
    ``RAGSPINE_PROFILE``), then ``--db``, ``--option`` and ``--contextual``, then ``changes`` (the command's own)."""
    profile = getattr(args, "profile", None)
    settings = load_settings({**os.environ, "RAGSPINE_PROFILE": profile} if profile else None)
    given: dict[str, Any] = {}
    if getattr(args, "db", None):
        given["chunk_store"] = args.db
    if getattr(args, "contextual", None):
        from ragspine.retrieval.contextual import parse_contextual

        given["contextual"] = parse_contextual(args.contextual)
    if getattr(args, "option", None):
        from ragspine.profile import canonical_options, parse_options

        merged = {**parse_options(settings.profile_options), **parse_options(",".join(args.option))}  # a flag wins over the variable
        given["profile_options"] = canonical_options(",".join(f"{k}={v}" for k, v in merged.items()))
    given.update(changes)
    return settings.replace(**given) if given else settings


def stack_from_args(args: argparse.Namespace, **changes: Any) -> Stack:
    """The :class:`~ragspine.stack.Stack` of :func:`settings_from_args`, in ``--mode`` if given."""
    from ragspine.stack import Stack

    return Stack(settings_from_args(args, **changes), mode=getattr(args, "mode", None))


def positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {raw!r}")
    return value
