"""What unrelated code scores for a requirement: a per-requirement scale for the text similarity.

A cosine of 0.45 between a requirement and a code unit means a near-certain match for a long EXP-Bench step
("Step 3: train the model ... (file:lines)") and next to nothing for a one-sentence PaperBench leaf about one
formula, whose cosine with any code is low. One global threshold cannot serve both. So every requirement is
also compared with a bank of decoys: code units of real research repositories that implement none of the
requirements a user grades (`decoy_bank.npz`, built by training/build_decoy_bank.py from the training halves
of the EXP-Bench papers' own code and of the PaperBench papers' official code: embeddings and line hashes
only, no code). The features say where the best
candidate stands in the requirement's own decoy distribution (`txt_decoy_z`: standard scores above the
decoys' mean; `txt_decoy_margin`: cosine above the decoys' high tail), which is what a rubric of another
style keeps on scale.

The bank also holds each decoy's abstracted text (`abstract_text`: what the unit calls, and its lines with the
code's own names replaced by `_`), so the similarity of a requirement with code whose names say nothing
(renamed, or named after other things) is on a scale too (`txt_abstract_z`).

A decoy is unrelated code only if the submission does not hold it: a bank row whose lines the submission
holds for the most part (an agent working in one of the bank's repositories) is left out for that grade.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np

from judge.checks.requirement.acts import SubmissionActs
from judge.reference.behaviour import Behaviour
from judge.submission.code_units import CodeUnit, executable_text

BANK_FILE = "decoy_bank.npz"
# The high tail of the decoy distribution a candidate is measured against.
TAIL_QUANTILE = 0.99
# A bank row is the submission's own code when it holds this share of the row's lines.
OWN_SHARE = 0.5
_MIN_LINE_CHARS = 8
# Requirements scaled at once: their cosines with every bank row are held together (~9 kB a requirement).
_SCALE_ROWS = 256
# An attribute or method name in a canonical line (`_ = self . compute_loss ( _ )`).
_ATTRIBUTE = re.compile(r"(\.\s*)([A-Za-z_]\w*)")


def line_hash(line: str) -> int:
    """A stable 63-bit hash of a code line with its whitespace removed."""
    digest = hashlib.blake2b("".join(line.split()).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def unit_line_hashes(unit: CodeUnit) -> list[int]:
    """Hashes of a unit's executable lines long enough to say something (short lines are everywhere)."""
    return [line_hash(line) for line in executable_text(unit).split("\n")
            if len("".join(line.split())) >= _MIN_LINE_CHARS]


def decoy_text(unit: CodeUnit, max_chars: int = 1200) -> str:
    """What the bank and the decision embed of a unit: its name and executable code, never its path."""
    body = executable_text(unit)
    return f"{unit.name}\n{body}"[:max_chars]


def abstract_text(behaviour: Behaviour, own_names: frozenset[str] = frozenset(), max_chars: int = 1200) -> str:
    """What a unit says without its own names: the functions it calls (library paths, method names) and its
    lines with the names the code defines replaced by `_` (`judge.reference.behaviour`). A method or attribute
    named like a function or class the submission defines (`own_names`: `self.compute_loss()`,
    `model.encode`, `losses.compute_loss`) is the code's own name too: left out of the calls, blanked in the
    lines. Renaming identifiers or stripping comments leaves the text as it was; naming foreign code, its
    methods included, after a requirement adds nothing to it."""
    calls = " ".join(dict.fromkeys(call.lstrip(".") for call in behaviour.calls
                                   if call.rsplit(".", 1)[-1] not in own_names))
    lines = list(behaviour.lines)
    if own_names:
        lines = [_ATTRIBUTE.sub(lambda m: f"{m.group(1)}_" if m.group(2) in own_names else m.group(0), line)
                 for line in lines]
    return f"{calls}\n" + "\n".join(lines)[:max_chars]


def unit_abstract_text(acts: SubmissionActs, n: int) -> str:
    """`abstract_text` of unit `n` of a submission (or the bank's repository), without any name it defines: the
    one text the grade embeds and its features read."""
    return abstract_text(acts.behaviour(n), acts.defined)


