"""The leaf index of the review pages: one `review_leaves` row per leaf of every stored grade.

Rows are written in the transaction that stores the grade (`save_grade`, `save_json_many`), and the
migration that introduced the table filled it for the grades stored before. The judge's verdict and
confidence are copied once; the label columns (`n_labels`, `n_disagree`, `raters_split`, `dis_rank`)
change only through `refresh_label_counts`, which every label write calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects import postgresql, sqlite

from judge.checks.claim_vs_diff import CLAIM_LABELS, LABEL_FLAG
from judge.models import Grade
from judge.store.tables import LabelRow, ReviewLeafRow

CLAIM_TEMPLATE = "claim_vs_diff"
"""Leaves of this template are labelled with the claim labels instead of pass / partial / fail."""
LEAF_LABELS: tuple[str, ...] = ("pass", "partial", "fail")
"""Labels of every other leaf, best first."""
UNSCORED_CONFIDENCE = -1.0
"""`conf_key` of a leaf without a confidence: it sorts before every scored leaf."""
# Rows per INSERT of the index: far under SQLite's and asyncpg's parameter limits (16 columns a row).
_CHUNK = 500


def labels_for_template(template_id: str) -> tuple[str, ...]:
    """The labels a human can give a leaf of this template."""
    return CLAIM_LABELS if template_id == CLAIM_TEMPLATE else LEAF_LABELS


def judge_label(template_id: str, verdict: str, flags: Sequence[str], reason_code: str | None) -> str | None:
    """The label the judge's verdict stands for (what "agree" gives); None when the judge decided nothing.

    Claim leaves read as `judge.checks.claim_vs_diff.claim_label_of` does: a "label:<name>" flag wins, then
    pass -> correct and fail -> incorrect, then an unscored "not_applicable" flagged unverifiable/incomplete.
    """
    if template_id != CLAIM_TEMPLATE:
        return verdict if verdict in LEAF_LABELS else None
    for flag in flags:
        if flag.startswith(LABEL_FLAG) and flag[len(LABEL_FLAG):] in CLAIM_LABELS:
            return flag[len(LABEL_FLAG):]
    if verdict in ("pass", "fail"):
        return "correct" if verdict == "pass" else "incorrect"
    if reason_code == "not_applicable":
        return next((label for label in ("unverifiable", "incomplete") if label in flags), None)
    return None


def leaf_rows(
    tenant: str, grade_id: str, task_id: str, fingerprint_digest: str, leaves: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The index rows of one grade's leaves, given as JSON objects (a grade's `leaves`)."""
    rows = []
    for position, leaf in enumerate(leaves):
        confidence = leaf.get("confidence")
        template_id = str(leaf.get("template_id", ""))
        verdict = str(leaf.get("verdict", "unscored"))
        rows.append({
            "grade_id": grade_id,
            "position": position,
            "tenant": tenant,
            "leaf_id": str(leaf["leaf_id"]),
            "template_id": template_id,
            "stage": str(leaf.get("stage", "")),
            "verdict": verdict,
            "judge_label": judge_label(template_id, verdict, leaf.get("flags") or [], leaf.get("reason_code")),
            "confidence": confidence,
            "conf_key": UNSCORED_CONFIDENCE if confidence is None else float(confidence),
            "task_id": task_id,
            "fingerprint_digest": fingerprint_digest,
            "n_labels": 0,
            "n_disagree": 0,
            "raters_split": False,
            "dis_rank": 0,
        })
    return rows


def grade_leaf_rows(tenant: str, grade: Grade) -> list[dict[str, Any]]:
    """`leaf_rows` of a grade model."""
    leaves = (
        {"leaf_id": leaf.leaf_id, "template_id": leaf.template_id, "stage": leaf.stage, "verdict": leaf.verdict,
         "confidence": leaf.confidence, "flags": leaf.flags, "reason_code": leaf.reason_code}
        for leaf in grade.leaves
    )
    return leaf_rows(tenant, grade.grade_id, grade.task_id, grade.fingerprint.digest, leaves)


def insert_leaf_rows(connection: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert index rows; rows already there (the same grade indexed twice) are left as they are."""
    if not rows:
        return
    module = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = module.insert(ReviewLeafRow).on_conflict_do_nothing(index_elements=["grade_id", "position"])
    for start in range(0, len(rows), _CHUNK):
        connection.execute(statement, list(rows[start : start + _CHUNK]))


def refresh_label_counts(connection: Connection, tenant: str, grade_id: str, leaf_id: str) -> None:
    """Recount one leaf's labels into its index row (call inside the label write's transaction)."""
    judge = connection.execute(
        select(ReviewLeafRow.judge_label).where(
            ReviewLeafRow.tenant == tenant, ReviewLeafRow.grade_id == grade_id, ReviewLeafRow.leaf_id == leaf_id
        )
    ).one_or_none()
    if judge is None:
        return
    labels = list(connection.execute(
        select(LabelRow.label).where(
            LabelRow.tenant == tenant, LabelRow.grade_id == grade_id, LabelRow.leaf_id == leaf_id
        )
    ).scalars())
    n_disagree = sum(1 for label in labels if judge[0] is not None and label != judge[0])
    split = len(set(labels)) > 1
    connection.execute(
        update(ReviewLeafRow)
        .where(ReviewLeafRow.grade_id == grade_id, ReviewLeafRow.leaf_id == leaf_id)
        .values(n_labels=len(labels), n_disagree=n_disagree, raters_split=split,
                dis_rank=-(2 * n_disagree + int(split)))
    )
