"""The leaf index of the review pages: one `review_leaves` row per leaf of every stored grade.

Rows are written after the grade, in batches of many grades, by the catch-up of the review index
(judge/store/review_backlog.py); the migration that introduced the table filled it for the grades stored
before. The judge's verdict and confidence are copied once; the label columns (`n_labels`, `n_disagree`,
`raters_split`, `dis_rank`) change only through `refresh_label_counts`, which every label write calls.

Identical leaves (same task, submission, rubric leaf and judge fingerprint: cache copies, refreshes,
batches) share a `content_key` and are one review item: a label given on one copy is written to every
copy (`judge.store.labels`), and a copy stored later inherits the labels its twins already have.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update
from sqlalchemy.orm import aliased

from judge.models import Grade
from judge.models.claim_labels import CLAIM_LABELS, LABEL_FLAG
from judge.store.clock import as_utc
from judge.store.dialects import insert_ignoring, on_conflict, run_hot
from judge.store.tables import GradeRow, LabelEventRow, LabelRow, ReviewLeafRow

CLAIM_TEMPLATE = "claim_vs_diff"
"""Leaves of this template are labelled with the claim labels instead of pass / partial / fail."""
LEAF_LABELS: tuple[str, ...] = ("pass", "partial", "fail")
"""Labels of every other leaf, best first."""
UNSCORED_CONFIDENCE = -1.0
"""`conf_key` of a leaf without a confidence: it sorts before every scored leaf."""
# Rows per INSERT of the index: far under SQLite's and asyncpg's parameter limits (16 columns a row).
_CHUNK = 500
# Built once: building a statement costs more than running it for one grade's rows.
_INSERT_LEAVES = on_conflict(ReviewLeafRow, ["grade_id", "position"])
_ANY_LABEL = select(LabelRow.label_id).where(LabelRow.tenant.in_(bindparam("tenants", expanding=True))).limit(1)
_ANY_LABEL_OF = select(LabelRow.label_id).where(LabelRow.tenant == bindparam("tenant")).limit(1)  # one tenant


def labels_for_template(template_id: str) -> tuple[str, ...]:
    """The labels a human can give a leaf of this template."""
    return CLAIM_LABELS if template_id == CLAIM_TEMPLATE else LEAF_LABELS


def judge_label(template_id: str, verdict: str, flags: Sequence[str], reason_code: str | None) -> str | None:
    """The label the judge's verdict stands for (what "agree" gives); None when the judge decided nothing.

    Claim leaves read as `judge.checks.claim_vs_diff.check.claim_label_of` does: a "label:<name>" flag wins, then
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
    tenant: str, grade_id: str, task_id: str, fingerprint_digest: str, leaves: Iterable[Mapping[str, Any]],
    *, content_hashes: tuple[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The index rows of one grade's leaves, given as JSON objects (a grade's `leaves`).

    With `content_hashes` (the grade's task and submission hashes) each row carries its content key, so
    `insert_leaf_rows` need not read them back from the grade row.
    """
    keys = _content_keys(*content_hashes, fingerprint_digest) if content_hashes is not None else None
    rows = []
    for position, leaf in enumerate(leaves):
        confidence = leaf.get("confidence")
        template_id = str(leaf.get("template_id", ""))
        verdict = str(leaf.get("verdict", "unscored"))
        row = {
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
        }
        if keys is not None:
            row["content_key"] = keys(str(row["leaf_id"]))
        rows.append(row)
    return rows


def grade_leaf_rows(tenant: str, grade: Grade, *, fingerprint_digest: str | None = None) -> list[dict[str, Any]]:
    """`leaf_rows` of a grade model (`fingerprint_digest`: its fingerprint's digest, when the caller has it)."""
    leaves = (
        {"leaf_id": leaf.leaf_id, "template_id": leaf.template_id, "stage": leaf.stage, "verdict": leaf.verdict,
         "confidence": leaf.confidence, "flags": leaf.flags, "reason_code": leaf.reason_code}
        for leaf in grade.leaves
    )
    digest = fingerprint_digest if fingerprint_digest is not None else grade.fingerprint.digest
    return leaf_rows(tenant, grade.grade_id, grade.task_id, digest, leaves,
                     content_hashes=(grade.task_hash, grade.submission_hash))


def content_key(task_hash: str, submission_hash: str, fingerprint_digest: str, leaf_id: str) -> str:
    """The review item a leaf is: equal for every grade of the same task, submission and judge fingerprint."""
    return _content_keys(task_hash, submission_hash, fingerprint_digest)(leaf_id)


def _content_keys(task_hash: str, submission_hash: str, fingerprint_digest: str) -> Callable[[str], str]:
    """`content_key` for the leaves of one grade: the shared prefix is hashed once, not once per leaf."""
    prefix = hashlib.sha256("\x1f".join((task_hash, submission_hash, fingerprint_digest, "")).encode())

    def key(leaf_id: str) -> str:
        digest = prefix.copy()
        digest.update(leaf_id.encode())
        return digest.hexdigest()[:32]

    return key


def _grade_facts(connection: Connection, grade_ids: set[str]) -> dict[str, tuple[str, str, str]]:
    """(task hash, submission hash, submission id) of stored grades, by id."""
    ids, out = sorted(grade_ids), {}
    for start in range(0, len(ids), _CHUNK):
        query = select(GradeRow.grade_id, GradeRow.task_hash, GradeRow.submission_hash, GradeRow.submission_id
                       ).where(GradeRow.grade_id.in_(ids[start : start + _CHUNK]))
        out.update({row.grade_id: (row.task_hash, row.submission_hash, row.submission_id)
                    for row in connection.execute(query)})
    return out


def insert_leaf_rows(connection: Connection, rows: Sequence[dict[str, Any]], *, with_copies: bool = True) -> None:
    """Insert index rows; rows already there (the same grade indexed twice) are left as they are.

    With `with_copies` (every caller but migration 0002, whose table had no content key yet) the rows get
    their content key, read from their grades (stored in this transaction), and inherit the labels that
    copies of the same content already have.
    """
    if not rows:
        return
    missing = {row["grade_id"] for row in rows if "content_key" not in row} if with_copies else set()
    if missing:  # rows made without their grade's hashes: read them from the grade rows
        facts = _grade_facts(connection, missing)
        rows = [{**row, "content_key": content_key(facts[row["grade_id"]][0], facts[row["grade_id"]][1],
                                                   row["fingerprint_digest"], row["leaf_id"])}
                if row["grade_id"] in facts and "content_key" not in row else row for row in rows]
    for start in range(0, len(rows), _CHUNK):
        run_hot(connection, _INSERT_LEAVES, list(rows[start : start + _CHUNK]))
    if with_copies:
        inherit_labels(connection, [row for row in rows if row.get("content_key")])


def inherit_labels(connection: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
    """Give leaves just indexed the labels their copies (same tenant and content key) already carry.

    Each inherited label is written with an event of its own, so the copy's history says who gave it.
    Returns how many labels were copied.
    """
    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        by_key.setdefault((row["tenant"], row["content_key"]), []).append(row)
    if not by_key:
        return 0
    tenants = sorted({tenant for tenant, _key in by_key})
    # A tenant nobody has labelled for (most stores, every unlabelled grade) costs one index probe.
    if (run_hot(connection, _ANY_LABEL_OF, {"tenant": tenants[0]}, fetch=True) if len(tenants) == 1
            else connection.execute(_ANY_LABEL, {"tenants": tenants}).first()) is None:
        return 0
    # The copies are found through the new rows' grades (a few ids), not an IN list of every leaf's key.
    new, twin = aliased(ReviewLeafRow), aliased(ReviewLeafRow)
    grade_ids = sorted({row["grade_id"] for group in by_key.values() for row in group})
    found: list[Any] = []
    for start in range(0, len(grade_ids), _CHUNK):
        found += connection.execute(
            select(LabelRow.__table__, twin.content_key)
            .join(twin, (twin.grade_id == LabelRow.grade_id) & (twin.leaf_id == LabelRow.leaf_id)
                  & (twin.tenant == LabelRow.tenant))
            .join(new, (new.tenant == twin.tenant) & (new.content_key == twin.content_key))
            .where(new.grade_id.in_(grade_ids[start : start + _CHUNK]))
        ).all()
    if not found:
        return 0
    newest: dict[tuple[str, str, str], Any] = {}
    for label in found:
        slot = (label.tenant, label.content_key, label.rater_id)
        if slot not in newest or as_utc(label.updated_at) > as_utc(newest[slot].updated_at):
            newest[slot] = label
    facts = _grade_facts(connection, {row["grade_id"] for group in by_key.values() for row in group})
    copied, touched = 0, {}
    for (tenant, key, _rater), label in sorted(newest.items(), key=lambda item: item[0]):
        for row in by_key.get((tenant, key), []):
            if row["grade_id"] != label.grade_id and copy_label(connection, label, row, facts[row["grade_id"]][2]):
                copied += 1
                touched[(row["grade_id"], row["leaf_id"])] = row["tenant"]
    for (grade_id, leaf_id), tenant in touched.items():
        refresh_label_counts(connection, tenant, grade_id, leaf_id)
    return copied


def copy_label(connection: Connection, label: Any, row: Mapping[str, Any], submission_id: str) -> bool:
    """Write `label` (a labels row) onto the copy `row` (an index row) unless the rater labelled it already."""
    values = {"tenant": row["tenant"], "grade_id": row["grade_id"], "leaf_id": row["leaf_id"],
              "rater_id": label.rater_id, "key_id": label.key_id, "item_id": submission_id,
              "task_id": row["task_id"], "stage": row["stage"], "fingerprint_digest": row["fingerprint_digest"],
              "label": label.label, "note": label.note, "judge_verdict": row["verdict"],
              "judge_label": row["judge_label"], "version": 1, "created_at": label.created_at,
              "updated_at": label.updated_at}
    statement = insert_ignoring(LabelRow, values, ["tenant", "grade_id", "leaf_id", "rater_id"])
    if connection.execute(statement.returning(LabelRow.label_id)).scalar_one_or_none() is None:
        return False
    connection.execute(insert(LabelEventRow).values(
        tenant=row["tenant"], grade_id=row["grade_id"], leaf_id=row["leaf_id"], rater_id=label.rater_id,
        key_id=label.key_id, version=1, label=label.label, note=label.note, previous_label=None,
        previous_note=None, created_at=label.updated_at))
    return True


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
