"""Prometheus metrics, in a ``CollectorRegistry`` of the app's own (two apps in one process —
as in tests — never collide).

* ``ragspine_http_requests_total{method,route,status}`` and
  ``ragspine_http_request_duration_seconds{method,route}`` (route = the path template);
* ``ragspine_retrieval_duration_seconds{endpoint,mode}`` — ``/v1/retrieve`` and Dify's ``/retrieval``;
* ``ragspine_ingest_documents_total{outcome}``, ``ragspine_ingest_chunks_total``,
  ``ragspine_ingest_jobs_finished_total{state}`` — counted by the process that ran the job
  (the server with the in-process queue; each ``ragspine worker`` otherwise);
* ``ragspine_ingest_jobs{state}`` — every job in the database by state (all workers);
* ``ragspine_embedding_cache_{hits,misses,errors,fallbacks}_total`` — this process's cache;
* ``ragspine_dense_incomplete_queries_total{endpoint}`` — retrievals answered while a
  library's dense leg lacked vectors (``ragspine embed`` computes them);
* ``ragspine_llm_calls_total{provider}``, ``ragspine_llm_call_duration_seconds{provider}``,
  ``ragspine_llm_failures_total{provider,reason}`` (reason ``timeout | error | budget``: a
  call the request's ``RAGSPINE_LLM_MAX_CALLS`` refused) and
  ``ragspine_llm_malformed_answers_total{seam}`` (``listwise | router | filter_extractor``:
  an answer the seam could not read, and degraded on) — the :class:`LLMObserver` hook;
* ``ragspine_query_refusals_total{reason}`` (``gate | gate_probe | corrective``),
  ``ragspine_query_transforms_total{transform,outcome}`` (``hyde | rag_fusion | step_back |
  decompose | adaptive`` × ``applied | degraded | single``) and
  ``ragspine_corrective_rounds_total{action}`` (``keep | drop_filters | rewrite | refuse``) —
  the :class:`~ragspine.retrieval.reasoning.ReasoningObserver` hook;
* ``ragspine_lexical_saved_index_rejected_total{reason}`` — saved in-process lexical indexes
  this process refused and rebuilt (``format | unreadable | corrupt | versions | content``,
  see ``ragspine.retrieval.lexical.verify``);
* ``ragspine_raptor_builds_total{outcome}`` (``built | unchanged | failed``),
  ``ragspine_raptor_build_duration_seconds`` and ``ragspine_raptor_nodes_built_total`` — the
  :class:`~ragspine.retrieval.raptor.RaptorObserver` hook (``POST /v1/libraries/{name}/raptor``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("ragspine_http_requests", "HTTP requests", ["method", "route", "status"], registry=r)
        self.request_latency = Histogram(
            "ragspine_http_request_duration_seconds", "HTTP request latency", ["method", "route"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.retrieval_latency = Histogram(
            "ragspine_retrieval_duration_seconds", "retrieval latency (search only)", ["endpoint", "mode"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.rerank_latency = Histogram(
            "ragspine_rerank_seconds", "time one library's rerank of a query took", ["reranker"], registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
        self.ingest_documents = Counter("ragspine_ingest_documents", "documents ingested by this process", ["outcome"], registry=r)
        self.ingest_chunks = Counter("ragspine_ingest_chunks", "chunks written by this process", registry=r)
        self.jobs_finished = Counter("ragspine_ingest_jobs_finished", "ingest jobs this process finished", ["state"], registry=r)
        self.dense_incomplete = Counter(
            "ragspine_dense_incomplete_queries", "retrievals whose libraries' dense leg lacked vectors", ["endpoint"], registry=r
        )
        self.llm_calls = Counter("ragspine_llm_calls", "LLM calls that reached the provider", ["provider"], registry=r)
        self.llm_latency = Histogram(
            "ragspine_llm_call_duration_seconds", "time one LLM call took (retries included)", ["provider"], buckets=LLM_BUCKETS, registry=r
        )
        self.llm_failures = Counter("ragspine_llm_failures", "LLM calls that failed or the budget refused", ["provider", "reason"], registry=r)
        self.llm_malformed_answers = Counter(
            "ragspine_llm_malformed_answers", "LLM answers a seam could not read (it degraded)", ["seam"], registry=r
        )
        self.query_refusals = Counter("ragspine_query_refusals", "questions and generated queries refused", ["reason"], registry=r)
        self.query_transforms = Counter(
            "ragspine_query_transforms", "query-time reasoning steps asked, by outcome", ["transform", "outcome"], registry=r
        )
        self.corrective_rounds = Counter("ragspine_corrective_rounds", "corrective loop decisions", ["action"], registry=r)
        self.raptor_builds = Counter("ragspine_raptor_builds", "RAPTOR tree builds asked, by outcome", ["outcome"], registry=r)
        self.raptor_build_latency = Histogram(
            "ragspine_raptor_build_duration_seconds", "time one RAPTOR build took (summaries and their embeddings included)",
            buckets=(0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0), registry=r,
        )
        self.raptor_nodes = Counter("ragspine_raptor_nodes_built", "synthesis nodes in the trees this process built", registry=r)

    # -- the ReasoningObserver hook (ragspine.retrieval.reasoning), through the stack's observer --------
    def query_refused(self, reason: str) -> None:
        self.query_refusals.labels(reason).inc()

    def query_transform(self, transform: str, outcome: str) -> None:
        self.query_transforms.labels(transform, outcome).inc()

    def corrective_round(self, action: str) -> None:
        self.corrective_rounds.labels(action).inc()

    # -- the RaptorObserver hook (ragspine.retrieval.raptor): POST /v1/libraries/{name}/raptor ------
    def raptor_build(self, outcome: str, seconds: float, nodes: int) -> None:
        self.raptor_builds.labels(outcome).inc()
        if outcome == "built":
            self.raptor_build_latency.observe(seconds)
            self.raptor_nodes.inc(nodes)

    # -- the LLMObserver hook (ragspine.llm.observe), set on the stack by the service --------------
    def llm_call(self, provider: str, seconds: float, failure: str | None) -> None:
        if failure != "budget":
            self.llm_calls.labels(provider).inc()
            self.llm_latency.labels(provider).observe(seconds)
        if failure is not None:
            self.llm_failures.labels(provider, failure).inc()

    def llm_malformed(self, seam: str) -> None:
        self.llm_malformed_answers.labels(seam).inc()

    def count(self, name: str, label: str | None = None, amount: float = 1) -> None:
        """Add ``amount`` to counter ``name`` (one of the attributes above), with its label."""
        counter: Counter = {"ingest_documents": self.ingest_documents, "ingest_chunks": self.ingest_chunks,
                            "jobs_finished": self.jobs_finished}[name]
        (counter.labels(label) if label else counter).inc(amount)

    def watch(self, context: Callable[[], Any]) -> None:
        """Export the job table and the embedding cache of the service ``context()`` returns."""
        self.registry.register(_ServiceCollector(context))


class _ServiceCollector:
    def __init__(self, context: Callable[[], Any]) -> None:
        self.context = context

    def describe(self) -> list[Any]:
        return []  # collected on scrape only (no I/O at registration)

    def collect(self) -> Any:
        ctx = self.context()
        stats = ctx.stack.cache_stats() if ctx is not None else {}
        for name in ("hits", "misses", "errors", "fallbacks"):
            family = CounterMetricFamily(f"ragspine_embedding_cache_{name}", f"embedding cache {name}")
            family.add_metric([], float(stats.get(name, 0)))
            yield family
        from ragspine.retrieval.lexical.verify import saved_index_rejections

        rejected = CounterMetricFamily(
            "ragspine_lexical_saved_index_rejected", "saved lexical indexes refused and rebuilt, by reason", labels=["reason"]
        )
        for reason, n in sorted(saved_index_rejections().items()):
            rejected.add_metric([reason], float(n))
        yield rejected
        jobs = GaugeMetricFamily("ragspine_ingest_jobs", "ingest jobs in the database by state", labels=["state"])
        try:
            counts = ctx.store.job_counts() if ctx is not None else {}
        except Exception:  # a scrape never fails because the database is down
            counts = {}
        for state, n in counts.items():
            jobs.add_metric([state], float(n))
        yield jobs


class MetricsMiddleware:
    """Counts and times every HTTP request by its route template (pure ASGI)."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        start = time.perf_counter()

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope.get("method", "")
            self.metrics.request_latency.labels(method, route).observe(time.perf_counter() - start)
            self.metrics.requests.labels(method, route, str(status)).inc()
