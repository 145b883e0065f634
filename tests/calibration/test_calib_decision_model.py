"""Training a check's learned decision, and `expjudge tune` -> rubric with a model -> `expjudge calibrate`.

The round trip runs on tests/calibration/fixtures/crscore_tune (templated diffs and claims whose labels hold by
construction; `make_fixture.py` there writes it): crscore_mini has too few diffs per class to cross-validate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from calibration.decision_model import easy_classes, fit_decision_model, fold_splits, objective_score
from calibration.report_html import CalibrationReportData
from judge.cli.main import _register_commands, app
from judge.errors import InputError
from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.rubric_loader import load_rubric
from judge.settings import get_settings

_register_commands()
runner = CliRunner()
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "crscore_tune"


def _synthetic(seed: int = 0) -> tuple[np.ndarray, list[str], list[str]]:
    rng = np.random.default_rng(seed)
    n = 300
    x = rng.normal(size=(n, 4))
    score = x[:, 0] + 0.5 * x[:, 1] + rng.normal(scale=0.7, size=n)
    y = np.where(score > 1.2, "rare", np.where(score < -0.8, "low", "common"))
    groups = [f"g{i // 3}" for i in range(n)]
    return x, y.tolist(), groups


def test_folds_keep_groups_together_and_every_class_on_each_training_side() -> None:
    _, y, groups = _synthetic()
    splits = fold_splits(y, groups)
    assert len(splits) == 5
    for train, test in splits:
        assert {groups[i] for i in train}.isdisjoint({groups[i] for i in test})
        assert {y[i] for i in train} == set(y)
    with pytest.raises(InputError, match="too few labelled train groups"):
        fold_splits(["a", "a", "b", "b"], ["g1", "g1", "g2", "g2"])


def test_the_trained_model_is_the_sklearn_estimator_as_data() -> None:
    x, y, groups = _synthetic()
    trained = fit_decision_model(x, y, groups, ["f0", "f1", "f2", "f3"], objective="macro_f1")
    expected = trained.estimator.predict_proba(x)
    assert np.max(np.abs(trained.model.probabilities(x) - expected)) < 1e-12
    assert trained.model.classes == ["common", "low", "rare"]
    assert trained.cv_score >= trained.cv_score_unweighted
    assert trained.model.trained_on["items"] == len(y) and trained.model.trained_on["folds"] == 5


def test_decision_weights_make_a_rare_class_pay_under_macro_f1() -> None:
    x, y, groups = _synthetic(seed=3)
    y = ["rare" if v > 1.9 else ("common" if label == "rare" else label) for v, label in zip(x[:, 0], y, strict=True)]
    trained = fit_decision_model(x, y, groups, ["f0", "f1", "f2", "f3"], objective="macro_f1")
    rare = trained.model.classes.index("rare")
    assert trained.model.decision_weights[rare] > 1.0
    assert trained.cv_score > trained.cv_score_unweighted  # measured on the cross-validated predictions
    proba = trained.model.probabilities(x)
    assert (trained.model.choose(proba) == rare).sum() > (proba.argmax(axis=1) == rare).sum()


def test_a_class_in_a_single_group_is_left_out_and_said_so() -> None:
    x, y, groups = _synthetic()
    y = [*y[:-3], "lonely", "lonely", "lonely"]  # the last group only
    trained = fit_decision_model(x, y, groups, ["f0", "f1", "f2", "f3"], objective="kappa")
    assert trained.dropped == {"lonely": 3} and "lonely" not in trained.model.classes
    with pytest.raises(InputError, match="objective"):
        fit_decision_model(x, y, groups, ["f0", "f1", "f2", "f3"], objective="accuracy")


def test_judgement_kappa_leaves_out_the_easy_classes() -> None:
    reference = ["a", "a", "b", "c", "c"]
    predicted = ["a", "b", "b", "c", "c"]
    assert objective_score(reference, predicted, "judgement_kappa", easy=["c"]) == pytest.approx(0.4)
    assert objective_score(reference, predicted, "judgement_kappa") == objective_score(reference, predicted, "kappa")


def test_a_nearly_decided_class_counts_as_easy_for_the_objective() -> None:
    # 'cut' is said 17 times, 16 of them right (precision 0.94), and every 'cut' item is found (recall 1.0)
    reference = ["cut"] * 16 + ["ok"] * 30 + ["bad"] * 10
    predicted = ["cut"] * 16 + ["cut"] + ["ok"] * 29 + ["ok"] * 8 + ["bad"] * 2
    assert easy_classes(reference, predicted, ["bad", "cut", "ok"]) == ["cut"]
    assert easy_classes(reference, predicted, ["bad", "cut", "ok"], decided_at=0.95) == []


def _invoke(args: list[str]) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr + result.stdout
    return result


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """tune (grouped split and cross-language) and calibrate of each tuned rubric, on one store."""
    folder = tmp_path_factory.mktemp("learned")
    url = f"sqlite+aiosqlite:///{folder / 'store.db'}"
    out: dict[str, Any] = {"folder": folder}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPJUDGE_DATABASE_URL", url)
        get_settings.cache_clear()
        for name, extra in (("grouped", []), ("python_to_java", ["--train-language", "py"])):
            tune_dir = folder / name
            tuned = _invoke(["tune", "--labels", str(FIXTURE), "--out", str(tune_dir), "--judge", "embedded",
                             "--bootstrap", "50", "--no-progress", *extra])
            summary = json.loads((tune_dir / "tune.json").read_text())
            [rubric_path] = summary["tuned_paths"]
            calibrated = _invoke(["calibrate", "--labels", str(FIXTURE), "--out", str(folder / f"{name}-cal"),
                                  "--rubric", rubric_path, "--bootstrap", "50", "--no-progress"])
            report = CalibrationReportData.model_validate_json((folder / f"{name}-cal" / "report.json").read_text())
            out[name] = {"summary": summary, "rubric": rubric_path, "tune_stdout": tuned.stdout,
                         "calibrate_stdout": calibrated.stdout, "report": report}
        yield out
    get_settings.cache_clear()


def test_tune_writes_a_rubric_whose_model_is_plain_data(round_trip: dict[str, Any]) -> None:
    grouped = round_trip["grouped"]
    rubric = load_rubric(grouped["rubric"])
    args = rubric.stages[0].leaves[0].check.args
    model = args["model"]
    assert model["kind"] == "calibrated_logistic_v1" and len(model["coef"]) == len(model["classes"])
    json.dumps(model)  # lists and numbers only
    assert args["tuned_on"]["method"] == "model" and args["tuned_on"]["objective"] == "judgement_kappa"
    assert grouped["summary"]["model"]["folds"] >= 2 and grouped["summary"]["search"] is None
    assert "train cross-validation" in grouped["tune_stdout"]
    base = load_rubric("crscore-claims-v1")
    assert fingerprint_for(rubric, EmbeddedJudge()).digest != fingerprint_for(base, EmbeddedJudge()).digest
    assert grouped["summary"]["held_out"]["tuned"]["fingerprint"] == fingerprint_for(rubric, EmbeddedJudge()).digest


@pytest.mark.parametrize("name", ["grouped", "python_to_java"])
def test_calibrate_reports_the_held_out_split_with_tunes_figures(round_trip: dict[str, Any], name: str) -> None:
    run = round_trip[name]
    report: CalibrationReportData = run["report"]
    held = set(run["summary"]["split"]["held_out_items"])
    assert {p["item_id"] for p in report.meta["predictions"]} == held
    assert "reporting on its held-out split only" in " ".join(run["calibrate_stdout"].split())
    tuned = run["summary"]["held_out"]["tuned"]
    for figure in ("cohen_kappa", "macro_f1", "accuracy"):
        assert report.overall.headline()[figure].model_dump(mode="json") == tuned[figure]
    assert report.meta["judge_fingerprint"]["rubric_hash"] == load_rubric(run["rubric"]).content_hash()


def test_the_learned_model_beats_the_untuned_rules_on_the_fixture(round_trip: dict[str, Any]) -> None:
    held = round_trip["grouped"]["summary"]["held_out"]
    # The fixture's incorrect claims are direction conflicts and its unverifiable ones speculation: exactly
    # what the signals measure, so the learned model must separate them better than the a-priori rules.
    assert held["tuned"]["cohen_kappa"]["value"] > held["untuned"]["cohen_kappa"]["value"]
    assert held["tuned"]["cohen_kappa"]["value"] > 0.8


def test_cross_language_trains_on_one_language_and_reports_on_the_other(round_trip: dict[str, Any]) -> None:
    run = round_trip["python_to_java"]
    split = run["summary"]["split"]
    assert split["by"] == "category" and split["train_category"] == "python"
    assert all(":py:" in i for i in split["train_items"]) and all(":java:" in i for i in split["held_out_items"])
    assert load_rubric(run["rubric"]).stages[0].leaves[0].check.args["tuned_on"]["train_category"] == "python"


def test_language_and_train_language_together_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXPJUDGE_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    get_settings.cache_clear()
    result = runner.invoke(app, ["tune", "--labels", str(FIXTURE), "--out", str(tmp_path / "out"), "--language",
                                 "java", "--train-language", "py", "--no-progress"])
    get_settings.cache_clear()
    assert result.exit_code == 2 and "not both" in result.stderr
