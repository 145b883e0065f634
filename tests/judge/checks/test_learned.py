"""The learned decision layer: stored models reproduce scikit-learn's probabilities with numpy alone, fail at
rubric load when they do not fit the check, and decide a claim-vs-diff leaf when the rubric carries one."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np
import pytest
import yaml
from pydantic import field_validator
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from calibration.decision_model import export_model
from judge.checks.base import CheckArgs
from judge.checks.claim_vs_diff.check import CLAIM_FEATURE_NAMES, ClaimVsDiff, claim_feature_vector, classify_claim
from judge.checks.claim_vs_diff.payload import ClaimFacts
from judge.checks.learned import LearnedArgs, LearnedModel, is_learnable, learned_decision, validate_model_fits
from judge.errors import RubricError
from judge.judges.embedded import EmbeddedJudge
from judge.models import Submission, Task
from judge.models.evidence import AlignedSnippet, CheckFacts, GradingContext, LeafEvidence
from judge.rubric_loader import load_rubric, parse_rubric
from judge.settings import REPO_ROOT
from tests.judge.checks.toy_check import KeywordInConclusion


def _fitted(n_classes: int, seed: int = 0) -> tuple[CalibratedClassifierCV, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, k = 240, 6
    x = rng.normal(size=(n, k)) * rng.uniform(0.1, 20.0, size=k) + rng.normal(size=k) * 5
    score = (x[:, :2] / x[:, :2].std(axis=0)).sum(axis=1) + rng.normal(scale=0.8, size=n)
    ranks = np.argsort(np.argsort(score))
    y = np.array([f"c{i}" for i in ranks * n_classes // n])  # equal-sized classes, ordered by the score
    groups = np.arange(n) // 3
    splits = list(StratifiedGroupKFold(4).split(x, y, groups))
    estimator = CalibratedClassifierCV(make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000)),
                                       method="sigmoid", cv=splits, ensemble=False).fit(x, y)
    fresh = rng.normal(size=(500, k)) * 30  # far outside the training range too
    return estimator, x, np.vstack([x, fresh])


@pytest.mark.parametrize("n_classes", [2, 3, 4])
def test_stored_model_reproduces_sklearn_probabilities_after_a_yaml_round_trip(n_classes: int) -> None:
    estimator, _, probe = _fitted(n_classes)
    model = export_model(estimator, [f"f{i}" for i in range(probe.shape[1])], [1.0] * n_classes, {"items": 240})
    text = yaml.safe_dump(json.loads(model.model_dump_json()))
    stored = LearnedModel.model_validate(yaml.safe_load(text))
    assert stored == model  # floats survive YAML exactly
    expected = estimator.predict_proba(probe)
    got = stored.probabilities(probe)
    assert np.max(np.abs(got - expected)) < 1e-12
    assert (stored.choose(got) == expected.argmax(axis=1)).all()
    assert list(stored.classes) == [str(c) for c in estimator.classes_]


def test_decision_weights_change_the_label_not_the_probabilities() -> None:
    estimator, x, _ = _fitted(3)
    plain = export_model(estimator, [f"f{i}" for i in range(x.shape[1])], [1.0, 1.0, 1.0], {})
    heavy = plain.model_copy(update={"decision_weights": [1.0, 1.0, 50.0]})
    assert np.array_equal(plain.probabilities(x), heavy.probabilities(x))
    assert (heavy.choose(heavy.probabilities(x)) == 2).sum() > (plain.choose(plain.probabilities(x)) == 2).sum()


def _model_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "feature_names": ["similarity_best", "cut_off"], "classes": ["correct", "incomplete", "unverifiable"],
        "mean": [0.3, 0.2], "scale": [0.1, 0.3], "coef": [[2.0, -3.0], [-1.0, 4.0], [-1.0, -1.0]],
        "intercept": [1.0, -1.0, 0.0], "calibration": [{"a": -1.0, "b": 0.0}] * 3, "decision_weights": [1.0, 1.0, 1.0],
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(("changes", "message"), [
    ({"coef": [[1.0, 2.0]]}, "coef needs 3 row"),
    ({"scale": [0.1, 0.0]}, "scale values must be positive"),
    ({"decision_weights": [1.0, 1.0]}, "decision_weights needs 3"),
    ({"feature_names": ["cut_off", "cut_off"]}, "repeat a name"),
])
def test_a_malformed_model_is_rejected(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LearnedModel.model_validate(_model_data(**changes))


def _rubric_with_model(model: dict[str, Any]) -> dict[str, Any]:
    data = yaml.safe_load((REPO_ROOT / "rubrics" / "crscore-claims-v1.yaml").read_text())
    data["stages"][0]["leaves"][0]["check"]["args"]["model"] = model
    return dict(data)


@pytest.mark.parametrize(("changes", "message"), [
    ({"feature_names": ["similarity_best", "how_sure_i_feel"]}, "features this check does not compute: how_sure"),
    ({"classes": ["correct", "incomplete", "maybe"]}, "labels this check does not know: maybe"),
])
def test_a_model_that_does_not_fit_the_check_fails_at_rubric_load(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(RubricError, match=message) as raised:
        parse_rubric(_rubric_with_model(_model_data(**changes)), "tuned.yaml")
    assert "check.args.model" in str(raised.value)


def _evidence(rubric_data: dict[str, Any] | None, claim: str, facts: ClaimFacts,
              similarity: float) -> tuple[LeafEvidence, GradingContext]:
    rubric = parse_rubric(rubric_data, "x.yaml") if rubric_data else load_rubric("crscore-claims-v1")
    leaf = rubric.stages[0].leaves[0]
    from judge.rubric_loader import expand_rubric

    [expanded] = expand_rubric(rubric, Task(task_id="t"))
    expanded = expanded.model_copy(update={"target": claim})
    snippet = AlignedSnippet(source="diff", text="+x = 1", location="a.py", similarity=similarity)
    evidence = LeafEvidence(leaf=expanded, snippets=[snippet], facts=facts)
    context = GradingContext(task=Task(task_id="t"), submission=Submission(submission_id="s", diff="+x = 1"),
                             rubric=rubric, source_texts={"diff": "+x = 1"})
    assert leaf.check.name == "claim_vs_diff"
    return evidence, context


def _facts(cut_off: float) -> ClaimFacts:
    signals = {name: 0.0 for name in CLAIM_FEATURE_NAMES if name in _signal_names()}
    return ClaimFacts(cut_off=cut_off, hedges=[], identifiers={}, absent_share=None, verbs=[], diff_shows=[],
                      conflicts=[], numbers="claim_has_no_numbers", number_details=[], hunks=1, signals=signals)


def _signal_names() -> set[str]:
    from judge.checks.claim_vs_diff.evidence import signal_names

    return set(signal_names())


def test_the_stored_model_decides_and_its_probability_is_the_confidence() -> None:
    model = _model_data()
    evidence, context = _evidence(_rubric_with_model(model), "x is set", _facts(cut_off=0.0), similarity=0.6)
    result = EmbeddedJudge().decide(evidence, context)
    stored = LearnedModel.model_validate(model)
    proba = stored.probabilities(stored.matrix([claim_feature_vector(evidence)]))[0]
    chosen = int(np.argmax(proba))
    assert f"label:{stored.classes[chosen]}" in result.flags
    assert result.confidence == pytest.approx(round(float(proba[chosen]), 4))
    assert "learned model" in (result.rationale or "")

    cut, _ = _evidence(_rubric_with_model(model), "x is set to the", _facts(cut_off=1.0), similarity=0.6)
    assert "label:incomplete" in EmbeddedJudge().decide(cut, context).flags


def test_without_a_model_the_hand_set_rules_decide() -> None:
    evidence, context = _evidence(None, "x is set", _facts(cut_off=0.0), similarity=0.6)
    check = ClaimVsDiff()
    assert learned_decision(check, evidence, check.args(evidence.leaf).model) is None
    rules = classify_claim(ClaimFacts.of(evidence.facts), 0.6, check.args(evidence.leaf))
    result = EmbeddedJudge().decide(evidence, context)
    assert f"label:{rules.label}" in result.flags and result.confidence == rules.confidence


def test_learnable_checks_are_those_that_declare_features_and_a_model_argument() -> None:
    assert is_learnable(ClaimVsDiff())
    assert not is_learnable(KeywordInConclusion())
    vector = claim_feature_vector(_evidence(None, "x", _facts(0.0), 0.5)[0])
    assert tuple(vector) == CLAIM_FEATURE_NAMES


class _LengthArgs(LearnedArgs):
    @field_validator("model")
    @classmethod
    def _fits(cls, model: LearnedModel | None) -> LearnedModel | None:
        validate_model_fits(model, _LengthCheck.feature_names, ("pass", "fail"))
        return model


class _LengthCheck(KeywordInConclusion):
    """A toy check that opts in to a learned decision the documented way (feature names, vector, Args)."""

    name = "conclusion_length"
    Args: ClassVar[type[CheckArgs]] = _LengthArgs
    feature_names: ClassVar[tuple[str, ...]] = ("sentences", "keyword_hits")

    def feature_vector(self, evidence: LeafEvidence) -> dict[str, float]:
        return {"sentences": float(_SentenceCount.of(evidence.facts).sentences),
                "keyword_hits": float(len(evidence.snippets))}


class _SentenceCount(CheckFacts):
    sentences: int


def test_any_check_that_declares_features_can_be_trained_and_decided_by_its_model() -> None:
    from calibration.decision_model import train_check_model

    check = _LengthCheck()
    assert is_learnable(check)
    from judge.rubric_loader import expand_rubric

    [leaf] = expand_rubric(load_rubric("crscore-claims-v1"), Task(task_id="t"))
    rng = np.random.default_rng(0)
    evidence, labels, groups = [], [], []
    for i in range(120):
        hits = int(rng.integers(0, 4))
        snippets = [AlignedSnippet(source="conclusion", text="s", similarity=1.0)] * hits
        facts = _SentenceCount(sentences=int(rng.integers(1, 9)))
        evidence.append(LeafEvidence(leaf=leaf, snippets=snippets, facts=facts))
        labels.append("pass" if hits + rng.normal(scale=0.5) > 1.5 else "fail")
        groups.append(f"task{i // 2}")
    trained = train_check_model(check, evidence, labels, groups, objective="kappa")
    model = LearnedModel.model_validate(json.loads(trained.model.model_dump_json()))
    assert _LengthArgs.model_validate({"model": model.model_dump()}).model is not None
    strong = LeafEvidence(leaf=leaf, snippets=[AlignedSnippet(source="conclusion", text="s", similarity=1.0)] * 3,
                          facts=_SentenceCount(sentences=4))
    weak = strong.model_copy(update={"snippets": []})
    assert learned_decision(check, strong, model).label == "pass"  # type: ignore[union-attr]
    assert learned_decision(check, weak, model).label == "fail"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="labels this check does not know"):
        _LengthArgs.model_validate({"model": model.model_copy(update={"classes": ["fail", "maybe"]}).model_dump()})
