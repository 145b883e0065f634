"""Cutting code into pieces that fit the embedding model's window, with the model's own tokenizer.

Two schemes (docs/process-metrics.md):

- "lines" (default): each file is cut at line boundaries into content-defined segments: a segment
  ends after an *anchor* line, a non-blank line whose stripped text hashes to 0 mod 16. A segment
  longer than the window is packed greedily, line by line, into windows; a single line longer than
  the window is cut into token windows. Because boundaries depend only on nearby lines, an edit
  changes only the pieces around it and every other piece is reused from the embedding cache:
  this is what makes a 100-step run over a large code base affordable.
- "fixed": FML-bench's way: the files are joined with newlines and cut into consecutive windows of
  the window size in tokens. An insertion shifts every later window, so little is reused.

Every piece returned fits the window exactly (checked by tokenising it), and comes with its
token count, used as its weight by mean pooling.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from judge.process.models import Chunking

ANCHOR_MODULUS = 16
SCHEME_IDS: dict[Chunking, str] = {"lines": "lines-v1", "fixed": "fixed-v1"}


class WindowTokenizer:
    """The model's tokenizer, reduced to what chunking needs.

    Args:
        tokenizer: A Hugging Face fast tokenizer (what sentence-transformers exposes as `.tokenizer`).
        max_seq_length: The model's window in tokens, special tokens included.
    """

    def __init__(self, tokenizer: Any, max_seq_length: int) -> None:
        self._tokenizer = tokenizer
        special = int(tokenizer.num_special_tokens_to_add(pair=False))
        # The window left for code once [CLS]/[SEP] (or the model's equivalents) are added.
        self.window = max_seq_length - special
        if self.window < 1:
            raise ValueError(f"max_seq_length {max_seq_length} leaves no room for tokens")
        self._line_counts: dict[str, int] = {}

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token counts of texts, without special tokens."""
        if not texts:
            return []
        encoded = self._tokenizer(list(texts), add_special_tokens=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def line_counts(self, lines: Iterable[str]) -> dict[str, int]:
        """Token counts of lines, memoised: steps of one run share almost all their lines."""
        missing = list({line for line in lines if line not in self._line_counts})
        self._line_counts.update(zip(missing, self.count(missing), strict=True))
        return self._line_counts

    def windows(self, text: str) -> list[str]:
        """Consecutive slices of `text` of at most `window` tokens (cut at token boundaries)."""
        encoded = self._tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets: list[tuple[int, int]] = [tuple(o) for o in encoded["offset_mapping"]]
        return [
            text[offsets[i][0] : offsets[min(i + self.window, len(offsets)) - 1][1]]
            for i in range(0, len(offsets), self.window)
        ]


def _is_anchor(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and zlib.crc32(stripped.encode("utf-8")) % ANCHOR_MODULUS == 0


def _pack_segment(segment: list[str], counts: dict[str, int], tokenizer: WindowTokenizer) -> list[str]:
    window = tokenizer.window
    if sum(counts[line] for line in segment) <= window:
        return ["\n".join(segment)]
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in segment:
        tokens = counts[line]
        if tokens > window:
            if current:
                pieces.append("\n".join(current))
                current, size = [], 0
            pieces.extend(tokenizer.windows(line))
            continue
        if current and size + tokens > window:
            pieces.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += tokens
    if current:
        pieces.append("\n".join(current))
    return pieces


def line_chunks(content: str, tokenizer: WindowTokenizer) -> list[str]:
    """Cut one file into content-defined, line-aligned chunks (the "lines" scheme)."""
    lines = content.split("\n")
    counts = tokenizer.line_counts(lines)
    chunks: list[str] = []
    segment: list[str] = []
    for line in lines:
        segment.append(line)
        if _is_anchor(line):
            chunks.extend(_pack_segment(segment, counts, tokenizer))
            segment = []
    if segment:
        chunks.extend(_pack_segment(segment, counts, tokenizer))
    return [chunk for chunk in chunks if chunk.strip()]


def candidate_chunks(files: Sequence[str], chunking: Chunking, tokenizer: WindowTokenizer) -> list[str]:
    """A document's chunks before the exact fit check: per file for "lines", joined for "fixed"."""
    if chunking == "fixed":
        text = "\n".join(files)
        return [chunk for chunk in tokenizer.windows(text) if chunk.strip()] if text.strip() else []
    return [chunk for content in files for chunk in line_chunks(content, tokenizer)]


def fit_pieces(chunks: Iterable[str], tokenizer: WindowTokenizer) -> dict[str, list[tuple[str, int]]]:
    """For each distinct chunk, the pieces it is embedded as, each with its exact token count.

    A chunk that fits is its own single piece; one that does not (the "lines" scheme sums line
    counts, which a non-BERT tokenizer may not add up exactly) is cut into token windows,
    recursively, so no piece is ever truncated by the model.
    """
    distinct = list(dict.fromkeys(chunks))
    result: dict[str, list[tuple[str, int]]] = {}
    for chunk, tokens in zip(distinct, tokenizer.count(distinct), strict=True):
        if tokens <= tokenizer.window:
            result[chunk] = [(chunk, tokens)] if tokens > 0 else []
        else:
            windows = tokenizer.windows(chunk)
            sub = fit_pieces(windows, tokenizer)
            result[chunk] = [piece for window in windows for piece in sub[window]]
    return result
