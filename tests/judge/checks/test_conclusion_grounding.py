"""Tests of the conclusion's grounding evidence: sentence modality, "nothing was run" admissions, metric ~ value
pairs read from logs, and numbers a conclusion states checked against them."""

from __future__ import annotations

import json
import time

import pytest

from judge.checks.outcome_claim.conclusion_grounding import (
    HEAD_BYTES,
    HEAD_LINES,
    TAIL_BYTES,
    TAIL_LINES,
    LogMetric,
    RunRecord,
    extract_log_metrics,
    metric_tokens,
    read_run_record,
)
from judge.checks.outcome_claim.number_grounding import (
    ground_number,
    ground_sentence,
    is_setting,
    needs_measured_result,
    without_unmet_settings,
)
from judge.checks.outcome_claim.statement_modality import (
    classify_sentence,
    find_admission,
    relative_mode,
    sentence_modalities,
)
from judge.models import Execution
from judge.text.items import split_claims
from judge.text.numeric_claims import compare_numbers, extract_numbers, honours


@pytest.mark.parametrize(
    ("sentence", "mode"),
    [
        ("Accuracy improved from 0.5 to 0.7 on the test split.", "asserted"),
        ("As expected, the larger model reached a lower loss.", "asserted"),
        ("Results suggest that dynamics conditioning raises recovery.", "asserted"),
        ("The results confirm our hypothesis that X beats Y.", "asserted"),
        ("It should be noted that accuracy rose to 0.9.", "asserted"),
        ("Accuracy was higher than expected.", "asserted"),
        ("We could observe that the loss dropped below 0.2.", "asserted"),
        ("We expected pruning to hurt recall, but the results show a gain of 2 points.", "asserted"),
        ("Our hypothesis was that X would beat Y; indeed X beats Y by 5%.", "asserted"),
        ("We found that X would likely beat Y.", "hedged"),
        ("X does not improve Y.", "asserted"),  # negated only against a claim that is not (relative_mode)
        ("The generated trajectories should exhibit JSD values close to MD.", "hedged"),
        ("MDGEN would outperform the baseline.", "hedged"),
        ("We anticipate a 5% gain in recall.", "hedged"),
        ("We expect the sparse model to converge faster.", "hedged"),
        ("The method is expected to reduce latency.", "hedged"),
        ("It is likely that pretraining helps.", "hedged"),
        ("This could indicate better generalisation.", "hedged"),
        ("The ablation seems to confirm the trend.", "hedged"),
        ("Whether it transfers remains to be seen.", "hedged"),
        ("Expected results: the recall improves by 4 points.", "hedged"),
        ("Had we run the sweep, accuracy would have improved.", "conditional"),
        ("If we had more compute, the gap closes.", "conditional"),
        ("Hypothetically, the model matches MD at 0.1.", "conditional"),
        ("In principle the sampler recovers the metastable states.", "conditional"),
        ("If the run were completed, X would beat Y.", "conditional"),
        ("Results will be reproduced once file access issues have been resolved.", "conditional"),
        ("The speed-up should have reached 10x.", "conditional"),
        ("We could not verify that X improves Y.", "negated"),
        ("We were unable to measure the JSD of the generated paths.", "negated"),
        ("The comparison could not be completed.", "negated"),
        ("No results were obtained for the long trajectories.", "negated"),
        ("Technical issues prevented full validation of the hypotheses.", "negated"),
        ("It was not possible to evaluate the model.", "negated"),
    ],
)
def test_sentence_modes(sentence: str, mode: str) -> None:
    found = classify_sentence(sentence)
    assert found.mode == mode, found
    assert bool(found.cues) == (mode != "asserted")


def test_should_have_with_a_noun_is_no_counterfactual() -> None:
    # "should have JSD values" is a prediction (hedged), not "should have reached" (counterfactual).
    assert classify_sentence("Torsions should have JSD values near 0.1.").mode == "hedged"


def test_negation_is_read_against_the_claim() -> None:
    negative = classify_sentence("Dropout does not improve accuracy.")
    assert relative_mode(negative, "Dropout improves accuracy.").mode == "negated"
    assert relative_mode(negative, "Dropout does not improve accuracy.").mode == "asserted"
    epistemic = classify_sentence("We could not confirm that dropout does not improve accuracy.")
    assert relative_mode(epistemic, "Dropout does not improve accuracy.").mode == "negated"


