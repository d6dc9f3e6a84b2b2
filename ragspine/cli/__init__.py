"""``ragspine`` — the command line.

    ragspine ingest PATH... --library NAME   add or replace documents (text, Markdown, PDF, Office, CSV, HTML)
    ragspine query "..." [--library L] [--filter FIELD OP VALUE] [--mode M] [--top-k N] [--llm SPEC] [--json]
                   [--query-transform T] [--decompose D] [--adaptive A] [--corrective] [--trace] [--raptor]
                   [--as USER [--tenant T]]   as a tenant's user (document ACLs); default: no principal
    ragspine show LOCATOR [--library L] [--context N] [--json]
                                             a cited passage (a snippet's source_locator) with its page and context
    ragspine libraries                       list libraries
    ragspine stats                           counts and the resolved stack
    ragspine config                          every RAGSPINE_* setting as resolved
    ragspine demo                            ingest a bundled corpus and answer questions
    ragspine migrate [--url URL] [--schema S] [--revision REV] [--downgrade] [--rebuild-postings LIB ...]
                                             apply the PostgreSQL schema revisions (Alembic)
    ragspine serve [--host H] [--port P] [--workers N]   the HTTP service (FastAPI on uvicorn)
    ragspine worker [--burst]                run ingest jobs from the Redis job queue (RQ)
    ragspine facts ingest FILE | facts list  the structured channel's facts (see ragspine/cli/structured.py)
    ragspine metric METRIC --entity E --period P [--channel C] [--as-of DATE] [--json]
                                             one number from the fact table: found / not_found / unrecognized_param
    ragspine graph edges|rollup|peers|trace  the relation graph: cited edges, subsidiary roll-up, peers, derivations
    ragspine workflow preview [--format json|yaml]   the pipeline as a Dify workflow picture (not executable)
    ragspine ask "question" [--library L] [--as-of DATE] [--json]
                                             the agent: structured, narrative or composite, with sources
    ragspine raptor build|status|show [--library L]   RAPTOR trees (see ragspine/cli/raptor.py)
    ragspine principals add-user|remove-user|add-group|remove-group|add-member|remove-member|list --tenant T
                                             a tenant's users and groups (who a key acts as; ACLs name them)
    ragspine acl set LIBRARY DOC_ID [--allow ENTRY,...] [--deny ENTRY,...] [--open] | acl show LIBRARY [DOC_ID] [--json]
                                             who may read a document (recorded; no re-ingest)

Every command takes the global options ``--db``, ``--mode``, ``--profile`` and ``--contextual``
(before or after its name) through one function, :func:`~ragspine.cli.common.settings_from_args`.
Bad input exits with status 2 and one line on stderr naming the problem; nothing is
written, so the previous version of every document stays active.

The modules: ``app`` (the parser and dispatch), ``common`` (settings and stack from the
options), ``ingest`` (ingest, embed), ``query`` (query, libraries, stats), ``show``, ``config`` (config,
migrate), ``demo``, ``serve`` (serve, worker), and one per feature: ``structured`` (facts,
metric), ``graph``, ``workflow``, ``agent`` (ask), ``raptor``, ``principals``, ``acl`` (acl, and
``query --as``), with the query flags of
``filtering`` and ``reasoning``. Only this package (and the service) imports :mod:`ragspine.stack`.
"""

from ragspine.cli.app import build_parser, main
from ragspine.cli.common import EXIT_USAGE, CliError

_parser = build_parser  # the name tests and scripts have used

__all__ = ["EXIT_USAGE", "CliError", "build_parser", "main"]
