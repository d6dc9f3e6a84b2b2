"""Request and response bodies of the HTTP API (pydantic), shared by the routes.

Request bodies of ``/v1`` forbid unknown fields (a typo such as ``filter`` for ``filters`` is a
422 naming it); Dify's body ignores them (Dify may add fields).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from ragspine.errors import ConfigError, IngestError
from ragspine.retrieval.metadata import validate_metadata
from ragspine.retrieval.ranking import MAX_RERANK_DEPTH
from ragspine.retrieval.sensitivity import DEFAULT_SENSITIVITY, parse_sensitivity, reserved_key
from ragspine.security.principals import ACL
from ragspine.service.profile_models import RecipeIn, RecipeOut

NAME_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
MAX_BATCH = 1000
MAX_TOP_K = 200
MAX_LIBRARIES = 100


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- admin ---------------------------------------------------------------------------------
class TenantIn(_In):
    tenant_id: str = Field(pattern=NAME_PATTERN, description="1-64 characters of A-Z a-z 0-9 . _ -")
    name: str = Field("", max_length=200)


class KeyIn(_In):
    label: str = Field("", max_length=200)
    principal: str | None = Field(None, max_length=128, description="a user of the tenant: the key acts as that user")
    trusted_app: bool = Field(
        False, description="an application (e.g. a Dify workspace) that names its end user per request in X-RAGSpine-User",
    )

    @model_validator(mode="after")
    def _one_identity(self) -> KeyIn:
        if self.principal is not None and self.trusted_app:
            raise ValueError("a key acts as one user (principal) or names its users per request (trusted_app), not both")
        return self


class RotateIn(_In):
    grace_seconds: int = Field(0, ge=0, le=30 * 86400, description="how long the old key keeps working (0: revoked now)")
    label: str | None = Field(None, max_length=200)


class KeyOut(BaseModel):
    key_id: str
    prefix: str
    label: str
    created_at: str
    expires_at: str | None = None
    revoked_at: str | None = None
    active: bool
    principal: str | None = Field(None, description="the user the key acts as (its canonical name)")
    trusted_app: bool = Field(False, description="the key names its end user per request in X-RAGSpine-User")


class IssuedKeyOut(KeyOut):
    key: str = Field(description="the API key itself: shown once, stored only as a hash")


class TenantOut(BaseModel):
    tenant_id: str
    name: str
    created_at: str


class TenantCreatedOut(TenantOut):
    api_key: IssuedKeyOut


class PrincipalIn(_In):
    name: str = Field(
        min_length=1, max_length=128,
        description="1-128 characters, no white space, no , ; : / \\ * ? \" ' < > | = ( ) [ ] { }; compared case- and"
        " width-insensitively (NFKC, case-folded); a name that looks like an existing one (Cyrillic а for Latin a) is refused",
    )


class PrincipalOut(BaseModel):
    name: str = Field(description="as written when created")
    key: str = Field(description="the canonical name (NFKC, case-folded) that ACL entries and keys use")
    created_at: str


class UserOut(PrincipalOut):
    groups: list[str] = Field(default_factory=list, description="the names of the groups the user is in")


class GroupOut(PrincipalOut):
    members: list[str] = Field(default_factory=list, description="the names of its users")


class RemovedUserOut(UserOut):
    revoked_keys: list[str] = Field(default_factory=list, description="the ids of the keys bound to the user, revoked with it")


class MembershipOut(BaseModel):
    group: str = Field(description="the group's name as written when created")
    user: str = Field(description="the user's name as written when created")


# -- libraries and documents ---------------------------------------------------------------
class LibraryIn(_In):
    name: str = Field(pattern=NAME_PATTERN, description="unique per tenant; 1-64 characters of A-Z a-z 0-9 . _ -")
    description: str = Field("", max_length=4000, description="what the library holds (the keyword router reads it)")
    profile: str | None = Field(
        None, max_length=32,
        description="a named recipe (seed | economy | quality | multilingual; docs: Profiles) whose choices fill every field below"
        " the request leaves out (default: the server's settings)",
    )
    recipe: RecipeIn | None = Field(
        None,
        description="the library's choices as a recipe (the JSON form of a Profile, sparse; docs: Profiles): what it leaves out comes"
        " from `profile`, else the server's. The flat fields below are the same choices, kept for older clients; a choice made in both"
        " with different values is refused",
    )
    embedding_model: str | None = Field(None, description="an embedding backend the server offers (default: its RAGSPINE_EMBEDDING), or none")
    retrieval_mode: str | None = Field(None, description="auto | hybrid | vector | economy (default: the server's)")
    chunker: str | None = Field(None, description="how its documents are cut (a RAGSPINE_CHUNKER name; default: the server's)")
    contextual: str | None = Field(
        None,
        description="none | header: the title · entity · period · heading header on the text BM25 indexes and the dense leg embeds (default: the server's)",
    )
    reranker: str | None = Field(None, description="a RAGSPINE_RERANKER name (default: the server's)")
    rerank_depth: int | None = Field(
        None, ge=1, le=MAX_RERANK_DEPTH, description="fused candidates the reranker and postprocessors see (default: the server's)",
    )
    postprocessor: str | None = Field(None, max_length=200, description="comma-separated RAGSPINE_POSTPROCESSOR names (default: the server's)")
    fusion_weights: str | dict[str, float] | None = Field(
        None, description='weighted RRF: "bm25=1,vector=0.5" or {"bm25": 1, "vector": 0.5}; "adaptive"; "zscore" (score fusion) (default: the server\'s)'
    )
    query_transform: str | None = Field(
        None, max_length=32,
        description="hyde | rag_fusion | step_back | none, kept with the library (default: the server's RAGSPINE_QUERY_TRANSFORM at each search;"
        " needs the server's LLM)",
    )
    decompose: str | None = Field(None, max_length=32, description="llm | none, kept with the library (default: the server's RAGSPINE_QUERY_DECOMPOSE)")
    adaptive: str | None = Field(None, max_length=32, description="heuristic | llm | none, kept with the library (default: the server's RAGSPINE_ADAPTIVE)")
    corrective: bool | None = Field(None, description="the corrective loop, kept with the library (default: the server's RAGSPINE_CORRECTIVE)")
    query_fanout: int | None = Field(None, ge=1, le=8, description="most variants / sub-questions per question, at most the server's RAGSPINE_QUERY_FANOUT")
    raptor: bool | None = Field(None, description="search its RAPTOR tree too (needs vectors; default: the server's RAGSPINE_RAPTOR)")


class LibraryOut(BaseModel):
    name: str
    description: str
    embedding_model: str
    retrieval_mode: str
    chunker: str = "default"
    contextual: str = "none"
    reranker: str = "none"
    rerank_depth: int = 50
    postprocessor: str = "none"
    fusion_weights: str | None = None
    query_transform: str | None = Field(None, description="its own query transform (null: the server's)")
    decompose: str | None = Field(None, description="its own decomposition (null: the server's)")
    adaptive: str | None = Field(None, description="its own Adaptive-RAG classifier (null: the server's)")
    corrective: bool | None = Field(None, description="its own corrective loop switch (null: the server's)")
    query_fanout: int | None = Field(None, description="its own fan-out (null: the server's)")
    raptor: bool | None = Field(None, description="its own RAPTOR switch (null: the server's)")
    recipe: RecipeOut = Field(description="what its searches run: its own choices over the server's, as a whole recipe (docs: Profiles)")
    created_at: str
    documents: int = 0
    chunks: int = 0


class DocumentIn(_In):
    doc_id: str = Field(min_length=1, max_length=512)
    title: str = Field("", max_length=1000)
    text: str = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict, description="scalars only: string, number, boolean, null")
    sensitivity: str = Field(DEFAULT_SENSITIVITY, min_length=1, max_length=64)
    valid_as_of: str = Field("", max_length=64)
    acl: dict[str, Any] | list[str] | str | None = Field(
        None, description="who may read it: {\"allow\": [...], \"deny\": [...]} of 'group:<name>' / 'user:<name>' entries (a list or a"
        " comma-separated string: allow); {} opens it to every principal; left out: no ACL is sent (docs: Document ACLs)",
    )

    @field_validator("acl")
    @classmethod
    def _acl(cls, value: Any) -> dict[str, list[str]] | None:
        return None if value is None else parsed_acl(value)

    @field_validator("doc_id")
    @classmethod
    def _doc_id(cls, value: str) -> str:
        if not value.strip() or any(ord(ch) < 32 for ch in value):
            raise ValueError("doc_id must be printable and not blank")
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the document is empty")
        return value  # NUL and lone surrogates: refused by document_payload, as on every ingest path

    @field_validator("sensitivity", mode="before")
    @classmethod
    def _sensitivity(cls, value: Any) -> str:
        try:
            return parse_sensitivity(value, "sensitivity", default=None)  # an explicit null is refused
        except IngestError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(k for k in value if reserved_key(k))
        if reserved:
            raise ValueError(f"{reserved[0]!r} is a document field, not metadata: set it at the top level")
        try:
            return validate_metadata(value)
        except IngestError as exc:
            raise ValueError(str(exc)) from None


def parsed_acl(value: Any) -> dict[str, list[str]]:
    """``value`` read by :meth:`ACL.parse`, canonical (``{"allow", "deny"}``); a ``ValueError``
    with its message (the documented 422) when it is no ACL."""
    try:
        return ACL.parse(value).as_dict()
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


class AclIn(_In):
    """A document's ACL (both lists empty or left out: no ACL, every principal of the tenant reads it)."""

    allow: list[str] | str | None = Field(None, description="'group:<name>' / 'user:<name>' entries (or one comma-separated string)")
    deny: list[str] | str | None = Field(None, description="entries refused even when allowed")

    def acl(self) -> ACL:
        return ACL.parse({"allow": self.allow, "deny": self.deny})

    @model_validator(mode="after")
    def _valid(self) -> AclIn:
        parsed_acl({"allow": self.allow, "deny": self.deny})
        return self


