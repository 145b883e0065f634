"""Fixtures of the judge tests: the real local model server (session-wide) for `llm` tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judge.local_llm import INSTALL_HINT, LocalModelServer, llama_cpp_available


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalModelServer]:
    """SmolLM2 served by llama-cpp-python on 127.0.0.1, started once per test session."""
    if not llama_cpp_available():
        pytest.skip(f"llama-cpp-python is not importable; install the local model with: {INSTALL_HINT}")
    with LocalModelServer() as server:
        yield server
