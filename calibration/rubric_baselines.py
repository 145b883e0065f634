"""What the rubric alone predicts: baselines that read only each leaf's category, beside the judge.

On PaperBench JudgeEval trees every leaf has a category (Code Development, Code Execution, Result Analysis), and
the humans pass some categories far more often than others, so a rule that never looks at the submission can
score well: "pass every Code Development leaf, fail every other" reaches a macro-F1 a judge must beat before
its own figure means anything. Beside the judge (JudgeEval's 0/1 per leaf, an undecided leaf counting as 0),
on every leaf with a human score:

- **single-category rules**: for each category c, "pass every leaf of c, fail every other"; the best by
  macro-F1 (then kappa) is shown. Chosen on the very leaves it is scored on: an optimistic baseline.
- **per-category majority**: every leaf gets its category's majority human score (a tie counts as 0), fitted
  on the same leaves.
- **AUC within each submission**: how well the judge's probability of pass (its confidence for a pass, one
  minus it for a fail or partial, 0 for an undecided leaf) ranks one submission's leaves against the human
  scores, beside the rubric alone (each leaf scored by its category's human pass rate; within one category
  the rubric cannot rank at all, so the judge's AUC per category of each submission is also given). The mean
  over submissions is the pooled figure.

Intervals follow `calibration.intervals`: pooled figures resample submissions, a submission's AUC resamples its
leaves, each with at least `min_units` units. The judge beats a baseline when the paired difference (judge
minus baseline, on the same resamples) has its interval above 0 (`calibration.baselines.beats_by`); each
baseline it does not beat gives a warning in words.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from calibration.agreement_models import Estimate
from calibration.baselines import ConfusionScorer, beats_by
from calibration.bootstrap import IntArray, bootstrap_statistics, percentile_interval
from calibration.intervals import IntervalRule, Intervals, interval_rule
from calibration.labels import Label
from calibration.rubric_baseline_models import (
    CategoryAUC,
    CategoryRate,
    RubricBaselines,
    RubricRule,
    RubricRuleKind,
    RubricVerdict,
    SubmissionAUC,
)

Figures = dict[str, float | None]
FIGURES = ("macro_f1", "cohen_kappa", "accuracy")


def auc(truth: np.ndarray, score: np.ndarray) -> float | None:
    """ROC AUC of `score` for 0/1 `truth` (ties count half, as sklearn's `roc_auc_score`); None when one class
    is absent."""
    positives = int(truth.sum())
    negatives = len(truth) - positives
    if positives == 0 or negatives == 0:
        return None
    ranks = rankdata(score)
    return float((ranks[truth == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def pass_probability(predicted: Label | None, confidence: float | None) -> float:
    """The judge's probability that a leaf passes: its confidence for a pass, one minus it otherwise, 0 for an
    undecided leaf (which JudgeEval counts as not met)."""
    if predicted is None:
        return 0.0
    shown = 0.5 if confidence is None else float(confidence)
    return shown if predicted == 1 else 1.0 - shown


def _names(categories: Sequence[str]) -> str:
    return " and ".join(categories) if len(categories) < 3 else ", ".join(categories[:-1]) + " and " + categories[-1]


def _describe(passes: Sequence[str], every: Sequence[str]) -> str:
    fails = [c for c in every if c not in passes]
    if not passes:
        return "fail every leaf"
    if not fails:
        return "pass every leaf"
    return f"pass every {_names(passes)} leaf, fail every {_names(fails)} leaf"


class _Data:
    """The scored leaves as arrays: human 0/1, the judge's 0/1 and probability, category and submission codes."""

    def __init__(self, truth: list[int], judged: list[int], probability: list[float], categories: list[str],
                 submissions: list[str]) -> None:
        self.truth = np.asarray(truth, dtype=np.int64)
        self.judged = np.asarray(judged, dtype=np.int64)
        self.probability = np.asarray(probability, dtype=float)
        self.names = sorted(set(categories))
        self.category = np.asarray([self.names.index(c) for c in categories], dtype=np.int64)
        self.submissions = submissions
        self.rates = [CategoryRate(category=name, leaves=int((self.category == i).sum()),
                                   human_passes=int(self.truth[self.category == i].sum()),
                                   majority=int(2 * self.truth[self.category == i].sum() > (self.category == i).sum()))
                      for i, name in enumerate(self.names)]
        self.rate = np.asarray([r.human_passes / r.leaves for r in self.rates])[self.category]


def _predictors(data: _Data) -> dict[str, tuple[RubricRuleKind, str, list[str], IntArray]]:
    """key -> (kind, short name, categories passed, 0/1 per leaf): the judge and every rubric-only rule."""
    out: dict[str, tuple[RubricRuleKind, str, list[str], IntArray]] = {
        "judge": ("judge", "judge", [], data.judged)}
    for i, name in enumerate(data.names):
        out[f"category:{name}"] = ("category_rule", f"pass iff {name}", [name], (data.category == i).astype(np.int64))
    majority = [r.category for r in data.rates if r.majority]
    out["majority"] = ("category_majority", "per-category majority", majority,
                       np.asarray([data.rates[c].majority for c in data.category], dtype=np.int64))
    return out


def _pooled(data: _Data, rule: IntervalRule, seed: int) -> dict[str, RubricRule]:
    predictors = _predictors(data)
    score = ConfusionScorer(2, False, "union", [0, 1])

    def statistics(rows: IntArray) -> Figures:
        figs = {key: score(data.truth[rows], pred[rows]) for key, (_, _, _, pred) in predictors.items()}
        out: Figures = {f"{key}|{fig}": figs[key][fig] for key in figs for fig in FIGURES}
        for key in figs:
            for fig in ("macro_f1", "cohen_kappa"):
                mine, theirs = figs["judge"][fig], figs[key][fig]
                out[f"{key}|diff|{fig}"] = None if mine is None or theirs is None else mine - theirs
        return out

    point = statistics(np.arange(len(data.truth), dtype=np.int64))
    cis = bootstrap_statistics(statistics, data.submissions, rule.resamples, seed, rule.ci_level)
    rows: dict[str, RubricRule] = {}
    for key, (kind, name, passes, _) in predictors.items():
        def est(fig: str, key: str = key) -> Estimate:
            return rule.estimate(point[f"{key}|{fig}"], cis, f"{key}|{fig}")

        rows[key] = RubricRule(
            kind=kind, name=name, passes=passes,
            description="the judge's verdicts" if kind == "judge" else _describe(passes, data.names),
            macro_f1=est("macro_f1"), cohen_kappa=est("cohen_kappa"), accuracy=est("accuracy"),
            judge_minus_macro_f1=None if kind == "judge" else est("diff|macro_f1"),
            judge_minus_kappa=None if kind == "judge" else est("diff|cohen_kappa"))
    return rows


def auc_rows(truth: np.ndarray, score: np.ndarray) -> np.ndarray:
    """`auc` of every row of (resamples x leaves) matrices at once; NaN where a row has one class only."""
    positives = truth.sum(axis=1).astype(float)
    negatives = truth.shape[1] - positives
    ranked = (rankdata(score, axis=1) * truth).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (ranked - positives * (positives + 1) / 2) / (positives * negatives)
    out[(positives == 0) | (negatives == 0)] = np.nan
    return np.asarray(out, dtype=float)


def _leaf_auc(truth: np.ndarray, scores: dict[str, np.ndarray], n_resamples: int, seed: int,
              min_units: int | None, ci_level: float) -> tuple[dict[str, Estimate], str]:
    """AUC of each score on one submission's leaves, intervals over its leaves (every resample of the leaves
    drawn at once: a submission's AUC is resampled for each score and category, thousands of times a run)."""
    rule = interval_rule(range(len(truth)), "leaves", n_resamples, min_units=min_units, ci_level=ci_level)
    drawn = np.random.default_rng(seed).integers(0, len(truth), size=(rule.resamples, len(truth)))
    out = {}
    for name, score in scores.items():
        values = auc_rows(truth[drawn], score[drawn]) if rule.resamples else np.empty(0)
        kept = values[np.isfinite(values)]
        cis: Intervals = {name: (percentile_interval(kept.tolist(), ci_level), int(kept.size))}
        out[name] = rule.estimate(auc(truth, score), cis, name, "undefined: the humans score every leaf here the same")
    return out, rule.describe()


def _submission_aucs(data: _Data, n_resamples: int, seed: int, min_units: int | None,
                     ci_level: float) -> list[SubmissionAUC]:
    out = []
    for submission in dict.fromkeys(data.submissions):
        rows = np.flatnonzero(np.asarray([s == submission for s in data.submissions]))
        truth = data.truth[rows]
        overall, intervals = _leaf_auc(truth, {"judge": data.probability[rows], "rubric": data.rate[rows]},
                                       n_resamples, seed, min_units, ci_level)
        per_category = []
        for i, name in enumerate(data.names):
            inside = rows[data.category[rows] == i]
            if inside.size:
                found, _ = _leaf_auc(data.truth[inside], {"judge": data.probability[inside]}, n_resamples, seed,
                                     min_units, ci_level)
                per_category.append(CategoryAUC(category=name, auc=found["judge"]))
        out.append(SubmissionAUC(submission=submission, leaves=int(rows.size), human_passes=int(truth.sum()),
                                 judge=overall["judge"], rubric=overall["rubric"], categories=per_category,
                                 intervals=intervals))
    return out


def _mean_aucs(aucs: list[SubmissionAUC], rule: IntervalRule, seed: int) -> dict[str, Estimate]:
    """Mean over submissions of the judge's and the rubric's AUC and their difference, intervals over
    submissions (a submission whose AUC is undefined is left out)."""
    judge = np.asarray([np.nan if a.judge.value is None else a.judge.value for a in aucs])
    rubric = np.asarray([np.nan if a.rubric.value is None else a.rubric.value for a in aucs])

    def mean(values: np.ndarray) -> float | None:
        kept = values[np.isfinite(values)]
        return float(kept.mean()) if kept.size else None

    def statistics(rows: IntArray) -> Figures:
        return {"judge": mean(judge[rows]), "rubric": mean(rubric[rows]), "diff": mean(judge[rows] - rubric[rows])}

    point = statistics(np.arange(len(aucs), dtype=np.int64))
    units = [a.submission for a in aucs]
    cis = bootstrap_statistics(statistics, units, rule.resamples, seed, rule.ci_level)
    why = "undefined: in no submission do the humans pass some leaves and fail others"
    return {name: rule.estimate(point[name], cis, name, why) for name in ("judge", "rubric", "diff")}


def _rank(rule: RubricRule) -> tuple[float, float]:
    """The best single-category rule: by macro-F1, then kappa."""
    kappa = rule.cohen_kappa.value
    return float(rule.macro_f1.value or 0.0), -np.inf if kappa is None else float(kappa)


def _verdict(judge: RubricRule, rule: RubricRule) -> RubricVerdict | None:
    diff = rule.judge_minus_macro_f1
    if diff is None or diff.value is None:
        return None
    beats, why = beats_by(diff)
    chosen = "; chosen on these same leaves" if rule.kind == "category_rule" else "; fitted on these same leaves"
    how = "beats" if beats else "does not beat"
    text = (f"the judge's macro-F1 {judge.macro_f1.format(brief=True)} {how} the rubric alone: the {rule.name} "
            f"rule's {rule.macro_f1.format(brief=True)} ({rule.description}; it reads only each leaf's "
            f"category{chosen}): judge minus rule {diff.format(brief=True)}{why}")
    return RubricVerdict(figure="macro_f1", baseline=rule.name, beats=beats, text=text)


def _auc_verdict(means: dict[str, Estimate], submissions: int) -> RubricVerdict | None:
    diff = means["diff"]
    if diff.value is None:
        return None
    beats, why = beats_by(diff)
    how = "beats" if beats else "does not beat"
    plural = "" if submissions == 1 else "s"
    text = (f"the judge's AUC within a submission (mean over {submissions} submission{plural}) "
            f"{means['judge'].format(brief=True)} {how} the rubric alone's {means['rubric'].format(brief=True)} "
            f"(each leaf scored by its category's human pass rate): judge minus rubric {diff.format(brief=True)}{why}")
    return RubricVerdict(figure="auc", baseline="category pass rate", beats=beats, text=text)


def rubric_only_baselines(
    reference: Sequence[Label | None],
    predicted: Sequence[Label | None],
    confidence: Sequence[float | None],
    categories: Sequence[str],
    groups: Sequence[str],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    unit: str = "submissions",
    min_units: int | None = None,
) -> RubricBaselines | None:
    """The judge beside what the rubric alone predicts (see the module docstring), on leaves scored 0/1.

    Args:
        reference: The human 0/1 per leaf (None: no score; left out).
        predicted: The judge's 0/1 per leaf (None: undecided; counts as 0, as JudgeEval counts it).
        confidence: The judge's confidence in its verdict per leaf (None: unknown, taken as 0.5).
        categories: Each leaf's category (its task_category).
        groups: Each leaf's submission.
        n_resamples, seed, ci_level: As for `agreement_report`.
        unit: What a group is, plural, as reports name it.
        min_units: Units an interval needs (`calibration.intervals`); default the setting.

    Returns:
        The comparison, or None when no leaf has a 0/1 human score.
    """
    keep = [i for i, ref in enumerate(reference) if ref in (0, 1) and not isinstance(ref, bool)]
    if not keep:
        return None
    data = _Data([int(reference[i]) for i in keep], [1 if predicted[i] == 1 else 0 for i in keep],  # type: ignore[arg-type]
                 [pass_probability(predicted[i], confidence[i]) for i in keep], [categories[i] for i in keep],
                 [groups[i] for i in keep])
    rule = interval_rule(data.submissions, unit, n_resamples, min_units=min_units, ci_level=ci_level)
    rows = _pooled(data, rule, seed)
    rules = [rows[f"category:{name}"] for name in data.names]
    best = max(rules, key=_rank)
    aucs = _submission_aucs(data, n_resamples, seed, min_units, ci_level)
    means = _mean_aucs(aucs, rule, seed)
    judge, majority = rows["judge"], rows["majority"]
    found = [_verdict(judge, best)]
    if majority.passes != best.passes:  # the same rule twice would warn twice
        found.append(_verdict(judge, majority))
    found.append(_auc_verdict(means, sum(a.judge.value is not None for a in aucs)))
    return RubricBaselines(
        leaves=len(keep), undecided=sum(predicted[i] is None for i in keep), submissions=rule.n_units,
        intervals=rule.describe(), min_leaves=interval_rule([], "leaves", n_resamples, min_units=min_units).min_units,
        categories=data.rates, judge=judge, best_rule=best, majority=majority,
        rules=rules, auc=aucs, mean_auc=means["judge"], mean_rubric_auc=means["rubric"],
        mean_auc_minus_rubric=means["diff"], verdicts=[v for v in found if v is not None])

