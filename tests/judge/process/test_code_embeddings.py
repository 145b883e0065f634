"""Chunking with the model's tokenizer, pooling, and the content-hash cache (real MiniLM)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from process_test_support import EDITED_ALGORITHMS, LoaderSpy, RunSpec

from judge.embeddings.encoder import model_fingerprint
from judge.errors import InputError
from judge.process.code_chunks import WindowTokenizer, candidate_chunks, fit_pieces, line_chunks
from judge.process.code_embeddings import CodeEmbedder, EncoderModel, resolve_model_path
from judge.process.embedding_cache import CACHE_FILE
from judge.process.metrics import compute_process_metrics, load_run
from judge.settings import get_settings

Embedders = Callable[..., CodeEmbedder]


def _code(lines: int, tag: str = "") -> str:
    return "\n".join(
        f"def step_{i}{tag}(batch, model, lr={i}e-4):  # update number {i}\n    return model(batch) * lr"
        for i in range(lines // 2)
    )


@pytest.fixture
def tokenizer(shared_model: EncoderModel) -> WindowTokenizer:
    assert shared_model.max_seq_length == 256
    return WindowTokenizer(shared_model.tokenizer, 256)


def test_window_leaves_room_for_the_special_tokens(tokenizer: WindowTokenizer) -> None:
    assert tokenizer.window == 254


def test_line_chunks_fit_the_window_and_keep_every_line_in_order(tokenizer: WindowTokenizer) -> None:
    content = _code(300)
    chunks = line_chunks(content, tokenizer)
    assert len(chunks) > 5
    assert max(tokenizer.count(chunks)) <= tokenizer.window
    kept = [line for chunk in chunks for line in chunk.split("\n") if line.strip()]
    assert kept == [line for line in content.split("\n") if line.strip()]


def test_an_edit_changes_only_the_chunks_around_it(tokenizer: WindowTokenizer) -> None:
    content = _code(400)
    lines = content.split("\n")
    edited = "\n".join([*lines[:200], "    x = torch.clamp(x, -1.0, 1.0)  # new line", *lines[200:]])
    before = line_chunks(content, tokenizer)
    after = line_chunks(edited, tokenizer)
    assert len(set(after) - set(before)) <= 2
    # Fixed windows shift after the insertion, so almost every later window is new.
    fixed_before = candidate_chunks([content], "fixed", tokenizer)
    fixed_after = candidate_chunks([edited], "fixed", tokenizer)
    assert len(set(fixed_after) - set(fixed_before)) > len(set(after) - set(before)) + 3


def test_fixed_chunks_are_full_windows_but_the_last(tokenizer: WindowTokenizer) -> None:
    counts = tokenizer.count(candidate_chunks([_code(200), _code(100, "b")], "fixed", tokenizer))
    assert all(count == tokenizer.window for count in counts[:-1])
    assert 0 < counts[-1] <= tokenizer.window


def test_a_line_longer_than_the_window_is_cut_into_windows(tokenizer: WindowTokenizer) -> None:
    long_line = "x = [" + ", ".join(f"value_{i}" for i in range(400)) + "]"
    pieces = fit_pieces(line_chunks(long_line, tokenizer), tokenizer)
    parts = [part for chunk_parts in pieces.values() for part in chunk_parts]
    assert len(parts) > 1
    assert all(0 < tokens <= tokenizer.window for _, tokens in parts)
    assert [tokens for _, tokens in parts] == tokenizer.count([text for text, _ in parts])


@pytest.mark.parametrize("pooling", ["mean", "sum"])
def test_pooling_of_piece_vectors(
    pooling: str, make_embedder: Embedders, shared_model: EncoderModel, tokenizer: WindowTokenizer
) -> None:
    files = [_code(30), _code(20, "b")]
    pieces = [
        part
        for chunk_parts in fit_pieces(candidate_chunks(files, "lines", tokenizer), tokenizer).values()
        for part in chunk_parts
    ]
    vectors = np.asarray(shared_model.encode([text for text, _ in pieces]), dtype=np.float64)
    weights = np.array([tokens for _, tokens in pieces], dtype=np.float64)
    expected = vectors.sum(axis=0) if pooling == "sum" else (weights[:, None] * vectors).sum(axis=0) / weights.sum()
    [vector] = make_embedder(pooling=pooling).embed([files])
    assert len(pieces) > 2
    np.testing.assert_allclose(vector, expected, rtol=1e-5, atol=1e-6)


def test_an_empty_document_is_the_zero_vector(make_embedder: Embedders) -> None:
    vectors = make_embedder().embed([[""], [_code(10)]])
    assert vectors.shape == (2, 384)
    assert not vectors[0].any()
    assert vectors[1].any()


def test_the_cache_spares_the_model_on_a_second_run(
    tmp_path: Path, make_embedder: Embedders, loader: LoaderSpy
) -> None:
    documents = [[_code(20)], [_code(20, "b")], [_code(20)]]
    first = make_embedder()
    cold = first.embed(documents)
    assert loader.calls == 1
    assert (first.documents_embedded, first.documents_from_cache) == (2, 0)
    assert (tmp_path / "embedding-cache" / CACHE_FILE).is_file()

    second = make_embedder()
    warm = second.embed(documents)
    assert loader.calls == 1  # no model load: every document came from the on-disk cache
    assert second.model_loads == 0
    assert second.documents_from_cache == 3
    assert np.array_equal(cold, warm)
    assert second.info().dimension == 384

    other_pooling = make_embedder(pooling="sum")
    other_pooling.embed(documents)
    assert loader.calls == 2  # a new pooling is a new document key ...
    assert other_pooling.chunks_embedded == 0  # ... but every piece vector is reused


def test_a_second_process_metrics_run_reads_the_cache(
    tmp_path: Path, make_embedder: Embedders, loader: LoaderSpy
) -> None:
    run_dir = RunSpec(snapshots=[{"algorithms.py": EDITED_ALGORITHMS}, None], metrics=[0.6, 0.7]).write(tmp_path)
    first = compute_process_metrics(load_run(run_dir), embedder=make_embedder())
    second = compute_process_metrics(load_run(run_dir), embedder=make_embedder())
    assert loader.calls == 1
    assert first.embedding is not None and second.embedding is not None
    assert (first.embedding.model_loaded, second.embedding.model_loaded) == (True, False)
    assert first.model_dump(exclude={"embedding"}) == second.model_dump(exclude={"embedding"})


def test_the_model_path_comes_from_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_model = tmp_path / "no-model-here"
    not_a_model.mkdir()
    monkeypatch.setenv("EXPJUDGE_EMBEDDING_MODEL_PATH", str(not_a_model))
    get_settings.cache_clear()
    try:
        with pytest.raises(InputError) as caught:
            resolve_model_path(None)
        assert caught.value.field == str(not_a_model.resolve())
    finally:
        get_settings.cache_clear()


def test_the_model_fingerprint_follows_the_folder_content(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "modules.json").write_text("[]")
    (model / "weights.bin").write_bytes(b"\0" * (3 << 20))
    before = model_fingerprint(model)
    assert model_fingerprint(model) == before
    (model / "weights.bin").write_bytes(b"\0" * (3 << 20) + b"\1")
    assert model_fingerprint(model) != before
