"""The real local model server for `llm` tests, watched: its death is reported the moment it happens."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from judge.local_llm import INSTALL_HINT, LocalModelServer, llama_cpp_available


def _report_death(description: str) -> None:
    # Written at once from the watcher thread, so a run whose server died says why before the next
    # request times out; the test that meets the dead server then fails through `ensure_alive`.
    print(f"\n*** {description}", file=sys.stderr, flush=True)


def require_llama_cpp() -> None:
    """Skip the calling test when llama-cpp-python is not installed, saying how to install it."""
    if not llama_cpp_available():
        pytest.skip(f"llama-cpp-python is not importable; install the local model with: {INSTALL_HINT}")


def watched_local_llm() -> Iterator[LocalModelServer]:
    """Start SmolLM2 on loopback (skipping when llama-cpp-python is missing), yield it, stop it."""
    require_llama_cpp()
    server = LocalModelServer().start(on_death=_report_death)
    try:
        yield server
    finally:
        server.stop()
