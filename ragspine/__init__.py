"""RAGSpine: a retrieval stack for grounded question answering.

``import ragspine`` is light: it imports no optional driver (onnxruntime, fastembed,
psycopg, qdrant_client, redis, fastapi). Those load only when the backend that needs
them is chosen.
"""

from ragspine.errors import (
    BackendError,
    ConfigError,
    FilterError,
    IngestError,
    MissingDependencyError,
    RagspineError,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "RagspineError",
    "ConfigError",
    "MissingDependencyError",
    "BackendError",
    "FilterError",
    "IngestError",
]