@dataclass(frozen=True)
class DecoyBank:
    """Unit-normalised embeddings of decoy units (of their `decoy_text`, and of their `abstract_text`) and each
    unit's line hashes (`offsets` into `hashes`)."""

    vectors: np.ndarray
    hashes: np.ndarray
    offsets: np.ndarray
    model: str
    abstract_vectors: np.ndarray | None = None

    def rows_not_in(self, submission_hashes: set[int]) -> np.ndarray:
        """Indices of the rows the submission does not hold (`OWN_SHARE` of their lines)."""
        if not submission_hashes:
            return np.arange(len(self.vectors))
        held = np.isin(self.hashes, np.fromiter(submission_hashes, dtype=np.int64, count=len(submission_hashes)))
        running = np.concatenate([[0], np.cumsum(held, dtype=np.int64)])
        counts = running[self.offsets[1:]] - running[self.offsets[:-1]]
        sizes = np.diff(self.offsets)
        own = (sizes > 0) & (counts >= OWN_SHARE * sizes)
        return np.flatnonzero(~own)


@dataclass(frozen=True)
class DecoyScale:
    """A requirement's decoy distribution: the mean, spread and high tail of its cosines with the bank."""

    mean: float
    std: float
    tail: float

    def z(self, similarity: float) -> float:
        """Standard scores of `similarity` above the decoys' mean."""
        return (similarity - self.mean) / max(self.std, 1e-3)

    def margin(self, similarity: float) -> float:
        """Cosine above the decoys' high tail (negative below it)."""
        return similarity - self.tail


_bank: DecoyBank | None = None
_bank_lock = threading.Lock()


def decoy_bank() -> DecoyBank:
    """The packaged bank, loaded once."""
    global _bank
    with _bank_lock:
        if _bank is None:
            with resources.files(__package__).joinpath(BANK_FILE).open("rb") as handle:
                data = np.load(handle, allow_pickle=False)
                vectors = data["vectors"].astype(np.float32)
                abstract = data["abstract_vectors"].astype(np.float32) if "abstract_vectors" in data else None
                _bank = DecoyBank(vectors, data["hashes"], data["offsets"], str(data["model"]), abstract)
        return _bank


def submission_line_hashes(units: Sequence[CodeUnit]) -> set[int]:
    """`unit_line_hashes` of every unit of a submission."""
    own: set[int] = set()
    for unit in units:
        own.update(unit_line_hashes(unit))
    return own


def decoy_scales(query_vectors: np.ndarray, units: Sequence[CodeUnit] | set[int],
                 bank: DecoyBank | None = None, *, abstract: bool = False,
                 on_rows: Callable[[int], None] | None = None) -> list[DecoyScale]:
    """Each requirement's decoy scale, the submission's own code left out of the bank.

    Args:
        query_vectors: The requirements' embeddings (rows, unit-normalised like the bank's).
        units: The submission's code units (their lines decide which bank rows are its own), or their
            `submission_line_hashes`.
        bank: The bank (default: the packaged one).
        abstract: The scale of the decoys' `abstract_text` (a bank without them gives the neutral scale).
        on_rows: Told how many more requirements were scaled, after each block (a grade's progress).
    """
    bank = bank or decoy_bank()
    vectors = bank.abstract_vectors if abstract else bank.vectors
    own = units if isinstance(units, set) else submission_line_hashes(units)
    rows = bank.rows_not_in(own)
    if vectors is None or len(rows) < 20 or not len(query_vectors):
        if on_rows is not None:
            on_rows(len(query_vectors))
        return [DecoyScale(0.0, 1.0, 1.0) for _ in range(len(query_vectors))]
    decoys = vectors[rows].T
    queries = np.asarray(query_vectors, dtype=np.float32)
    scales: list[DecoyScale] = []
    for start in range(0, len(queries), _SCALE_ROWS):  # a block of requirements x the bank at a time
        sims = queries[start:start + _SCALE_ROWS] @ decoys
        means, stds = sims.mean(axis=1), sims.std(axis=1)
        tails = np.quantile(sims, TAIL_QUANTILE, axis=1)
        scales += [DecoyScale(float(m), float(s), float(t)) for m, s, t in zip(means, stds, tails, strict=True)]
        if on_rows is not None:
            on_rows(len(means))
    return scales


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: np.ndarray = (vectors / np.maximum(norms, 1e-9)).astype(np.float16)
    return out


def pack_bank(vectors: np.ndarray, hashes: Iterable[Sequence[int]], model: str,
              abstract_vectors: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The arrays `decoy_bank` reads, for training/build_decoy_bank.py."""
    lists = [list(h) for h in hashes]
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(h) for h in lists])
    flat = np.array([h for row in lists for h in row], dtype=np.int64)
    packed = {"vectors": _normalised(vectors), "hashes": flat, "offsets": offsets, "model": np.array(model)}
    if abstract_vectors is not None:
        packed["abstract_vectors"] = _normalised(abstract_vectors)
    return packed
