"""``ragspine serve`` and ``ragspine worker``: the HTTP service and the ingest job worker.

    ragspine serve [--host H] [--port P] [--workers N]   the HTTP service (FastAPI on uvicorn)
    ragspine worker [--burst]                run ingest jobs from the Redis job queue (RQ)

The server's processes read their settings from the environment: ``serve`` puts the global
options given (``--db``, ``--mode``, ``--profile``, ``--contextual``) there before it starts them.
"""

from __future__ import annotations

import argparse
import os

from ragspine.cli.common import CliError, Subcommands, settings_from_args

__all__ = ["add_serve_commands", "cmd_serve", "cmd_worker"]


def add_serve_commands(sub: Subcommands) -> None:
    """Add ``serve`` and ``worker`` to the CLI's subcommands (``sub.add_parser(name, ...)``)."""
    serve = sub.add_parser("serve", help="run the HTTP service (FastAPI on uvicorn; OpenAPI at /docs)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument("--workers", type=int, default=1, help="server processes (default: 1)")
    worker = sub.add_parser("worker", help="run ingest jobs from the Redis job queue (RQ)")
    worker.add_argument("--burst", action="store_true", help="stop when the queue is empty")


def cmd_serve(args: argparse.Namespace) -> int:
    if args.workers <= 0 or not 0 < args.port < 65536:
        raise CliError("--workers must be positive and --port within 1..65535")
    try:
        import uvicorn
    except ImportError:
        from ragspine.errors import MissingDependencyError

        raise MissingDependencyError("uvicorn", "server", "ragspine serve") from None
    from ragspine.config import SETTINGS

    changes = {"chunk_store": args.db} if args.db else {}
    for key, flag in (("retrieval_mode", "mode"), ("profile", "profile"), ("contextual", "contextual")):
        if getattr(args, flag, None):
            changes[key] = getattr(args, flag)
    for key, value in changes.items():  # server processes read their settings from the environment
        os.environ[SETTINGS[key].env] = value
    settings = settings_from_args(args)  # a bad setting fails here, once, before uvicorn starts
    # SIGTERM/SIGINT: stop accepting, let in-flight requests finish (each is bounded by its
    # deadline), then stop — never wait longer than that
    uvicorn.run(
        "ragspine.service.app:create_app", factory=True, host=args.host, port=args.port, workers=args.workers,
        timeout_graceful_shutdown=int(settings.request_timeout) + 5,
    )
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from ragspine.service.jobs import run_worker

    return run_worker(settings_from_args(args, **({"retrieval_mode": args.mode} if args.mode else {})), burst=args.burst)
