"""Prompt token counts: exact ones from litellm's offline tokenizers, fast estimates for packing calls."""

from __future__ import annotations

import functools
from typing import Any


def count_prompt_tokens(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
    """Prompt tokens of `messages` (and tool schemas) for `model`, counted offline by litellm."""
    import litellm

    return int(litellm.token_counter(model=model, messages=messages, tools=tools))  # type: ignore[arg-type]


def count_text_tokens(model: str, text: str) -> int:
    """Tokens of a piece of text for `model`, counted offline by litellm."""
    import litellm

    return int(litellm.token_counter(model=model, text=text))


@functools.lru_cache(maxsize=1)
def _budget_encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")  # offline: TIKTOKEN_CACHE_DIR points into litellm


def estimate_text_tokens(text: str) -> int:
    """A fast token estimate for packing leaves into calls (cl100k_base, within ~10% of most models).

    litellm.token_counter resolves the model's tokenizer on every call (~2 ms each, ~30 ms per
    grade); the budget only needs an estimate, and exact counts stay with count_prompt_tokens.
    Texts up to 64k chars are remembered: ground-truth targets, criteria and shared hunks recur in
    every grade of a task.
    """
    return _memo_tokens(text) if len(text) <= 65_536 else _encode_length(text)


@functools.lru_cache(maxsize=16_384)
def _memo_tokens(text: str) -> int:
    return _encode_length(text)


def _encode_length(text: str) -> int:
    return len(_budget_encoding().encode(text, disallowed_special=()))
