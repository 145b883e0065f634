"""Build a judge from its spec string: "embedded" or any litellm model name."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from judge.errors import JudgeConfigError
from judge.judges.base import Judge
from judge.judges.embedded import EmbeddedJudge
from judge.settings import get_settings

if TYPE_CHECKING:
    from judge.judges.llm_transport import CompletionFn
    from judge.judges.response_cache import ResponseCache
    from judge.settings import Settings

EMBEDDED = "embedded"
# The embedded judge with the local coder model's reading as a feature of its requirement decisions
# (needs the `coder-model` extra and a rubric whose requirement check carries a `coder_text_model`).
EMBEDDED_CODER = "embedded+coder"


def build_judge(spec: str = EMBEDDED, *, samples: int = 1, cache: ResponseCache | None = None,
                api_base: str | None = None, api_key: str | None = None,
                max_concurrency: int | None = None, settings: Settings | None = None,
                completion: CompletionFn | None = None, require_key: bool = True) -> Judge:
    """The judge a spec names.

    Args:
        spec: "embedded" (offline, default), "embedded+coder" (the embedded judge reading code with the
            local coder model, see judge/judges/embedded.py) or a litellm model string such as "openai/gpt-4o-mini",
            "anthropic/claude-3-5-haiku-latest" or "openai/local" with `api_base` for a local server.
        samples: LLM samples per call, majority-voted (must be 1 for the embedded judge).
        cache: Response cache for LLM calls (the store's, so reruns cost nothing).
        api_base: OpenAI-compatible base URL (default: settings.llm_api_base).
        api_key: Key for the provider (default: settings.llm_api_key or the provider's env variable;
            a placeholder when only `api_base` is given, as local servers need none).
        max_concurrency: LLM calls in flight at once (default: settings.llm_max_concurrency).
        settings: Settings to read defaults from (default: the process's, from the environment).
        completion: What sends each request instead of litellm.acompletion (e.g. behind a rate limiter).
        require_key: Refuse a provider whose API key is set nowhere (False for a judge that only counts
            tokens, as `regrade --dry-run` does).

    Raises:
        JudgeConfigError: for an empty spec, a model string litellm cannot route, a provider whose API key
            is set nowhere, or a bad sample count.
    """
    spec = spec.strip()
    if not spec:
        raise JudgeConfigError("empty judge spec: use 'embedded' or a litellm model name", field="judge")
    if samples < 1:
        raise JudgeConfigError("samples must be at least 1", field="samples")
    if spec == EMBEDDED:
        if samples != 1:
            raise JudgeConfigError("the embedded judge is deterministic: samples must be 1", field="samples")
        return EmbeddedJudge()
    if spec == EMBEDDED_CODER:
        if samples != 1:
            raise JudgeConfigError("the embedded judge is deterministic: samples must be 1", field="samples")
        from judge.local_models.code_reading import shared_reader

        return EmbeddedJudge(code_reader=shared_reader())
    check_routable(spec)
    from judge.judges.llm import LLMJudge

    settings = settings or get_settings()
    base = api_base or settings.llm_api_base
    check_api_base(base)
    key = api_key or settings.llm_api_key
    if base and not key:
        key = "not-needed"  # OpenAI-compatible local servers ignore the key, but the client insists on one
    if not key and require_key:
        check_api_key(spec)
    return LLMJudge(spec, samples=samples, fallback=EmbeddedJudge(), cache=cache, api_base=base, api_key=key,
                    max_concurrency=max_concurrency or settings.llm_max_concurrency,
                    token_budget=settings.llm_token_budget, settings=settings, completion=completion,
                    citations=settings.llm_citations)


def check_api_base(base: str | None, *, field: str = "api_base") -> None:
    """Fail fast on an endpoint that is no http(s) URL (None: the provider's default endpoint).

    Raises:
        JudgeConfigError: naming `field`.
    """
    if base is None:
        return
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JudgeConfigError(f"expected an http(s) URL such as http://127.0.0.1:8080/v1, got {base!r}", field=field)


def warm_up_llm_client() -> float:
    """Import litellm now (7-11 s on a busy 2-CPU machine) and return how long it took.

    The service calls it in a background thread at start-up, so that the first request naming an LLM judge is
    checked (routable model, API key set) at once instead of after the import.
    """
    started = time.perf_counter()
    import litellm

    litellm.suppress_debug_info = True
    return time.perf_counter() - started


# Providers that authenticate with ambient credentials (instance roles, workload identity, AD tokens) as well
# as with keys: a key missing from the environment does not mean they cannot be reached.
AMBIENT_CREDENTIAL_PROVIDERS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "sagemaker_chat",
                                          "vertex_ai", "vertex_ai_beta", "azure", "azure_ai", "watsonx"})


def check_api_key(model: str, *, field: str = "judge") -> None:
    """Fail fast when the provider of `model` needs an API key that no setting and no environment variable holds.

    Without this check the provider's client fails every request ("Missing credentials", which litellm reports
    as a 500) and each one is retried as an outage would be. Called only when no key was given at all (an
    `api_base` gets a placeholder key: local servers need none).

    Raises:
        JudgeConfigError: naming `field` and the environment variable(s) to set.
    """
    import litellm

    litellm.suppress_debug_info = True
    try:
        provider = litellm.get_llm_provider(model)[1]
        missing = litellm.validate_environment(model).get("missing_keys") or []
    except Exception:  # an unroutable model is check_routable's to report; an odd provider is not refused here
        return
    keys = [name for name in missing if name.endswith("_API_KEY")]
    if keys and provider not in AMBIENT_CREDENTIAL_PROVIDERS:
        raise JudgeConfigError(
            f"no API key for {provider} (judge {model!r}): set {' or '.join(keys)} in the environment of the "
            "service (or EXPJUDGE_LLM_API_KEY), or use the embedded judge", field=field)


def check_routable(model: str, *, field: str = "judge") -> None:
    """Fail fast on a model string litellm cannot route (no provider), before any call is made.

    Without this check every LLM leaf of every grade would end `unscored` with a judge error, after a
    request per call, for what is a typo in the configuration.

    Raises:
        JudgeConfigError: naming `field`.
    """
    import litellm

    litellm.suppress_debug_info = True  # else litellm prints its provider list to stdout
    try:
        litellm.get_llm_provider(model)
    except Exception as exc:  # litellm raises BadRequestError for a model it cannot route
        raise JudgeConfigError(
            f"litellm cannot route model {model!r}: use 'embedded' or 'provider/model'", field=field
        ) from exc
