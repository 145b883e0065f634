"""Which requirement claims the lines a leaf would pass on, without a reference (issue 40).

A unit is often longer than one requirement: EXP-Bench steps cite one long function several times, and a unit's
embedded text is its first 1,200 characters. Judged unit by unit, a requirement whose lines were removed from such
a function still found the function, on topic, and passed on its siblings' code. Here the leaf's best few acting
units are cut into windows of a few executable lines (`WINDOW_LINES`, overlapping), each window is embedded, and
the leaf's closest lines are its best window. That window is *claimed* by whichever requirement stands closest to
it: this leaf, a sibling (another leaf of the grade, not one with its very terms) or a rival (a requirement of the
paper's other tasks, `rival_tasks`). `WindowClaim.margin` is the leaf's similarity to its best window minus the
best claimant's (`txt_window_margin`; `txt_window_above`: the share of the other requirements closer than it).

The rationale says when another requirement claims a leaf's closest lines (`claim_note`). No decision reads the
claim: on the train papers it told own code from the same code with the requirement's lines removed at an AUC of
0.62 (drop-one) and 0.73 (half of the requirements removed), and a text model retrained with it weighted it at
-0.07 (training/train_requirement_model.py on 2 tasks per train paper): it added nothing to the features the
model reads already.

Only executable lines are read (comments, docstrings and prose strings are not evidence), and no path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from judge.checks.requirement.rival_tasks import RivalRequirements
from judge.embeddings.encoder import Embedder
from judge.submission.code_units import CodeUnit
from judge.submission.sibling_index import SiblingIndex

# Executable lines per window, and the step between windows' starts (windows overlap by half).
WINDOW_LINES = 8
WINDOW_STEP = 4
# How many of a leaf's best acting units are cut into windows.
WINDOW_UNITS = 3
# Windows per unit at most: a longer unit's windows step further apart (they then overlap less, or not at all).
MAX_WINDOWS = 16
# Units cut into windows per grade at most (the leaves' best first): a bound on the encoder's work.
MAX_UNITS = 400


@dataclass(frozen=True)
class Window:
    """A few executable lines of one unit: the unit, its first and last line in the file, and the text."""

    unit: int
    start: int
    end: int
    text: str


def unit_windows(index: int, unit: CodeUnit) -> list[Window]:
    """The windows of a unit's executable lines (the whole unit when it is no longer than one window)."""
    lines = [(n, line.strip()) for n, line in zip(unit.line_numbers, unit.executable_lines, strict=True)
             if line.strip()]
    if not lines:
        return []
    step = max(WINDOW_STEP, -(-(len(lines) - WINDOW_LINES) // (MAX_WINDOWS - 1)))
    out = []
    for start in range(0, max(1, len(lines) - WINDOW_LINES + step), step):
        chunk = lines[start : start + WINDOW_LINES]
        out.append(Window(index, chunk[0][0], chunk[-1][0], "\n".join(text for _, text in chunk)))
    return out


class WindowClaim(BaseModel):
    """A leaf's best window and who claims it.

    Attributes:
        margin: The leaf's similarity to its best window minus the best claimant's (0.2 without a claimant).
        location: The window's place ("path:start-end").
        claimant: The claimant requirement's text ("" without one).
        claimant_is_rival: Whether the claimant is a requirement of the paper's other tasks.
        similarity: The leaf's similarity to the window.
    """

    model_config = ConfigDict(frozen=True)

    margin: float
    location: str = ""
    claimant: str = ""
    claimant_is_rival: bool = False
    similarity: float = 0.0
    above: float = 0.0


NO_WINDOW = WindowClaim(margin=0.2)
def claim_note(claim: WindowClaim) -> str:
    """A sentence for a rationale when another requirement claims the leaf's best lines ("" when none does):
    what the decision's reader should know of the code it compared, whatever the decision."""
    if not claim.claimant or claim.margin >= 0:
        return ""
    whose = "a requirement of another task of this paper" if claim.claimant_is_rival else "another requirement"
    return (f" The lines closest to this requirement ({claim.location}) stand nearer to {whose}: "
            f"\"{claim.claimant}\" ({claim.similarity - claim.margin:.2f} against {claim.similarity:.2f}).")


def window_claims(embedder: Embedder, units: Sequence[CodeUnit], queries: Sequence[str],
                  query_vectors: npt.NDArray[np.float32], siblings: SiblingIndex, rivals: RivalRequirements,
                  considered: Sequence[Sequence[int]]) -> list[WindowClaim]:
    """Per leaf, its best window among its first `WINDOW_UNITS` considered acting units, and its claim on it.

    Args:
        embedder: Embeds the windows (one call for the grade).
        units: The submission's code units.
        queries: The leaves' requirement texts.
        query_vectors: Their embeddings (rows, unit-normalised).
        siblings: The leaves' siblings: leaves with a leaf's very terms claim nothing from it.
        rivals: The paper's other tasks' requirements, embedded.
        considered: Per leaf, its acting units, best first.
    """
    # Every leaf's best unit first, then every leaf's second, ...: the bound drops the least considered.
    by_rank = dict.fromkeys(n for rank in range(WINDOW_UNITS) for picks in considered for n in picks[rank:rank + 1])
    wanted = sorted(list(by_rank)[:MAX_UNITS])
    windows = {n: unit_windows(n, units[n]) for n in wanted}
    flat = [w for n in wanted for w in windows[n]]
    if not flat:
        return [NO_WINDOW] * len(queries)
    vectors = embedder.encode([w.text for w in flat])
    offsets: dict[int, int] = {}
    at = 0
    for n in wanted:
        offsets[n] = at
        at += len(windows[n])
    out = []
    for row, picks in enumerate(considered):
        rows = [offsets[n] + i for n in picks[:WINDOW_UNITS] if n in windows for i in range(len(windows[n]))]
        if not rows:
            out.append(NO_WINDOW)
            continue
        own = np.asarray(vectors[rows] @ query_vectors[row], dtype=np.float64)
        best = rows[int(np.argmax(own))]
        window, similarity = flat[best], float(own.max())
        # The other leaves' similarity to that window (those with this leaf's very terms are no claimants).
        by_leaf = np.asarray(query_vectors @ vectors[best], dtype=np.float64)
        by_leaf[[row, *siblings.identical_to(row)]] = -np.inf
        claimant, claimant_score, is_rival = "", -np.inf, False
        if np.isfinite(by_leaf).any():
            other = int(np.argmax(by_leaf))
            claimant, claimant_score = queries[other], float(by_leaf[other])
        rival = rivals.best(row, vectors[best])
        finite = by_leaf[np.isfinite(by_leaf)]
        above = float(np.mean(finite > similarity)) if len(finite) else 0.0
        if rival.text and rival.similarity > claimant_score:
            claimant, claimant_score, is_rival = rival.text, rival.similarity, True
        location = f"{units[window.unit].file_path}:{window.start}-{window.end}"
        margin = similarity - claimant_score if claimant else 0.2
        out.append(WindowClaim(margin=margin, location=location, claimant=claimant[:90], claimant_is_rival=is_rival,
                               similarity=similarity, above=above))
    return out
