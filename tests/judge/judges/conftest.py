"""Fixtures of the judge tests: the real local model server (session-wide) for `llm` tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judge.local_llm import LocalModelServer
from tests.local_llm_support import watched_local_llm


@pytest.fixture(scope="session")
def local_llm_session() -> Iterator[LocalModelServer]:
    """SmolLM2 served by llama-cpp-python on 127.0.0.1, started once per test session."""
    yield from watched_local_llm()


@pytest.fixture
def local_llm(local_llm_session: LocalModelServer) -> Iterator[LocalModelServer]:
    """The session's server, checked alive before and after each test: a dead server fails the test at
    once with its exit code or signal, instead of every request failing with "Connection error"."""
    local_llm_session.ensure_alive()
    yield local_llm_session
    local_llm_session.ensure_alive()
