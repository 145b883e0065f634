"""The FastAPI app (`expjudge serve` runs it under uvicorn): routes, error mapping, middleware, start-up."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

import judge
from api.deps import LOCAL_TENANT, Service
from api.docs_assets import install_docs
from api.errors import install_error_handlers
from api.middleware import BodySizeLimit, FairShareGate, HttpMetrics
from api.review import install_review
from api.routes import grades, grading, jobs, meta, process
from judge.gc_tuning import freeze_startup_objects
from judge.jobs import GradingRuntime, make_dispatcher, runner_id
from judge.jobs.fair_slots import FairSlots
from judge.jobs.parent_watch import watch_serve_supervisor
from judge.settings import Settings, configure_offline_environment, get_settings
from judge.store import Store

log = logging.getLogger("expjudge.api")

DESCRIPTION = """Grades AI research agents' experiments against ground truth.

Authenticate with an API key (`expjudge keys create --tenant T`) in `X-API-Key` or
`Authorization: Bearer`. Every POST takes an `Idempotency-Key` header: the same key with the
same request returns the same result and never makes a second grade.
"""


def _warm_up_llm_client() -> None:
    from judge.judges.registry import warm_up_llm_client

    log.info("LLM client ready (litellm imported in %.1f s)", warm_up_llm_client())


def create_app(settings: Settings | None = None) -> FastAPI:
    """The service app; `settings` default to the environment (EXPJUDGE_*)."""
    config = settings or get_settings()

    # Made here, not at start-up: the ASGI gate (FairShareGate) refuses a key over its share with the same slots.
    slots = FairSlots(config.grade_slots, config.grade_slots_per_key, config.grade_leaves_per_key,
                      config.grade_queue_leaves_per_key, config.grade_refusals_per_key,
                      per_tenant=config.grade_slots_per_tenant)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_offline_environment()
        watch_serve_supervisor()  # a worker of `expjudge serve --workers N` ends when its supervisor is killed
        store = Store(config.database_url)
        await store.migrate()
        # A judge name or missing key is refused at once only once litellm is imported (seconds): do it now,
        # beside start-up; a request that comes first waits on the same import.
        threading.Thread(target=_warm_up_llm_client, name="llm-client-warm-up", daemon=True).start()
        runtime = GradingRuntime(store, config)
        runtime.start()  # the warm spare of large grades (judge/jobs/isolated_grading.py)
        dispatcher = make_dispatcher(runtime, config.broker_url)
        await dispatcher.start()
        app.state.service = Service(config, store, runtime, dispatcher, runner_id("api"), slots)
        freeze_startup_objects()  # fewer and shorter full collections while serving
        if config.auth_enabled:
            log.info("auth enabled: requests need an API key (X-API-Key or Authorization: Bearer)")
        else:
            log.warning("auth DISABLED: no API key is checked and every request acts as tenant %r", LOCAL_TENANT)
        log.info(
            "store %s, jobs %s, body limit %d bytes",
            store.dialect,
            "on Celery workers" if config.broker_url else "in-process",
            config.max_body_bytes,
        )
        try:
            yield
        finally:
            await dispatcher.close()
            runtime.close()
            await store.close()

    app = FastAPI(
        title="expjudge",
        version=judge.__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # FastAPI's /docs and /redoc load their assets from a CDN; ours come from the package
        redoc_url=None,
    )
    install_error_handlers(app)
    install_docs(app)
    for module in (grading, grades, jobs, meta, process):
        app.include_router(module.router)
    install_review(app)  # /review pages and the labels API
    # Added last = outermost: metrics see every request, 413s and 429s included; a key over its share is refused
    # before anything reads its body.
    app.add_middleware(BodySizeLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(FairShareGate, slots=slots)
    app.add_middleware(HttpMetrics)
    return app