@pytest.mark.parametrize(
    "text",
    [
        "We did not run anything.",
        "Note: we didn't actually run the experiments; the numbers below follow the paper.",
        "No experiments were executed because the GPU was unavailable.",
        "Nothing was run.",
        "The experiment was not run.",
        "Our experiments could not be completed.",
        "I was unable to execute the script.",
        "We never launched any of the simulations.",
        "No actual results were obtained.",
        "The following results are hypothetical.",
        "All reported numbers are placeholders.",
        "This report was written without running any code.",
    ],
)
def test_admissions_of_no_execution(text: str) -> None:
    assert find_admission(f"Summary.\n\n{text} Accuracy is 0.9.") == " ".join(text.split())
    wrapped = text.replace(" ", "\n", 2)  # a sentence wrapped over lines
    assert find_admission(f"## Summary\n{wrapped}\n\n- Accuracy is 0.9.") == " ".join(text.split())


@pytest.mark.parametrize(
    "text",
    [
        "We did not run the experiment on ImageNet, only on CIFAR-10.",
        "We did not observe any degradation after pruning.",
        "The experiment ran to completion in 3 hours.",
        "Accuracy did not improve beyond 0.7.",
        "We ran all experiments twice.",
        "No significant difference was found between the two samplers.",
    ],
)
def test_no_admission_in_ordinary_findings(text: str) -> None:
    assert find_admission(text) is None


def test_frames_pass_their_mode_to_the_sentences_they_introduce() -> None:
    conclusion = (
        "Had we been able to run the experiments, we would expect the following:\n"
        "- MDGEN matches the MD torsion distributions closely.\n"
        "- The TICA-0 projection deviates somewhat more.\n"
        "\n"
        "In our partial run, the loss fell to 0.2 after two epochs.\n"
        "## Expected results\n"
        "- Recall reaches 0.95 on the held-out peptides.\n"
        "## Results\n"
        "Throughput rose to 1200 frames per second."
    )
    sentences = split_claims(conclusion)
    modes = dict(zip(sentences, sentence_modalities(conclusion, sentences), strict=True))
    framed = [s for s, m in modes.items() if m.cues and m.cues[0].startswith("framed by")]
    assert len(framed) == 3, framed
    assert modes["MDGEN matches the MD torsion distributions closely."].mode == "conditional"
    assert modes["The TICA-0 projection deviates somewhat more."].mode == "conditional"
    assert modes["In our partial run, the loss fell to 0.2 after two epochs."].mode == "asserted"
    assert next(m for s, m in modes.items() if "Recall" in s).mode == "hedged"
    assert next(m for s, m in modes.items() if "Throughput" in s).mode == "asserted"


LOG = """\x1b[32m[INFO]\x1b[0m 2024-05-01 12:00:00 starting run seed=42
Epoch 1 | loss 0.52 | acc 0.80
Epoch 2 | loss 0.31 | val_acc: 0.88
{"epoch": 3, "val_acc": 0.91, "test": {"f1": 0.87}}
accuracy = 91.2%
The mean JSD is 0.08
0.93 precision
| model | acc | f1 |
|-------|-----|----|
| ours  | 0.91 | 0.88 |
| base  | 0.85 | 0.80 |
epoch,loss,accuracy
1,0.5,0.81
     model   backbone_jsd   sidechain_jsd
0    mdgen   0.081          0.120
1    md      0.050          0.070
Progress 10%\rProgress 50%\rDone: throughput 1200
Loading checkpoint from /workspace/ckpt_3.pt (released 2023)
"""


def _pairs(metrics: list[LogMetric]) -> set[tuple[str, float, int]]:
    return {(" ".join(sorted(m.tokens)), round(m.value.value, 4), m.line) for m in metrics}


def test_log_metrics_in_many_forms() -> None:
    found = _pairs(extract_log_metrics(LOG))
    expected = {
        ("accuracy", 0.80, 2), ("loss", 0.31, 3), ("accuracy validation", 0.88, 3),
        ("accuracy validation", 0.91, 4), ("f1 test", 0.87, 4), ("accuracy", 91.2, 5), ("jsd mean", 0.08, 6),
        ("precision", 0.93, 7), ("accuracy", 0.91, 10), ("base f1", 0.80, 11), ("accuracy", 0.81, 13),
        ("backbone jsd mdgen", 0.081, 15), ("jsd md sidechain", 0.07, 16), ("throughput", 1200.0, 17),
    }
    assert expected <= found, expected - found
    values = {v for _, v, _ in found}
    assert not values & {2024.0, 2023.0, 3.0 * 1000}  # dates, years and identifiers are no values
    assert ("", 3.0, 18) not in found  # ckpt_3 is part of a path
    counters = {m.name for m in extract_log_metrics(LOG) if m.counter}
    assert {"epoch", "Epoch"} <= counters and "val_acc" not in counters


