"""The human-vs-human ceiling and Krippendorff's alpha over several raters."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from calibration.agreement import agreement_report
from calibration.agreement_slices import by_key
from calibration.ceiling import (
    human_ceiling,
    human_ceiling_per_category,
    human_ceiling_with_reason,
    krippendorff_alpha_raters,
)
from calibration.crscore import CLAIM_LABELS, load_crscore
from calibration.labels import HumanLabel, LabelSet


def _labels(rows: list[tuple[str, str, str]], **kw: str) -> LabelSet:
    return LabelSet(
        labels=[
            HumanLabel(item_id=i, leaf_id="leaf", rater_id=r, label=lab, **kw)  # type: ignore[arg-type]
            for i, r, lab in rows
        ]
    )


def test_two_raters_on_their_shared_items() -> None:
    rows = [
        ("i1", "ann", "a"),
        ("i1", "bob", "a"),
        ("i2", "ann", "b"),
        ("i2", "bob", "a"),
        ("i3", "ann", "b"),
        ("i3", "bob", "b"),
        ("i4", "ann", "a"),
        ("i5", "bob", "b"),
        ("i6", "ann", "a"),
        ("i6", "bob", "a"),
    ]
    ls = _labels(rows)
    rep = human_ceiling(ls, n_resamples=200)
    assert rep is not None
    ann = [lab for _, _, lab in sorted(r for r in rows if r[1] == "ann" and r[0] not in {"i4"})]
    bob = [lab for _, _, lab in sorted(r for r in rows if r[1] == "bob" and r[0] not in {"i5"})]
    assert rep.n_paired == 4  # i4 and i5 have one rater each
    assert rep.cohen_kappa.value == pytest.approx(cohen_kappa_score(ann, bob))
    assert rep.macro_f1.value == pytest.approx(f1_score(ann, bob, average="macro", zero_division=0))
    alpha = krippendorff.alpha(
        np.array([[0 if x == "a" else 1 for x in ann], [0 if x == "a" else 1 for x in bob]], dtype=float),
        level_of_measurement="nominal",
    )
    assert rep.krippendorff_alpha.value == pytest.approx(alpha)
    # One interval rule for every figure: 4 units are too few, for alpha as for kappa (alpha had an interval).
    assert rep.krippendorff_alpha.ci is None and rep.cohen_kappa.ci is None
    assert rep.krippendorff_alpha.no_interval == rep.cohen_kappa.no_interval == (
        "too few groups for an interval (4 of 10 needed)")
    enough, _ = human_ceiling_with_reason(ls, n_resamples=200, min_units=2, unit="submissions")
    assert enough is not None and enough.krippendorff_alpha.ci is not None and enough.cohen_kappa.ci is not None


def test_no_overlap_and_single_rater_give_none_with_reason() -> None:
    apart = _labels([("i1", "ann", "a"), ("i2", "bob", "b")])
    assert human_ceiling_with_reason(apart) == (
        None,
        "no unit is labelled by two of the raters ann, bob",
    )
    assert human_ceiling(apart) is None
    alone = _labels([("i1", "ann", "a"), ("i2", "ann", "b")])
    report, reason = human_ceiling_with_reason(alone)
    assert report is None and "only one rater" in (reason or "")
    assert human_ceiling_with_reason(LabelSet()) == (None, "no labels")
    assert krippendorff_alpha_raters(apart).value is None


def test_three_raters_with_missing_ratings() -> None:
    rows = [
        ("u1", "a", "x"),
        ("u1", "b", "x"),
        ("u1", "c", "y"),
        ("u2", "a", "y"),
        ("u2", "b", "y"),
        ("u3", "b", "x"),
        ("u3", "c", "x"),
        ("u4", "a", "z"),
        ("u4", "c", "y"),
        ("u5", "a", "x"),
    ]
    ls = _labels(rows)
    rep = human_ceiling(ls, n_resamples=100)
    assert rep is not None
    # One row per pair of raters on a unit: u1 has 3 raters (3 pairs), u2, u3, u4 have 2 (1 pair each).
    assert rep.n_paired == 3 + 1 + 1 + 1
    assert rep.bootstrap.unit == "group" and rep.bootstrap.n_units == 4  # a unit's pairs move together
    # Alpha over the 3 x 4 reliability matrix (u5 has one rating and is not pairable), built independently.
    code = {"x": 0.0, "y": 1.0, "z": 2.0}
    matrix = np.full((3, 4), np.nan)
    for unit, rater, lab in rows:
        if unit != "u5":
            matrix["abc".index(rater), int(unit[1]) - 1] = code[lab]
    assert rep.krippendorff_alpha.value == pytest.approx(
        krippendorff.alpha(matrix, level_of_measurement="nominal")
    )
    pooled = [(by[r1], by[r2]) for by in ls.ratings().values() for r1, r2 in combinations(sorted(by), 2)]
    assert rep.accuracy.value == pytest.approx(sum(x == y for x, y in pooled) / len(pooled))


def test_ceiling_on_crscore(shared_crscore: Path) -> None:
    _, labels = load_crscore(shared_crscore)
    overlap = len(labels.shared_keys())
    rep, reason = human_ceiling_with_reason(labels, labels=CLAIM_LABELS, n_resamples=200)
    assert reason is None and rep is not None
    assert rep.n_paired == overlap == len(labels.shared("atharva", "marcus"))
    assert rep.labels == list(CLAIM_LABELS)
    shared = labels.shared("atharva", "marcus")
    assert rep.cohen_kappa.value == pytest.approx(
        cohen_kappa_score([a for _, a, _ in shared], [b for _, _, b in shared])
    )
    # Claims about one diff are resampled together.
    assert rep.bootstrap.n_units == len({labels.group_of(k.item_id) for k, _, _ in shared})
    # Treating marcus as a "judge" against atharva through agreement_report gives the same figures and
    # intervals (same units, groups and seed): the two code paths agree.
    keys, ref, pred = by_key(labels.by_rater("atharva"), labels.by_rater("marcus"))
    groups = labels.groups()
    as_judge = agreement_report(
        ref, pred, labels=CLAIM_LABELS, groups=[groups[k] for k in keys], n_resamples=200
    )
    for name in ("accuracy", "macro_f1", "cohen_kappa"):
        assert as_judge.headline()[name] == rep.headline()[name], name
    assert as_judge.krippendorff_alpha.value == pytest.approx(rep.krippendorff_alpha.value)
    per_cat = human_ceiling_per_category(labels, labels=CLAIM_LABELS, n_resamples=50)
    assert sorted(per_cat) == ["java", "python"]
    assert sum(r.n_paired for r, _ in per_cat.values() if r is not None) == overlap
