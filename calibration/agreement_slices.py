"""Agreement over views of the items: from (reference, predicted) pairs, per category, aligned by key."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from calibration.agreement import agreement_report, label_order
from calibration.agreement_models import AgreementReport
from calibration.labels import Label
from judge.errors import InputError

K = TypeVar("K")


def agreement_report_from_pairs(
    pairs: Sequence[tuple[Label | None, Label | None]], **kwargs: object
) -> AgreementReport:
    """`agreement_report` on (reference, predicted) pairs; keyword arguments as for `agreement_report`."""
    return agreement_report([r for r, _ in pairs], [q for _, q in pairs], **kwargs)  # type: ignore[arg-type]


def per_category(
    reference: Sequence[Label | None],
    predicted: Sequence[Label | None],
    categories: Sequence[str],
    *,
    groups: Sequence[str] | None = None,
    confidence: Sequence[float | None] | None = None,
    labels: Sequence[Label] | None = None,
    **kwargs: object,
) -> dict[str, AgreementReport]:
    """One report per category (sorted), each on that category's items only.

    The label order is fixed across categories (given, or inferred from all items), so confusion
    matrices line up; other keyword arguments go to `agreement_report`.
    """
    if len(categories) != len(reference):
        raise InputError(
            f"has {len(categories)} entries for {len(reference)} reference labels", field="categories"
        )
    scale = kwargs.get("scale", "categorical")
    order = label_order([*reference, *predicted], labels, scale)  # type: ignore[arg-type]
    out: dict[str, AgreementReport] = {}
    for cat in sorted(set(categories)):
        rows = [i for i, c in enumerate(categories) if c == cat]
        out[cat] = agreement_report(
            [reference[i] for i in rows],
            [predicted[i] for i in rows],
            labels=order,
            groups=[groups[i] for i in rows] if groups is not None else None,
            confidence=[confidence[i] for i in rows] if confidence is not None else None,
            **{"name": cat, **kwargs},  # type: ignore[arg-type]
        )
    return out


def by_key(
    reference: Mapping[K, Label], predicted: Mapping[K, Label | None]
) -> tuple[list[K], list[Label | None], list[Label | None]]:
    """Align two labellings keyed by unit: (keys, reference, predicted) over the reference's keys, sorted.

    A key missing from `predicted` becomes None (unscored), so it counts against coverage, not accuracy.
    """
    keys = sorted(reference, key=repr)
    return keys, [reference[k] for k in keys], [predicted.get(k) for k in keys]
