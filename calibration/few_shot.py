"""Few-shot examples for the LLM judge, chosen from labelled train items and written into the rubric.

The LLM judge shows each leaf's `criterion` to the model verbatim (judge/judges/prompts.py), so examples
appended to the criterion reach the prompt without any change to the judge; they are also kept,
structured, in `check.args.few_shot` so a grade's rubric says exactly which labelled items taught it. A
changed criterion changes the rubric hash and the prompt, hence the fingerprint.

Choice: stratified by class over the labels the judge can answer; within a class, the items whose claim
embeddings lie closest to the class centroid (typical, not outliers), preferring short evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from calibration.labels import Label
from calibration.runner import JudgeCase
from judge.embeddings.encoder import Embedder
from judge.judges.llm_schemas import labels_for
from judge.models import Leaf

FEW_SHOT_HEADER = "Labelled examples from a training split (statement -> answer):"
MAX_EXCERPT_CHARS = 100
MAX_CLAIM_CHARS = 220
# Evidence longer than this is a poor example for a small context window; used only when nothing shorter is left.
SHORT_EVIDENCE_CHARS = 900


def changed_line(diff: str) -> str:
    """The first added or removed line of a diff (file headers skipped), cut to MAX_EXCERPT_CHARS."""
    for line in diff.splitlines():
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip():
            text = " ".join(line.split())
            return text if len(text) <= MAX_EXCERPT_CHARS else text[: MAX_EXCERPT_CHARS - 1] + "…"
    return ""


def choose_few_shot(cases: Sequence[JudgeCase], reference: Sequence[Label], leaf: Leaf, embedder: Embedder,
                    *, per_class: int = 1) -> list[dict[str, Any]]:
    """Examples from labelled train cases, `per_class` per label the judge can answer for `leaf`.

    Args:
        cases: Train cases (never held-out ones: the caller checks the split).
        reference: Reference label of each case.
        leaf: The leaf the examples are for (its answer labels decide which classes are used).
        embedder: Embeds the targets to find typical items.
        per_class: Examples per class.

    Returns:
        Dicts with item_id, group_id, target (the claim), excerpt (a changed line) and label, in class order.
    """
    allowed = labels_for(leaf)
    chosen: list[dict[str, Any]] = []
    for label in allowed:
        members = [c for c, r in zip(cases, reference, strict=True) if r == label]
        if not members:
            continue
        short = [c for c in members if len(c.shown_to_raters) <= SHORT_EVIDENCE_CHARS] or members
        vectors = embedder.encode([c.leaf.target for c in short])
        centroid = vectors.mean(axis=0)
        order = np.argsort(-(vectors @ centroid), kind="stable")[:per_class]
        for index in order:
            case = short[int(index)]
            chosen.append({"item_id": case.item.item_id, "group_id": case.item.group_id,
                           "target": case.leaf.target[:MAX_CLAIM_CHARS],
                           "excerpt": changed_line(case.submission.diff or ""), "label": label})
    return chosen


def criterion_with_examples(criterion: str, examples: Sequence[dict[str, Any]]) -> str:
    """The criterion followed by the examples, one sentence each."""
    if not examples:
        return criterion
    parts = []
    for number, ex in enumerate(examples, start=1):
        shows = f" (the diff shows `{ex['excerpt']}`)" if ex.get("excerpt") else ""
        parts.append(f'({number}) "{ex["target"]}"{shows} -> {ex["label"]}.')
    return f"{criterion.rstrip()} {FEW_SHOT_HEADER} {' '.join(parts)}"
