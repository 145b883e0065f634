"""Fixtures of the process tests: a real embedder on a per-test cache, loading through a counting spy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from process_test_support import LoaderSpy

from judge.process.code_embeddings import (
    CodeEmbedder,
    EmbeddingConfig,
    EncoderModel,
    load_encoder,
    resolve_model_path,
)


@pytest.fixture(scope="session")
def shared_model() -> EncoderModel:
    """The bundled MiniLM, loaded once for the session (loading is what the cache tests count)."""
    return load_encoder(resolve_model_path(None))


@pytest.fixture
def loader(shared_model: EncoderModel) -> LoaderSpy:
    return LoaderSpy(shared_model)


@pytest.fixture
def make_embedder(tmp_path: Path, loader: LoaderSpy) -> Callable[..., CodeEmbedder]:
    """Embedders on a per-test cache folder, all loading through the counting loader."""

    def build(**config: Any) -> CodeEmbedder:
        config.setdefault("cache_dir", tmp_path / "embedding-cache")
        return CodeEmbedder(EmbeddingConfig(**config), loader=loader)

    return build
