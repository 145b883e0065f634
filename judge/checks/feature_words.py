"""Features of a learned decision in words, so a rationale names what weighed, never a feature's name.

A learned decision (`judge.checks.learned`) says which features pushed it most. A reviewer reads that as
"share of the reference span's calls found in the code (40%)", not `ref_ctx_calls=0.4`: every feature a
check's model may read has a `FeatureWords` entry here (the requirement check's features) or in the check's
own `feature_words` mapping (a check that owns its words). The feature vectors themselves stay in the grade's
JSON (the leaf's evidence facts); tests/judge/checks/test_rationale_words.py fails when a feature of any
check has no words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

ValueKind = Literal["share", "score", "flag", "count", "log_count", "rank", "logit"]


@dataclass(frozen=True)
class FeatureWords:
    """What one feature measures, in words, and how its value reads.

    Attributes:
        phrase: A short noun phrase, e.g. "share of the reference span's calls found in the code".
        kind: How the value is shown: "share" as a percentage, "score" with two decimals, "flag" as yes/no,
            "count" as a whole number, "log_count" (stored as log(1 + n)) as n, "rank" as a 1-based place,
            "logit" as the probability it stands for.
    """

    phrase: str
    kind: ValueKind = "score"

    def value(self, x: float) -> str:
        """The feature's value as a reader would write it (never more than two decimals)."""
        if self.kind == "share":
            return f"{round(100 * x)}%"
        if self.kind == "flag":
            return "yes" if x >= 0.5 else "no"
        if self.kind == "count":
            return f"{round(x)}"
        if self.kind == "log_count":
            return f"{round(math.expm1(x))}"
        if self.kind == "rank":
            return f"{round(x) + 1}"
        if self.kind == "logit":
            return f"{1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x)))):.2f}"
        return f"{x:.2f}"

    def describe(self, x: float) -> str:
        """The phrase and the value, e.g. "in a file the requirement names (yes)"."""
        return f"{self.phrase} ({self.value(x)})"


def share(phrase: str) -> FeatureWords:
    """Words of a feature that is a share (0..1)."""
    return FeatureWords(phrase, "share")


def flag(phrase: str) -> FeatureWords:
    """Words of a feature that is 0 or 1."""
    return FeatureWords(phrase, "flag")


def count(phrase: str) -> FeatureWords:
    """Words of a feature that counts."""
    return FeatureWords(phrase, "count")


def log_count(phrase: str) -> FeatureWords:
    """Words of a feature stored as log(1 + count)."""
    return FeatureWords(phrase, "log_count")


GENERIC_WORDS = FeatureWords("another signal of the evidence")

_CODE = "the code"
_REGION = "the best few code units"
_ANYWHERE = "anywhere in the submission"