class AclBody(BaseModel):
    allow: list[str] = Field(default_factory=list, description="canonical entries, sorted")
    deny: list[str] = Field(default_factory=list)


class AclChangeOut(BaseModel):
    seq: int
    doc_id: str
    before: AclBody
    after: AclBody
    changed_at: str
    changed_by: str


class AclOut(BaseModel):
    library: str
    doc_id: str
    acl: AclBody = Field(description="the document's ACL (both lists empty: none)")
    open: bool = Field(description="no ACL: every principal of the tenant reads it")
    changed: bool | None = Field(None, description="PUT only: whether this call changed it")
    history: list[AclChangeOut] = Field(default_factory=list, description="its latest recorded changes, newest first")


class DocumentBatchIn(_In):
    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_BATCH)

    @model_validator(mode="after")
    def _unique(self) -> DocumentBatchIn:
        seen: set[str] = set()
        for doc in self.documents:
            if doc.doc_id in seen:
                raise ValueError(f"doc_id {doc.doc_id!r} appears twice in one batch")
            seen.add(doc.doc_id)
        return self


class JobOut(BaseModel):
    job_id: str
    library: str
    state: str = Field(description="queued | running | succeeded | failed")
    progress: str = Field(description="documents done/total")
    done: int
    total: int
    doc_ids: list[str]
    chunks: int = Field(description="chunks written so far")
    error: str | None = None
    warning: str | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None


