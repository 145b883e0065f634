"""The one settings object (env prefix EXPJUDGE_), built on demand, never at import time."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent
# The rubric a grade uses when none is named: expbench-v2 decides requirements with the learned models
# trained on the papers' own code (training/train_requirement_model.py); expbench-v1 keeps hand thresholds.
DEFAULT_RUBRIC = "expbench-v2"


class Settings(BaseSettings):
    """Configuration for the library, CLI, service and workers."""

    model_config = SettingsConfigDict(env_prefix="EXPJUDGE_", extra="ignore")

    rubrics_dir: Path = Field(default=REPO_ROOT / "rubrics", description="Where rubric YAML files live.")
    default_rubric: str = DEFAULT_RUBRIC
    database_url: str = Field(
        default_factory=lambda: f"sqlite+aiosqlite:///{Path.home() / '.expjudge' / 'expjudge.db'}",
        description="SQLAlchemy async URL; PostgreSQL for shared deployments.",
    )
    broker_url: str | None = Field(default=None, description="Redis URL; set it to run jobs on Celery workers.")
    embedding_model_path: Path | None = Field(
        default=None, description="sentence-transformers model folder; default: the bundled all-MiniLM-L6-v2."
    )
    embedding_cache: bool = Field(
        default=True, description="Keep sentence vectors on disk: a rerun or another rubric version encodes nothing."
    )
    embedding_cache_path: Path | None = Field(
        default=None,
        description="The embedding cache file; default: embeddings.sqlite3 beside the SQLite store "
        "(~/.expjudge/embeddings.sqlite3 with PostgreSQL).",
    )
    local_model_dir: Path | None = Field(
        default=None, description="Where local models assembled from their packages are kept (the coder model); "
        "default: ~/.expjudge/models.")
    llm_timeout_seconds: float = 180.0
    llm_max_transport_retries: int = 4
    llm_max_validation_retries: int = 2
    llm_temperature: float = 0.0
    llm_seed: int = 1234
    llm_api_base: str | None = None
    llm_api_key: str | None = None
    llm_max_concurrency: int = Field(default=4, ge=1, description="LLM calls in flight per grade (1 for local).")
    llm_token_budget: int = Field(default=6000, ge=500, description="Prompt tokens per LLM call before leaves split.")
    llm_citations: Literal["quotes", "blocks"] = Field(
        default="quotes", description="How an LLM judge cites evidence for a verdict: quotes copied from the evidence "
        "(checked against the submission) or the ids of the leaf's evidence blocks (for small local models that "
        "cannot copy a line verbatim, e.g. the coder model).")
    auth_enabled: bool = True
    max_body_bytes: int = Field(
        default=10 * 1024 * 1024,
        description="Largest request body (413 above). 10 MiB: a diff that size grades in about 0.86 GB peak "
                    "RSS on the embedded judge (bench/service/bad_input.py); raise it only with the memory to match.")
    # Bounds of one synchronous grade (POST /v1/grade), checked before any grading work (413 above them).
    # EXP-Bench tasks expand to ~5-30 leaves and PaperBench rubrics to at most ~2,000; a leaf of the embedded
    # judge costs ~25 ms of CPU and ~2.5 KB of answer (bench/service/bad_neighbour.py), so 2,500 leaves is about
    # a minute.
    max_sync_leaves: int = Field(
        default=2500, ge=1, description="Leaves one synchronous grade may expand to (the rubric over the task); "
        "above: 413 naming the asynchronous route.")
    max_sync_texts: int = Field(
        default=6000, ge=1, description="Distinct texts one synchronous grade may have to embed (leaf targets, "
        "design items, conclusion claims).")
    max_sync_answer_bytes: int = Field(
        default=8 * 1024 * 1024, ge=64 * 1024, description="Largest synchronous answer, as estimated before "
        "grading (413 above) and as sent (a larger grade's leaves are cut to a first page; the rest by "
        "GET /v1/grades/{id}?leaves=offset:limit).")
    max_job_leaves: int = Field(
        default=50_000, ge=1, description="Leaves one item of an asynchronous job may expand to (422 above).")
    grade_slots: int = Field(
        default=4, ge=1, description="Synchronous grades run at once by one service process (the rest wait in "
        "a fair queue: keys take turns).")
    grade_slots_per_tenant: int = Field(
        default=2, ge=1, description="... of which one tenant's keys hold at most together.")
    grade_slots_per_key: int = Field(
        default=2, ge=1, description="... and one API key at most (set it below the tenant's so that one key of a "
        "tenant cannot hold every slot of the tenant's other keys; they take turns for them either way).")
    grade_leaves_per_key: int = Field(
        default=2500, ge=1, description="Leaves one tenant's running synchronous grades hold at most together "
        "(a request larger than this runs alone).")
    grade_queue_leaves_per_key: int = Field(
        default=5000, ge=1, description="Leaves of one tenant's synchronous grades waiting for a slot, shared in "
        "equal parts by its keys with grades running or waiting (one grade of a key may always wait); a grade "
        "that would pass its key's part: 429 with Retry-After, and the key's further grades are refused before "
        "their body is read while its part stays full. 5,000: ~190 bundled-example grades, or two grades at "
        "the leaf bound.")
    isolate_leaves: int = Field(
        default=200, ge=0, description="An embedded-judge grade of more leaves than this is made in a separate, "
        "lower-priority process, so it cannot slow the service's other grades (0: never).")
    isolated_processes: int = Field(default=1, ge=1, description="Processes making such grades.")
    worker_niceness: int = Field(
        default=10, ge=0, le=19, description="`expjudge worker` runs at this niceness, and so does its session's "
        "scheduling group when the worker leads its session (a service manager, a container or `setsid` starts "
        "it): it yields the cores to an `expjudge serve` on the same machine (0: left as started).")
    isolated_spare: bool = Field(
        default=True, description="`expjudge serve` keeps those processes started with their model loaded (~0.5 GB "
        "idle), and starts a fresh one right after a large grade that left one holding too much "
        "(`isolated_recycle_mb`), so a large grade starts (and its progress moves) at once instead of after a "
        "process start of 5-30 s (false: started on first use, ended after each large grade).")
    isolated_recycle_mb: int = Field(
        default=150, ge=0, description="With the spare on, a grading process still holding more than this many "
        "MB above its memory when warm after a large grade (freed memory handed back first) is replaced by a "
        "fresh one; within it, it stays warm for the next (0: replaced after every large grade).")
    grade_refusals_per_key: int = Field(
        default=10, ge=1, description="Synchronous grades of one API key refused as too costly (413) within 10 s "
        "before its further grades are refused unread (429 with Retry-After, before the body is read).")
    llm_upstream_per_key: int = Field(
        default=8, ge=1, description="LLM calls in flight at once for one tenant, over all its grades and jobs "
        "in one process (so one tenant cannot take every upstream connection).")
    calibration_min_labels_per_class: int = Field(
        default=30, ge=1, description="A grade says calibrated only when its fingerprint's calibration run has at "
        "least this many reference labels in every class the macro figures average over (docs/calibration.md).")
    calibration_max_ci_width: float = Field(
        default=0.3, gt=0, le=1, description="... and its macro-F1 95% interval is at most this wide.")
    calibration_min_interval_units: int = Field(
        default=10, ge=1, description="A calibration gives intervals only over at least this many independent "
        "units (submissions, the bootstrap's groups); below, it says 'too few submissions for an interval'.")
    review_session_hours: float = Field(default=12.0, gt=0, description="A review session ends this long after login.")
    review_idle_minutes: float = Field(default=60.0, gt=0, description="... or after this long without a request.")
    review_cookie_secure: bool | None = Field(
        default=None, description="Mark the review cookie Secure; None: when the request came over https."
    )


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings from the environment, built once on first use."""
    return Settings()


def configure_offline_environment() -> None:
    """Make sure nothing reaches a model hub or fetches litellm's price list.

    Called by entry points (CLI, service, workers) before anything imports litellm or
    sentence-transformers; `setdefault` keeps what a user set on purpose.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Model loading prints a per-weight progress bar on every CLI call; our own bars say what runs.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        import importlib.util

        spec = importlib.util.find_spec("litellm")
        if spec is not None and spec.submodule_search_locations:
            base = Path(next(iter(spec.submodule_search_locations)))
            os.environ["TIKTOKEN_CACHE_DIR"] = str(base / "litellm_core_utils" / "tokenizers")
