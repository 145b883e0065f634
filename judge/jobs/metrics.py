"""Prometheus metrics of grading, shared by the API process and Celery workers (one registry per process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

GRADES = Counter(
    "expjudge_grades",
    "Grades stored, by where the verdicts came from (judge or grade cache).",
    ["source"],
    registry=REGISTRY,
)
ITEM_FAILURES = Counter(
    "expjudge_grade_failures", "Job items that produced no grade, by reason.", ["reason"], registry=REGISTRY
)
LLM_CALLS = Counter("expjudge_llm_calls", "Requests sent to an LLM upstream.", registry=REGISTRY)
LLM_TOKENS = Counter("expjudge_llm_tokens", "LLM tokens, by kind (prompt, completion).", ["kind"], registry=REGISTRY)
LLM_COST = Counter("expjudge_llm_cost_usd", "LLM cost in USD (litellm's local price map).", registry=REGISTRY)
CACHE_HITS = Counter(
    "expjudge_cache_hits", "Judge calls answered from a cache instead of the upstream.", registry=REGISTRY
)
GRADE_SECONDS = Histogram(
    "expjudge_grade_duration_seconds",
    "Wall time to grade one item (cache lookups and judge calls included).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "expjudge_queue_depth", "Jobs in the store by state (queued, running).", ["state"], registry=REGISTRY
)
GRADING_PROCESSES_READY = Gauge(
    "expjudge_grading_processes_ready",
    "Isolated grading processes started with their model loaded (judge/jobs/isolated_grading.py): 1 while the "
    "warm spare waits for a large grade or makes one, 0 while it starts or after the service stopped it.",
    registry=REGISTRY,
)
