"""Tests of judge.text.numeric_claims: number extraction and tolerance checks of claims."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.text.numeric_claims import NumericMention, compare_numbers, extract_numbers

TASKS = (
    Path(__file__).resolve().parents[3].parent
    / "shared/data/expbench/tasks/neurips2024/93022_complete_final.json"
)


def _values(text: str) -> list[float]:
    return [m.value for m in extract_numbers(text)]


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("a loss of 0.1 after training", [0.1]),
        ("dropout .5 was used", [0.5]),
        ("learning rate 1e-3 and weight decay 5E-4", [1e-3, 5e-4]),
        ("we used 1,000 samples and 30,000 frames", [1000.0, 30000.0]),
        ("the values 1,2,3 were tried", [1.0, 2.0, 3.0]),
        ("a change of -0.5 and of −2.25", [-0.5, -2.25]),
        ("a 100k-frame trajectory and a 7B model with 1.5M tokens", [1e5, 7e9, 1.5e6]),
        ("lr=0.001, batch_size=32, epochs: 10", [0.001, 32.0, 10.0]),
        ("scores (0.91, 0.87) were reported", [0.91, 0.87]),
        ("improved from 0.5 to 0.7 overall", [0.5, 0.7]),
        ("It costs $100 per run.", [100.0]),
        ("on an A100 and 3 seeds", [3.0]),
        ("Llama-2-7B reached 61.5", [61.5]),
    ],
)
def test_extracts_plain_numbers(text: str, values: list[float]) -> None:
    assert _values(text) == pytest.approx(values)


@pytest.mark.parametrize(
    "text",
    [
        "TICA-0 component distribution should align",
        "see step_3 and file2.py and v1.2.3",
        "Step 4: run the script",
        "Step 12: Generate visualization plots (/workspace/scripts/analyze_peptide_tps.py:87-131)",
        "(tps_inference.py:155-156)",
        "on an NVIDIA A100 or H100 with gpt-4o and o3-mini",
        "results_749f9d71-3feb-4b5c-9ea6-a7894ba5a079_control_group_partition_1.txt",
        "commit 3fa9c2d1 fixed it",
        "run at 2025-07-25 21:27:04",
        "1. **Simulation Method**:",
        "   2) second item",
        "### 3. Results",
        "see Table 2, Figure 3 and Section 4.1, lines 10-20, 30-35 and 40, Eq. 5",
        "(/workspace/scripts/analyze_peptide_sim.py:44-46, 104-106)",
        "https://example.org/v2/page3 and user@host42.com",
        "C++11 and x86 and conv2d",
    ],
)
def test_ignores_identifiers_versions_paths_and_enumerators(text: str) -> None:
    assert extract_numbers(text) == []


@pytest.mark.parametrize(
    ("text", "value", "is_percent"),
    [
        ("accuracy of 12%", 12.0, True),
        ("accuracy of 12 %", 12.0, True),
        ("accuracy of 12 percent", 12.0, True),
        ("accuracy of 12 per cent", 12.0, True),
        ("accuracy of 0.12", 0.12, False),
    ],
)
def test_percent_forms(text: str, value: float, is_percent: bool) -> None:
    (mention,) = extract_numbers(text)
    assert (mention.value, mention.is_percent) == (value, is_percent)


@pytest.mark.parametrize(
    ("text", "low", "high", "is_percent"),
    [
        ("JSD between 0.1-0.2", 0.1, 0.2, False),
        ("recovery of 52–62% for high-flux", 52.0, 62.0, True),
        ("recovery of 52%–62% for high-flux", 52.0, 62.0, True),
        ("from 10 to 20 layers", None, None, False),
        ("10 to 20 layers", 10.0, 20.0, False),
        ("between 3 and 5 seeds", 3.0, 5.0, False),
        ("10x–1000x faster", 10.0, 1000.0, False),
        ("durations (10–50 ns)", 10.0, 50.0, False),
        ("temperatures of -5 to 5 degrees", -5.0, 5.0, False),
    ],
)
def test_ranges(text: str, low: float | None, high: float | None, is_percent: bool) -> None:
    mentions = extract_numbers(text)
    if low is None:  # "from X to Y" is a change: two numbers
        assert [m.high for m in mentions] == [None, None]
        return
    (mention,) = mentions
    assert (mention.value, mention.high, mention.is_percent) == (low, high, is_percent)
    assert mention.interval == (low, high)


def test_plus_minus_and_ratio() -> None:
    (pm,) = extract_numbers("Spearman correlation ≈ 0.67 ± 0.01 between flux matrices")
    assert (pm.value, pm.plus_minus, pm.qualifier) == (0.67, 0.01, "approx")
    assert pm.interval == pytest.approx((0.66, 0.68))
    (ratio,) = extract_numbers("≥78/100 peptides")
    assert (ratio.value, ratio.denominator, ratio.qualifier) == (78.0, 100.0, "lower_bound")
    assert extract_numbers("0.5 +/- 0.1")[0].plus_minus == 0.1


@pytest.mark.parametrize(
    ("text", "qualifier", "approximate"),
    [
        ("~0.1", "approx", True),
        ("≈ 0.1", "approx", True),
        ("about 0.1", "approx", True),
        ("around 0.1", "approx", True),
        ("roughly 0.1", "approx", True),
        ("near 0.1", "approx", True),
        ("approximately 0.1", "approx", True),
        ("close to 0.1", "approx", True),
        ("0.1 or so", "approx", True),
        ("0.1 or lower", "upper_bound", False),
        ("0.1 or less", "upper_bound", False),
        ("below 0.1", "upper_bound", False),
        ("less than 0.1", "upper_bound", False),
        ("at most 0.1", "upper_bound", False),
        ("p < 0.1", "upper_bound", False),
        ("x <= 0.1", "upper_bound", False),
        ("x ≤ 0.1", "upper_bound", False),
        ("should not exceed 0.1", "upper_bound", False),
        ("0.1 or higher", "lower_bound", False),
        ("0.1 or more", "lower_bound", False),
        ("above 0.1", "lower_bound", False),
        ("more than 0.1", "lower_bound", False),
        ("at least 0.1", "lower_bound", False),
        ("x > 0.1", "lower_bound", False),
        ("x >= 0.1", "lower_bound", False),
        ("≥ 0.1", "lower_bound", False),
        ("over 90% accuracy", "lower_bound", False),
        ("50+ runs", "lower_bound", False),
        ("(~0.1 or lower)", "upper_bound", True),
        ("< ~0.1", "upper_bound", True),
        ("exactly 0.1", None, False),
        ("the recovery (0.1)", None, False),
    ],
)
def test_qualifiers(text: str, qualifier: str | None, approximate: bool) -> None:
    (mention,) = extract_numbers(text)
    assert mention.value == pytest.approx(90.0 if "90" in text else 50.0 if "50" in text else 0.1)
    assert (mention.qualifier, mention.approximate) == (qualifier, approximate)


def test_years_are_flagged() -> None:
    mentions = extract_numbers(
        "As shown at NeurIPS 2024, and in 2023 we ran 2000 samples (Smith et al., 2021)."
    )
    assert [(m.value, m.is_year) for m in mentions] == [
        (2024.0, True),
        (2023.0, True),
        (2000.0, False),
        (2021.0, True),
    ]
    (span,) = extract_numbers("papers from 2019-2023 were used")
    assert (span.value, span.high, span.is_year) == (2019.0, 2023.0, True)
    (steps,) = extract_numbers("for 2000-5000 steps")
    assert (steps.value, steps.high, steps.is_year) == (2000.0, 5000.0, False)


def test_spans_and_raw_point_into_the_text() -> None:
    text = "JSD values near replicate 100 ns simulations (~0.1 or lower); speedup 10x–1000x; 52–62%."
    for mention in extract_numbers(text):
        assert text[mention.span[0] : mention.span[1]] == mention.raw
    assert [m.raw for m in extract_numbers(text)] == ["100", "0.1", "10x–1000x", "52–62%"]


def test_expected_outcomes_of_the_real_task_file() -> None:
    questions = json.loads(TASKS.read_text())["questions"]
    first = extract_numbers(questions[0]["expected_outcome"])
    # "TICA-0" is an identifier; "100 ns" (twice) and "~0.1 or lower" are numbers.
    assert [(m.value, m.qualifier) for m in first] == [(100.0, None), (100.0, None), (0.1, "upper_bound")]
    speed = extract_numbers(questions[2]["expected_outcome"])
    # "JSD values close to 100 ns MD simulations": the hedge is read as applying to the 100.
    assert [(m.value, m.high, m.qualifier) for m in speed] == [
        (10.0, 1000.0, None),
        (100.0, None, "approx"),
        (78.0, None, "lower_bound"),
    ]
    recovery = extract_numbers(questions[5]["expected_outcome"])
    assert [(m.value, m.high, m.is_percent) for m in recovery] == [
        (52.0, 62.0, True),
        (17.0, 24.0, True),
        (13.0, 14.0, True),
    ]


def test_requirement_step_labels_and_code_references_are_not_numbers() -> None:
    requirements = [
        r for q in json.loads(TASKS.read_text())["questions"] for r in q.get("requirements") or []
    ]
    assert len(requirements) > 50
    for requirement in requirements:
        label_end = requirement.index(":") + 1  # "Step N:"
        reference_start = requirement.rindex("(")  # "(/workspace/file.py:12-34)"
        for mention in extract_numbers(requirement):
            assert label_end <= mention.span[0] < reference_start, (requirement, mention.raw)


@pytest.mark.parametrize(
    ("claim", "answer", "status"),
    [
        ("JSD near replicate simulations (~0.1 or lower)", "We obtained a JSD of 0.08.", "match"),
        ("JSD near replicate simulations (~0.1 or lower)", "We obtained a JSD of 0.35.", "mismatch"),
        ("JSD (~0.1 or lower)", "JSD of 0.109", "match"),  # within 2 x 5% of 0.1
        ("JSD (~0.1 or lower)", "JSD of 0.111", "mismatch"),
        ("JSD of at most 0.1", "JSD of 0.104", "match"),  # 0.1 x 1.05
        ("JSD of at most 0.1", "JSD of 0.106", "mismatch"),
        ("accuracy of at least 90%", "accuracy was 91.2%", "match"),
        ("accuracy of at least 90%", "accuracy was 80%", "mismatch"),
        ("accuracy of at least 90%", "accuracy was 0.93", "match"),
        ("accuracy of 12%", "accuracy 0.12", "match"),
        ("accuracy of 0.12", "accuracy 12%", "match"),
        ("accuracy of 12%", "accuracy 12", "match"),
        ("accuracy of 0.12", "accuracy 12", "mismatch"),
        ("MDGEN is 10x–1000x faster", "MDGEN ran 120 times faster", "match"),
        ("MDGEN is 10x–1000x faster", "MDGEN ran 3 times faster", "mismatch"),
        ("≥78/100 peptides decorrelate", "80 of 100 peptides decorrelated", "match"),
        ("≥78/100 peptides decorrelate", "82% of peptides decorrelated", "match"),
        ("≥78/100 peptides decorrelate", "only 70% decorrelated", "mismatch"),
        ("≥78/100 peptides decorrelate", "0.9 of peptides", "match"),
        ("Spearman ≈ 0.67 ± 0.01", "Spearman of 0.68", "match"),
        ("Spearman ≈ 0.67 ± 0.01", "Spearman of 0.55", "mismatch"),
        ("recovery of 52–62%", "recovery reached 0.55", "match"),
        ("recovery of 52–62%", "recovery reached 48%", "mismatch"),
        ("a value of 0.1", "values between 0.08 and 0.12", "match"),
        ("a value of 0.5", "values between 0.08 and 0.12", "mismatch"),
        ("error below 5%", "error of 3% to 4%", "match"),
        ("error below 5%", "error of 3% to 9%", "mismatch"),
        ("a change of -0.5", "the change was -0.52", "match"),
        ("a change of -0.5", "the change was 0.5", "mismatch"),
        ("loss about 2.0", "loss 2.19", "match"),
        ("loss of 2.0", "loss 2.19", "mismatch"),
        ("JSD 0.1 and speedup 100x", "JSD 0.1, speedup 98x", "match"),
        ("JSD 0.1 and speedup 100x", "JSD 0.1, speedup 20x", "mismatch"),
        ("published in 2024 with accuracy 0.9", "accuracy 0.9", "match"),
        ("MDGEN is faster than MD", "MDGEN took 3 s", "claim_has_no_numbers"),
        ("published in 2024", "accuracy 0.9", "claim_has_no_numbers"),
        ("JSD of 0.1", "JSD was low", "answer_has_no_numbers"),
        ("JSD of 0.1", "see Step 4: and file_2.py", "answer_has_no_numbers"),
    ],
)
def test_compare_numbers(claim: str, answer: str, status: str) -> None:
    assert compare_numbers(claim, answer).status == status


def test_compare_details_name_the_numbers_and_the_failure() -> None:
    check = compare_numbers("JSD near replicate MD (~0.1 or lower)", "We measured a JSD of 0.35 and 0.5.")
    assert check.status == "mismatch"
    assert check.details == ["claim 0.1 (approx. upper bound) vs answer 0.35: exceeds"]
    (pair,) = check.pairs
    assert pair.answer is not None and pair.answer.value == 0.35 and not pair.satisfied

    check = compare_numbers("at least 90%", "we got 85%")
    assert check.details == ["claim 90% (lower bound) vs answer 85%: falls short"]

    check = compare_numbers("loss of 2.0", "loss 2.5, 9.0")
    assert check.details == ["claim 2 vs answer 2.5: differs"]

    check = compare_numbers("accuracy 0.12", "accuracy 12%")
    assert check.details == ["claim 0.12 vs answer 12%: within tolerance"]
    assert check.pairs[0].satisfied

    check = compare_numbers("JSD of 0.1 and 0.2", "nothing measured")
    assert check.status == "answer_has_no_numbers"
    assert check.details == ["claim 0.1: the answer has no numbers", "claim 0.2: the answer has no numbers"]


def test_tolerances_are_parameters() -> None:
    assert compare_numbers("loss of 2.0", "loss 2.19").status == "mismatch"
    assert compare_numbers("loss of 2.0", "loss 2.19", rel_tol=0.1).status == "match"
    assert compare_numbers("count of 0", "count 0.4").status == "mismatch"
    assert compare_numbers("count of 0", "count 0.4", abs_tol=0.5).status == "match"
    with pytest.raises(ValueError):
        compare_numbers("1", "1", rel_tol=-0.1)


def test_every_claim_number_must_be_matched() -> None:
    check = compare_numbers("JSD 0.1 and recovery 55%", "JSD 0.1; recovery 30%")
    assert check.status == "mismatch"
    assert [p.satisfied for p in check.pairs] == [True, False]


def test_mention_describe() -> None:
    mention = NumericMention(value=52.0, raw="52–62%", is_percent=True, span=(0, 6), high=62.0)
    assert mention.describe() == "52–62%"
