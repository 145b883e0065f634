"""Roll leaf verdicts up to stage scores, EXP-Bench metrics and error labels."""

from __future__ import annotations

from judge.models import ExpBenchMetrics, Grade, LeafResult, Rubric, StageScore


def stage_scores(rubric: Rubric, results: list[LeafResult]) -> list[StageScore]:
    """Weighted mean of each stage's scored leaves, 0-100; unscored leaves leave the denominator."""
    scores = []
    for spec in rubric.stages:
        leaves = [r for r in results if r.stage == spec.stage]
        scored = [r for r in leaves if r.score is not None]
        weight = sum(r.weight for r in scored)
        value = 100 * sum(r.weight * (r.score or 0.0) for r in scored) / weight if weight else None
        scores.append(StageScore(
            stage=spec.stage, score=None if value is None else round(value, 2), leaves_total=len(leaves),
            leaves_scored=len(scored), leaves_passed=sum(r.verdict == "pass" for r in leaves),
        ))
    return scores


def overall_score(rubric: Rubric, stages: list[StageScore]) -> float | None:
    """Stage-weighted mean over stages that have a score."""
    weights = {s.stage: s.weight for s in rubric.stages}
    present = [(weights[s.stage], s.score) for s in stages if s.score is not None and weights[s.stage] > 0]
    total = sum(w for w, _ in present)
    return round(sum(w * (v or 0.0) for w, v in present) / total, 2) if total else None


def expbench_metrics(
    rubric: Rubric, stages: list[StageScore], integrity_flags: list[str], executed: bool | None
) -> ExpBenchMetrics:
    """EXP-Bench's D, I, E, C and All-checks for one run, with the rubric's thresholds.

    D and I are stage scores (0-100). C is the conclusion stage score at or above its threshold.
    E is whether the run completed (None without an execution record). All-check needs D, I and C
    correct and, under an `integrity_flag_fails_all_correct` gate, no integrity flag; any part
    unscored makes it None (unknown), never False.
    """
    by_stage = {s.stage: s for s in stages}
    t = rubric.thresholds

    def correct(stage: str, threshold: float) -> bool | None:
        score = by_stage[stage].score if stage in by_stage else None
        return None if score is None else score >= threshold

    design_ok = correct("design", t.design_correct_at)
    impl_ok = correct("implementation", t.implementation_correct_at)
    concl_ok = correct("conclusion", t.conclusion_correct_at)
    ran = executed
    parts = [design_ok, impl_ok, concl_ok]
    all_ok: bool | None = None if None in parts else all(parts)
    gates = {g.name for s in rubric.stages for g in s.gates}
    if "integrity_flag_fails_all_correct" in gates and integrity_flags:
        all_ok = False
    all_e = None if all_ok is None or ran is None else all_ok and ran
    if all_ok is False:
        all_e = False
    return ExpBenchMetrics(
        D=by_stage["design"].score if "design" in by_stage else None,
        I=by_stage["implementation"].score if "implementation" in by_stage else None,
        E=ran, C=concl_ok, design_correct=design_ok, implementation_correct=impl_ok,
        all_correct=all_ok, all_correct_executed=all_e,
        thresholds={"design_correct_at": t.design_correct_at,
                    "implementation_correct_at": t.implementation_correct_at,
                    "conclusion_correct_at": t.conclusion_correct_at},
    )


def collect_error_labels(results: list[LeafResult]) -> list[str]:
    """EXP-Bench taxonomy labels of failed or partial leaves, each once, prefixed by stage."""
    labels: dict[str, None] = {}
    for r in results:
        if r.verdict in {"fail", "partial"}:
            for label in r.error_labels:
                labels[f"{r.stage}: {label}"] = None
    return list(labels)


_UNSCORED_BECAUSE = {
    "no_ground_truth": "the task has no ground truth for it",
    "no_submission_field": "the submission lacks what it reads",
    "judge_error": "the judge call failed",
    "invalid_judge_output": "the judge's output never validated",
    "unsupported_evidence": "the judge cited a quote not in the submission",
    "no_majority": "the judge's samples split evenly",
    "not_applicable": "it does not apply",
    "gate": "a gate left it unscored",
}


def no_overall_score_warning(rubric: Rubric, results: list[LeafResult], overall: float | None) -> str | None:
    """Why a grade has no overall score, or None when it has one.

    A null score with no word beside it reads like a bug; a task with no ground truth at all is the common cause
    and is named as such.
    """
    if overall is not None:
        return None
    weighted = {s.stage for s in rubric.stages if s.weight > 0}
    counted = [r for r in results if r.stage in weighted]
    if not counted:
        return "no overall score: the rubric has no leaf in a weighted stage"
    missing_truth = sorted({r.stage for r in counted if r.reason_code == "no_ground_truth"},
                           key=[s.stage for s in rubric.stages].index)
    graded_against_truth = {r.stage for r in counted if r.reason_code != "no_submission_field"}
    if missing_truth and set(missing_truth) >= graded_against_truth:
        return (f"no overall score: the task has no ground truth at all (nothing for {', '.join(missing_truth)}: "
                "no design variables, requirements, expected outcome or artefacts), so no leaf could be graded")
    reasons: dict[str, int] = {}
    for r in counted:
        code = r.reason_code or "other"
        reasons[code] = reasons.get(code, 0) + 1
    said = "; ".join(f"{n} because {_UNSCORED_BECAUSE.get(code, code)}" for code, n in reasons.items())
    return f"no overall score: no leaf of a weighted stage was scored ({said})"


# Reason codes of leaves decided without asking the judge.
_NOT_JUDGED = frozenset({"gate", "no_ground_truth", "no_submission_field", "not_applicable"})


def upstream_down(grade: Grade) -> bool:
    """True when nothing the grade's judge was asked came back: every such leaf is unscored with judge_error.

    Leaves decided without the judge (gates, missing ground truth or submission fields) and leaves
    a deterministic fallback decided (an LLM judge hands exit codes to the embedded checks) say
    nothing about the upstream, so they are left out.
    """
    asked = [
        leaf
        for leaf in grade.leaves
        if leaf.reason_code == "judge_error"
        or (leaf.judge == grade.fingerprint.judge and leaf.reason_code not in _NOT_JUDGED)
    ]
    return bool(asked) and all(leaf.reason_code == "judge_error" for leaf in asked)
