"""Build a judge from its spec string: "embedded" or any litellm model name."""

from __future__ import annotations

import os
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
    settings = settings or get_settings()
    base = api_base or settings.llm_api_base
    key = api_key or settings.llm_api_key
    if not key and not base and require_key:
        check_known_provider_key(spec)  # no litellm import: refused at once, even while it is being imported
    check_routable(spec)
    from judge.judges.llm import LLMJudge

    check_api_base(base)
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
    checked (routable model, API key set) at once instead of after the import; a known provider's missing key
    is refused without it (`check_known_provider_key`), even during the import.
    """
    started = time.perf_counter()
    import litellm

    litellm.suppress_debug_info = True
    return time.perf_counter() - started


# Providers that authenticate with ambient credentials (instance roles, workload identity, AD tokens) as well
# as with keys: a key missing from the environment does not mean they cannot be reached.
AMBIENT_CREDENTIAL_PROVIDERS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "sagemaker_chat",
                                          "vertex_ai", "vertex_ai_beta", "azure", "azure_ai", "watsonx"})


# The API key variables of the providers most judges use, as litellm's `validate_environment` names them (a test
# holds the two together). Checked from the environment alone: importing litellm takes seconds (7-11 s on a busy
# machine), and a service just started is still importing it when the first request names such a judge.
KNOWN_PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",), "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",), "deepseek": ("DEEPSEEK_API_KEY",), "together_ai": ("TOGETHERAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",), "fireworks_ai": ("FIREWORKS_AI_API_KEY",), "xai": ("XAI_API_KEY",),
    "cohere": ("COHERE_API_KEY",), "perplexity": ("PERPLEXITYAI_API_KEY",), "cerebras": ("CEREBRAS_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
}
# Model names litellm routes to OpenAI without a provider prefix.
_BARE_OPENAI = ("gpt-", "chatgpt-", "o1", "o3", "o4")


def known_provider(model: str) -> str | None:
    """The provider of `model` when it is one of KNOWN_PROVIDER_KEYS' (by its prefix, or a bare OpenAI model name),
    without litellm; None for any other (litellm decides those)."""
    provider, slash, _ = model.partition("/")
    if slash:
        return provider if provider in KNOWN_PROVIDER_KEYS else None
    return "openai" if model.startswith(_BARE_OPENAI) else None


def missing_key_error(provider: str, model: str, keys: list[str], field: str) -> JudgeConfigError:
    """The error of a provider whose API key (one of `keys`) is set nowhere."""
    return JudgeConfigError(
        f"no API key for {provider} (judge {model!r}): set {' or '.join(keys)} in the environment of the "
        "service (or EXPJUDGE_LLM_API_KEY), or use the embedded judge", field=field)


def check_known_provider_key(model: str, *, field: str = "judge") -> None:
    """Fail fast, without importing litellm, when `model`'s provider is a known one whose API key no environment
    variable holds (called only when no key and no endpoint was given).

    Raises:
        JudgeConfigError: naming `field` and the environment variable(s) to set.
    """
    provider = known_provider(model)
    if provider is None:
        return
    keys = KNOWN_PROVIDER_KEYS[provider]
    if not any(os.environ.get(name) for name in keys):
        raise missing_key_error(provider, model, list(keys), field)


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
        raise missing_key_error(provider, model, keys, field)


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