# The requirement check's features (judge/checks/requirement/features.py: REFERENCE_FEATURES, TEXT_FEATURES,
# CODER_FEATURES). "Cited lines": the reference lines the requirement cites; "reference span": the unit of
# the reference that holds them.
REQUIREMENT_FEATURE_WORDS: dict[str, FeatureWords] = {
    "ref_match": FeatureWords("match of the code with the reference span"),
    "ref_core_lines": share(f"share of the cited reference lines found in {_CODE}"),
    "ref_core_calls": share(f"share of the cited lines' calls found in {_CODE}"),
    "ref_core_literals": share(f"share of the cited lines' values found in {_CODE}"),
    "ref_core_keywords": share(f"share of the cited lines' keyword arguments found in {_CODE}"),
    "ref_ctx_lines": share(f"share of the reference span's lines found in {_CODE}"),
    "ref_ctx_calls": share(f"share of the reference span's calls found in {_CODE}"),
    "ref_ctx_literals": share(f"share of the reference span's values found in {_CODE}"),
    "ref_ctx_keywords": share(f"share of the reference span's keyword arguments found in {_CODE}"),
    "ref_ctx_attributes": share(f"share of the reference span's attributes found in {_CODE}"),
    "ref_ctx_flow": share(f"share of the reference span's control flow found in {_CODE}"),
    "ref_structure": FeatureWords("likeness of the code's structure to the reference span's"),
    "ref_lines_back": share("share of the code's lines found in the reference span"),
    "ref_calls_back": share("share of the code's calls found in the reference span"),
    "ref_region_core_lines": share(f"share of the cited reference lines found in {_REGION}"),
    "ref_region_core_calls": share(f"share of the cited lines' calls found in {_REGION}"),
    "ref_region_ctx_lines": share(f"share of the reference span's lines found in {_REGION}"),
    "ref_sub_core_lines": share(f"share of the cited reference lines found {_ANYWHERE}"),
    "ref_sub_core_calls": share(f"share of the cited lines' calls found {_ANYWHERE}"),
    "ref_sub_ctx_lines": share(f"share of the reference span's lines found {_ANYWHERE}"),
    "ref_core_empty": flag("the cited lines hold no code"),
    "ref_core_size": log_count("calls, values and lines in the cited reference lines"),
    "ref_embedding": FeatureWords("similarity in meaning of the code to the reference span"),
    "ref_text_similarity": FeatureWords("similarity of the code to the requirement's words"),
    "ref_cited": flag("the requirement cites reference lines"),
    "ref_core_cover": share(f"share of what the cited lines do found in {_CODE}"),
    "ref_sub_core_cover": share(f"share of what the cited lines do found {_ANYWHERE}"),
    "ref_distinct_size": log_count("things only the cited lines do in the reference"),
    "ref_distinct_best": share(f"share of what only the cited lines do found in {_CODE}"),
    "ref_distinct_region": share(f"share of what only the cited lines do found in {_REGION}"),
    "ref_distinct_sub": share(f"share of what only the cited lines do found {_ANYWHERE}"),
    "ref_ctx_rest_lines": share(f"share of the reference span's other lines found in {_CODE}"),
    "ref_ctx_without_core": FeatureWords("surrounding reference code present without the cited lines"),
    "txt_similarity": FeatureWords("similarity of the code to the requirement"),
    "txt_lexical": FeatureWords("word overlap of the code with the requirement"),
    "txt_fused": FeatureWords("retrieval score of the code for the requirement"),
    "txt_rank": FeatureWords("place of the code among the units retrieved for the requirement", "rank"),
    "txt_margin": FeatureWords("lead of the requirement over its sibling requirements in similarity to the code"),
    "txt_siblings": flag("the code names what a sibling requirement asks for"),
    "txt_missing_names": count("names in the requirement the submission lacks"),
    "txt_executable_share": share("share of the unit's lines that are code, not comments"),
    "txt_size": log_count("lines in the code unit"),
    "txt_acting_share": share("share of the retrieved units that do something"),
    "txt_decoy_z": FeatureWords("standard deviations the code stands above what unrelated code scores for the "
                                "requirement"),
    "txt_decoy_margin": FeatureWords("similarity above the best unrelated code's for the requirement"),
    "txt_task_z": FeatureWords("how far above unrelated code the submission stands for all of the task's requirements"),
    "txt_task_abstract_z": FeatureWords("how far above unrelated code the submission, its own names left out, stands "
                                        "for all of the task's requirements"),
    "txt_abstract_similarity": FeatureWords("similarity of the code, its own names left out, to the requirement"),
    "txt_abstract_z": FeatureWords("standard deviations the code, its own names left out, stands above what "
                                   "unrelated code scores for the requirement"),
    "txt_abstract_margin": FeatureWords("lead of the requirement over its sibling requirements in similarity to the "
                                        "code, its own names left out"),
    "txt_abstract_cover": share("share of the requirement's words in what the code calls and the values it uses"),
    "txt_task_fit": FeatureWords("how far above unrelated code the submission stands for this task's requirements"),
    "txt_rival_task_fit": FeatureWords("how far above unrelated code the submission stands for the requirements of "
                                       "the paper's other task it fits best"),
    "txt_rival_task_shared": flag("the paper's other task that fits the submission best asks for this requirement "
                                  "too"),
    "txt_values_stated": log_count("values the requirement states"),
    "txt_values_held": share("share of the stated values found"),
    "txt_values_absent": share("share of the stated values not found"),
    "txt_term_cover": share(f"share of the requirement's words the submission has that are in {_CODE}"),
    "txt_term_cover_region": share(f"share of the requirement's words the submission has that are in {_REGION}"),
    "txt_term_cover_sub": share(f"share of the requirement's words found {_ANYWHERE}"),
    "ref_file_context": share("share of what the reference file does that the code's own file does"),
    "coder_logit": FeatureWords("the code reader's probability that the code implements it", "logit"),
}

# Words of a learned decision's labels, by check (a label not listed is shown as it is).
LABEL_WORDS: dict[str, dict[str, str]] = {
    "requirement_in_diff": {"pass": "implemented", "partial": "partly implemented", "fail": "not implemented"},
}


def words_for(name: str, own: dict[str, FeatureWords] | None = None) -> FeatureWords:
    """The words of feature `name`: the check's own (`own`), else the shared ones, else a generic phrase
    (an unknown name never reaches a rationale)."""
    if own and name in own:
        return own[name]
    return REQUIREMENT_FEATURE_WORDS.get(name, GENERIC_WORDS)


def label_words(check_name: str, label: str) -> str:
    """What a learned decision's label means for `check_name`, e.g. "implemented" for the requirement's pass."""
    return LABEL_WORDS.get(check_name, {}).get(label, label)