@pytest.mark.parametrize("filler", ["step progress ......\n", "epoch 7 | loss 0.25\n"])
def test_a_huge_log_reads_its_head_and_tail_with_true_line_numbers(filler: str) -> None:
    logs = "lr: 0.001\n" + filler * ((HEAD_BYTES + TAIL_BYTES) // len(filler) + 1000) + "final test_acc: 0.934\n"
    started = time.perf_counter()
    metrics = extract_log_metrics(logs)
    assert time.perf_counter() - started < 5
    last = metrics[-1]
    assert last.key == frozenset({"accuracy"}) and last.value.value == pytest.approx(0.934)
    assert last.line == logs.count("\n")
    assert metrics[0].counter and metrics[0].line == 1
    assert len({m.line for m in metrics}) <= HEAD_LINES + TAIL_LINES


def test_a_short_log_is_read_whole() -> None:
    logs = "".join(f"epoch {i} | val_acc: 0.{i:03d}\n" for i in range(HEAD_LINES + TAIL_LINES - 10))
    assert len({m.line for m in extract_log_metrics(logs)}) == HEAD_LINES + TAIL_LINES - 10


def test_metric_tokens_read_abbreviations_and_plurals() -> None:
    assert metric_tokens("val_acc") == {"validation", "accuracy"}
    assert metric_tokens("Test Acc@1") == {"test", "accuracy"}
    assert metric_tokens("tica0_jsd") == {"tica", "jsd"}
    assert metric_tokens("F1") == {"f1"}
    assert metric_tokens("JSD values of the distributions") == {"jsd", "distribution"}


def _record(logs: str, exit_code: int | None = 0) -> RunRecord:
    return read_run_record(Execution(exit_code=exit_code, logs=logs))


def _ground(sentence: str, raw: str, record: RunRecord, rel_tol: float = 0.05) -> tuple[str, str]:
    stated = next(m for m in extract_numbers(sentence) if m.raw == raw)
    found = ground_number(stated, sentence, record, rel_tol=rel_tol, abs_tol=0.0)
    return found.status, found.detail


def test_a_number_found_under_its_name_is_grounded() -> None:
    record = _record("backbone_jsd: 0.081\nsidechain_jsd: 0.35\n")
    status, detail = _ground("Backbone torsions reach a JSD of 0.08.", "0.08", record)
    assert status == "grounded" and "backbone_jsd" in detail


def test_a_number_its_logs_hold_otherwise_is_contradicted() -> None:
    record = _record("backbone_jsd: 0.31\nsidechain_jsd: 0.35\n")
    status, detail = _ground("Backbone torsions reach a JSD of 0.08.", "0.08", record)
    assert status == "contradicted" and "0.31" in detail and "log line 1" in detail


def test_a_number_the_logs_do_not_hold_is_not_found() -> None:
    assert _ground("Backbone JSD was 0.08.", "0.08", _record("training done\n"))[0] == "not_found"
    assert _ground("Backbone JSD was 0.08.", "0.08", _record("wall time 0.5 s\n"))[0] == "not_found"


def test_units_and_unnamed_values() -> None:
    record = _record("eval: {'top1': 0.9123}\n")
    assert _ground("The classifier reaches 91.2% top-1 accuracy.", "91.2%", record)[0] == "grounded"
    assert _ground("It scores 91.2%.", "91.2%", _record("0.912\n"))[0] == "grounded"  # a bare logged value


def test_a_metric_named_elsewhere_in_the_sentence_does_not_contradict() -> None:
    # The loss was never logged: "accuracy" names another number of the sentence, not the loss.
    record = _record("accuracy: 0.91\n")
    sentence = "Accuracy reached 0.91 while the loss stayed at 0.2."
    assert _ground(sentence, "0.91", record)[0] == "grounded"
    assert _ground(sentence, "0.2", record)[0] == "not_found"


def test_changes_are_compared_with_differences_and_ratios_never_contradicted() -> None:
    record = _record("baseline accuracy: 0.80\nours accuracy: 0.852\n")
    assert _ground("Our method improves accuracy by 6.5%.", "6.5%", record, rel_tol=0.1)[0] == "grounded"
    assert _ground("Our method improves accuracy by 5.2 points.", "5.2", record, rel_tol=0.1)[0] == "grounded"
    assert _ground("Our method improves accuracy by 40%.", "40%", record)[0] == "not_found"
    assert _ground("It is 2x faster than the baseline.", "2x", _record("baseline s/it: 1.0\nours s/it: 0.5\n"))[0] \
        == "grounded"


def test_counters_ground_by_name_but_never_contradict() -> None:
    record = _record("epoch: 12\nseed: 3\n")
    assert _ground("We trained for 12 epochs.", "12", record)[0] == "grounded"
    assert _ground("Training ran for 40 epochs.", "40", record)[0] == "not_found"


def test_ground_sentence_requires_the_claims_numbers_and_reports_other_contradictions() -> None:
    record = _record("mdgen_jsd: 0.08\nmd_jsd: 0.31\n")
    sentence = "MDGEN reaches a JSD of 0.08 on 100 peptides, versus 0.05 for MD."
    carried = [m for m in extract_numbers(sentence) if m.raw in ("0.08", "100")]
    needed, contradicted = ground_sentence(sentence, carried, record, rel_tol=0.1, abs_tol=0.0)
    assert [(g.stated.raw, g.status) for g in needed] == [("0.08", "grounded")]  # "100 peptides" is a setting
    assert [(g.stated.raw, g.status) for g in contradicted] == [("0.05", "contradicted")]


@pytest.mark.parametrize(
    ("sentence", "raw", "setting"),
    [
        ("replicate 100 ns simulations", "100", True),
        ("averaged across 5 seeds", "5", True),
        ("an accuracy of 91 on the test set", "91", False),
        ("a JSD of ~0.1 or lower", "0.1", False),
        ("it reaches 12% more recall", "12%", False),
        ("succeeds on 8 of 10 tasks", "8", False),
    ],
)
def test_settings_are_told_from_results(sentence: str, raw: str, setting: bool) -> None:
    mention = next(m for m in extract_numbers(sentence) if m.raw == raw)
    assert is_setting(sentence, mention) is setting


def test_a_claims_setup_numbers_need_not_be_restated() -> None:
    claim = "Torsions should have JSD values near those of replicate 100 ns simulations (~0.1 or lower)."
    said = compare_numbers(claim, "Torsion JSD values were 0.08, at the replicate level.", rel_tol=0.1)
    assert said.status == "mismatch"  # 100 has no counterpart
    assert without_unmet_settings(said, claim).status == "match"
    wrong = compare_numbers(claim, "Torsion JSD values were 0.45.", rel_tol=0.1)
    assert without_unmet_settings(wrong, claim).status == "mismatch"
    silent = compare_numbers("JSD matches that of the 100 ns runs.", "JSD matches MD closely.")
    assert without_unmet_settings(silent, "JSD matches that of the 100 ns runs.").status == "claim_has_no_numbers"


@pytest.mark.parametrize(
    ("claim", "measured"),
    [
        ("CoT agents reach higher completion rates than standard prompting.", True),
        ("JSD should be ~0.1 or lower.", True),
        ("Accuracy improves with model size.", True),
        ("A HEST-compatible data object is saved to disk with a visualisation of the spots.", False),
        ("The script prints step information for each minitask.", False),
    ],
)
def test_claims_that_need_a_measured_result(claim: str, measured: bool) -> None:
    assert (needs_measured_result(claim) is not None) is measured


def test_run_records() -> None:
    assert not read_run_record(None).present
    assert not read_run_record(Execution(artifacts=["results/metrics.json"])).present  # names are no run
    assert read_run_record(Execution(exit_code=1)).present
    logged = read_run_record(Execution(logs=json.dumps({"val": {"acc": 0.9}})))
    assert logged.present and [m.tokens for m in logged.metrics] == [frozenset({"validation", "accuracy"})]


def test_honours_reads_the_stated_numbers_hedge() -> None:
    stated = extract_numbers("a JSD below 0.1")[0]
    assert honours(stated, extract_numbers("0.07")[0], 0.05)
    assert not honours(stated, extract_numbers("0.2")[0], 0.05)
    assert honours(extract_numbers("91%")[0], extract_numbers("0.912")[0], 0.01)