# -- retrieval -----------------------------------------------------------------------------
class RetrieveIn(_In):
    query: str = Field(min_length=1, max_length=4000)
    libraries: list[str] | None = Field(
        None, max_length=MAX_LIBRARIES, description=f"library names, at most {MAX_LIBRARIES} (default: every library of the tenant)"
    )
    filters: Any = Field(None, description='{"field": value | {"op": value}} or [{"field", "op", "value"}]; ops: eq ne in nin gt gte lt lte between')
    top_k: int = Field(10, ge=1, le=MAX_TOP_K)
    mode: str | None = Field(None, description="auto | hybrid | vector | economy (default: each library's)")
    retry_without_filters: bool = Field(False, description="when the filtered result is empty, search once more without filters")
    boxes: bool = Field(
        False, description="give each snippet of a PDF (or an OCR'd image) `boxes`: its lines' boxes on its page(s),"
        " [{page, box: [left, bottom, right, top]}] in PDF points (kept at ingest; absent otherwise)",
    )
    reranker: str | None = Field(None, description="this request's reranker (a RAGSPINE_RERANKER name; default: each library's)")
    rerank_depth: int | None = Field(None, ge=1, le=MAX_RERANK_DEPTH, description="this request's rerank depth (default: each library's)")
    postprocessor: str | None = Field(None, max_length=200, description="this request's postprocessor chain (default: each library's)")
    fusion_weights: str | dict[str, float] | None = Field(
        None, description="this request's fusion weights, \"adaptive\" or \"zscore\" (default: each library's)",
    )
    query_transform: str | None = Field(
        None, max_length=32, description="hyde | rag_fusion | step_back | none (default: RAGSPINE_QUERY_TRANSFORM; needs the server's LLM)",
    )
    decompose: str | None = Field(
        None, max_length=32, description="llm | none: sub-questions, each searched, results fused (default: RAGSPINE_QUERY_DECOMPOSE)",
    )
    adaptive: str | None = Field(None, max_length=32, description="heuristic | llm | none: single-shot or decomposition (default: RAGSPINE_ADAPTIVE)")
    corrective: bool | None = Field(
        None, description="grade the answer; drop filters (if retry_without_filters), then rewrite, then refuse (default: RAGSPINE_CORRECTIVE)",
    )
    query_fanout: int | None = Field(None, ge=1, le=8, description="most variants / sub-questions per question, at most the server's RAGSPINE_QUERY_FANOUT")
    raptor: bool | None = Field(
        None, description="search each library's RAPTOR tree too: synthesis hits as their leaves (needs vectors and a built tree; default: RAGSPINE_RAPTOR)",
    )
    recipe: RecipeIn | None = Field(
        None,
        description="this request's choices as a sparse recipe (docs: Profiles): mode, ranking, reasoning, raptor — the same choices as the"
        " flat fields; what a library stores (embedding, chunker, chunk_chars, chunk_packing, contextual) and its options cannot change per request",
    )


