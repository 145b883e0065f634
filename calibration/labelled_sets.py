"""One entry point that loads a labelled set from whatever the user points at."""

from __future__ import annotations

from pathlib import Path

from calibration.crscore import is_crscore_folder, load_crscore
from calibration.items import LabelledItem
from calibration.label_sheet import read_label_csv
from calibration.labels import LabelSet, read_labels
from judge.errors import InputError


def items_from_labels(label_set: LabelSet) -> list[LabelledItem]:
    """One item per labelled item id, with its group (group_id, else the item id) and category."""
    out: dict[str, LabelledItem] = {}
    groups = {key.item_id: group for key, group in label_set.groups().items()}
    for lab in label_set.labels:
        if lab.item_id not in out:
            out[lab.item_id] = LabelledItem(
                item_id=lab.item_id, group_id=groups[lab.item_id], category=lab.category
            )
    return sorted(out.values(), key=lambda item: item.item_id)


def load_labelled_set(path: str | Path) -> tuple[list[LabelledItem], LabelSet]:
    """Items and labels from a labels JSONL file, a label-sheet CSV, or a folder in a known format.

    Known folders: CRScore claim labels (`<lang>_claim_acc_annot_<rater>.csv`), whose items are
    `ClaimItem`s carrying the diff and the claim. Labels files carry no item content, so their items are
    bare `LabelledItem`s (id, group, category) built from the labels.

    Raises:
        InputError: the path does not exist, or is a folder or file type no importer reads.
    """
    p = Path(path)
    if p.is_dir():
        if is_crscore_folder(p):
            claims, labels = load_crscore(p)
            return list(claims), labels
        from calibration.judgeeval import is_judgeeval_folder, load_judgeeval

        if is_judgeeval_folder(p):  # PaperBench JudgeEval: expected_result.json trees + repositories
            leaves, labels = load_judgeeval(p)
            return list(leaves), labels
        raise InputError("a folder in no known label format (known: CRScore claim CSVs, JudgeEval "
                         "expected_result.json trees)", field=str(p))
    if not p.exists():
        raise InputError("no such file or folder", field=str(p))
    suffix = p.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        labels = read_labels(p)
    elif suffix == ".csv":
        labels = read_label_csv(p)
    else:
        raise InputError(
            f"unknown labels file type {suffix or '(none)'!r}; expected .jsonl or .csv", field=str(p)
        )
    return items_from_labels(labels), labels
