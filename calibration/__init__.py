"""Calibration against human graders: labelled sets, agreement metrics, splits and the report.

The judge-independent half: the `calibrate` and `tune` commands build on these.
"""

from calibration.agreement import agreement_report
from calibration.agreement_models import AgreementReport, Estimate
from calibration.agreement_slices import agreement_report_from_pairs, by_key, per_category
from calibration.ceiling import (
    human_ceiling,
    human_ceiling_per_category,
    human_ceiling_with_reason,
    krippendorff_alpha_raters,
)
from calibration.crscore import CLAIM_LABELS, load_crscore
from calibration.items import ClaimItem, LabelledItem
from calibration.label_sheet import read_label_csv, write_label_sheet
from calibration.labelled_sets import load_labelled_set
from calibration.labels import HumanLabel, LabelKey, LabelSet, ReferenceLabels, read_labels, write_labels
from calibration.report_html import CalibrationReportData, CategoryResult, Disagreement, write_report
from calibration.splits import Split, SplitLeakageError, assert_disjoint, split_by_group

__all__ = [
    "CLAIM_LABELS",
    "AgreementReport",
    "CalibrationReportData",
    "CategoryResult",
    "ClaimItem",
    "Disagreement",
    "Estimate",
    "HumanLabel",
    "LabelKey",
    "LabelSet",
    "LabelledItem",
    "ReferenceLabels",
    "Split",
    "SplitLeakageError",
    "agreement_report",
    "agreement_report_from_pairs",
    "assert_disjoint",
    "by_key",
    "human_ceiling",
    "human_ceiling_per_category",
    "human_ceiling_with_reason",
    "krippendorff_alpha_raters",
    "load_crscore",
    "load_labelled_set",
    "per_category",
    "read_label_csv",
    "read_labels",
    "split_by_group",
    "write_label_sheet",
    "write_labels",
    "write_report",
]