class DenseIncompleteOut(BaseModel):
    library: str
    missing: int = Field(description="candidate chunks without a vector yet")
    total: int = Field(description="candidate chunks of the search")


class RetrieveOut(BaseModel):
    query: str
    libraries: list[str]
    snippets: list[dict[str, Any]]
    filters_dropped: bool = Field(
        default=False, description="true when nothing matched the filters and these snippets were found without them (retry_without_filters)"
    )
    dense_incomplete: list[DenseIncompleteOut] = Field(
        default_factory=list,
        description="libraries whose dense leg lacked vectors: the answer came from BM25 plus the vectors that exist (`ragspine embed` computes the rest)",
    )
    refusal: str | None = Field(None, description="present when the question was refused (security gate, corrective loop): a fixed message; no snippets then")
    refused: list[dict[str, Any]] | None = Field(
        None, description="present with a security deny list or query-time reasoning: each refused text {kind, query, entity} (a HyDE passage is never shown)",
    )
    trace: list[dict[str, Any]] | None = Field(
        None, description="present with a security deny list or query-time reasoning: every step (gate, adaptive, decompose, transform, search, grade, act)",
    )

    @model_serializer(mode="wrap")
    def _plain_when_unused(self, handler: Any) -> Any:
        """Without a deny list or reasoning the answer has exactly the fields it always had."""
        data = handler(self)
        for key in ("refusal", "refused", "trace"):
            if isinstance(data, dict) and data.get(key) is None:
                data.pop(key, None)
        return data


# -- Dify's external knowledge API ---------------------------------------------------------
class _DifyIn(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DifyRetrievalSetting(_DifyIn):
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K)
    score_threshold: float | None = Field(None, ge=0.0, le=1.0)


class DifyCondition(_DifyIn):
    name: list[str] | str
    comparison_operator: str
    value: Any = None


class DifyMetadataCondition(_DifyIn):
    logical_operator: str | None = None
    conditions: list[DifyCondition] | None = None


class DifyRequest(_DifyIn):
    knowledge_id: str = ""
    query: str = ""
    retrieval_setting: DifyRetrievalSetting | None = None
    metadata_condition: DifyMetadataCondition | None = None
