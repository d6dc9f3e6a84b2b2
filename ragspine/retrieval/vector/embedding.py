"""The ``EmbeddingBackend`` role: texts in, one vector per text out.

``embed_texts(texts) -> list[list[float]]`` is the whole contract (the seed's): one vector per
text, in order, all of one dimension; deterministic for a given model; raises on failure
(the caller keeps the previous state). What a backend may declare besides, each a
runtime-checkable capability:

* :class:`ModelInfo` — ``model_id`` (names the vector space: cached vectors and stored
  vectors of two models are never mixed) and ``dim`` (``None`` until known);
* :class:`DeclaresLanguages` — ``languages``, the ISO codes it reads (``None``: any);
* :class:`ReportsUnknownTokens` — ``unknown_token_share(texts)``, the share of each text's
  word pieces the model does not know. The dense gate (``gate.py``) reads the last two;
* :class:`EmbedsQueries` — ``embed_query(text)``, for asymmetric models (e5's ``query:`` /
  ``passage:``): a query is embedded with it, a chunk with ``embed_texts``.
"""

from __future__ import annotations

from typing import Collection, Protocol, Sequence, runtime_checkable


@runtime_checkable
class EmbeddingBackend(Protocol):
    def embed_texts(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in the order given; every vector of the model's dimension."""
        ...


@runtime_checkable
class ModelInfo(Protocol):
    """A backend that names its model and (once known) its dimension."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int | None: ...


@runtime_checkable
class DeclaresLanguages(Protocol):
    """A backend that says which languages it reads (``None``: every language)."""

    @property
    def languages(self) -> Collection[str] | None: ...


@runtime_checkable
class ReportsUnknownTokens(Protocol):
    """A backend that can tell how much of a text its vocabulary does not know."""

    def unknown_token_share(self, texts: Sequence[str]) -> list[float]:
        """For each text, the share (0..1) of its word pieces unknown to the model."""
        ...


@runtime_checkable
class EmbedsQueries(Protocol):
    """A backend that embeds a query differently from a passage."""

    def embed_query(self, text: str) -> list[float]: ...


def embed_query(backend: EmbeddingBackend, text: str) -> list[float]:
    """``text``'s query vector: ``embed_query`` where the backend has one, else its
    ``embed_texts`` vector."""
    if isinstance(backend, EmbedsQueries):
        return backend.embed_query(text)
    return backend.embed_texts([text])[0]


def model_namespace(backend: object) -> str:
    """``model_id@dim`` of a backend (its class name when it declares no :class:`ModelInfo`)."""
    if isinstance(backend, ModelInfo):
        model_id, dim = backend.model_id or type(backend).__name__, backend.dim
    else:
        model_id, dim = type(backend).__name__, None
    return f"{model_id}@{dim}" if dim else str(model_id)


def model_id_of(backend: object) -> str:
    """The backend's model id (its class name when it declares none)."""
    return model_namespace(backend).split("@")[0]


def vector_dim(backend: EmbeddingBackend) -> int:
    """The backend's dimension: declared, else measured on one probe text."""
    dim = backend.dim if isinstance(backend, ModelInfo) else None
    return int(dim) if dim else len(backend.embed_texts(["dimension probe"])[0])
