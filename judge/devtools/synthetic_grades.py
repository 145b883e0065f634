"""Large synthetic grades stored directly (no grading), for the review pages' benchmark and browser tests.

A grade of `n` leaves over three stages: requirement leaves cite lines of their own hunk of a large diff,
design leaves a design item, and failed leaves record what they were compared with (issue 25), so a review
page locates each piece of evidence in its file or text as it would for a real grade. The grade is stored
with the job that "made" it, whose payload holds the submission's diff, as the grading path stores it.
"""

from __future__ import annotations

import json
import uuid

from judge.models import EvidenceQuote, ExpBenchMetrics, Grade, JudgeFingerprint, LeafResult, StageScore
from judge.store import ItemOutcome, Store

STAGES = ("design", "implementation", "conclusion")


def big_diff(n_hunks: int) -> str:
    """A diff of `n_hunks` hunks over 50 files, 8 lines each."""
    out = []
    for file in range(50):
        out += [f"diff --git a/src/mod_{file}.py b/src/mod_{file}.py", f"--- a/src/mod_{file}.py",
                f"+++ b/src/mod_{file}.py"]
        for h in range(file, n_hunks, 50):
            start = 10 + 40 * (h // 50)
            out.append(f"@@ -{start},4 +{start},6 @@ def step_{h}():")
            out += [f"     value_{h} = prepare({h})", f"-    result_{h} = old({h})",
                    f"+    result_{h} = new_method({h}, alpha=0.{h % 9})", f"+    log('step {h}', result_{h})",
                    f"+    check(result_{h})", f"     return result_{h}", "     # end", ""]
    return "\n".join(out) + "\n"


def compared_with(i: int, stage: str, n_leaves: int) -> list[EvidenceQuote]:
    """What failed leaf `i` was compared with: the code unit of the next hunk (by its lines), or a text item."""
    if stage == "implementation":
        h = (i + 1) % n_leaves
        start = 10 + 40 * (h // 50)
        return [EvidenceQuote(source="diff", text=f"result_{h} = new_method({h}, alpha=0.{h % 9})",
                              location=f"src/mod_{h % 50}.py:{start + 1}-{start + 3} (block)", verified=True,
                              similarity=0.31)]
    source = "design" if stage == "design" else "conclusion"
    return [EvidenceQuote(source=source, text=f"Item {i + 1}: a near miss", location=f"{source} item {i + 1}",
                          verified=True, similarity=0.42)]


def big_grade(n_leaves: int, fingerprint: JudgeFingerprint, compared: bool = True) -> Grade:
    """A grade of `n_leaves` leaves; implementation leaves cite lines of hunk i, failed ones record a near miss."""
    leaves = []
    for i in range(n_leaves):
        stage = STAGES[i % 3]
        verdict = ("pass", "fail", "partial")[(i + i // 3) % 3]  # every stage has every verdict
        evidence = []
        if stage == "implementation":
            evidence = [EvidenceQuote(source="diff", text=f"+    result_{i} = new_method({i}, alpha=0.{i % 9})\n"
                                                          f"+    log('step {i}', result_{i})\n+    check(result_{i})",
                                      location=f"src/mod_{i % 50}.py @@ -{10 + 40 * (i // 50)},4 @@", verified=True,
                                      similarity=0.7)]
        elif stage == "design":
            evidence = [EvidenceQuote(source="design", text=f"Variable {i}: learning rate in (0.1, 0.01)",
                                      location=f"design item {i}", verified=True, similarity=0.8)]
        leaves.append(LeafResult(
            leaf_id=f"{stage}.{i}", template_id="requirement" if stage == "implementation" else stage, stage=stage,
            title=f"Leaf {i}", target=f"Ground-truth item {i}: the agent should do thing {i}", verdict=verdict,
            score={"pass": 1.0, "partial": 0.5}.get(verdict, 0.0), rationale=f"closest snippet scores 0.{i % 97:02d}",
            evidence=evidence, confidence=(i * 7919 % 1000) / 1000, votes={verdict: 1}, judge="embedded",
            compared=compared_with(i, stage, n_leaves) if compared and verdict == "fail" else []))
    return Grade(
        task_id=f"9{uuid.uuid4().hex[:4]}:0", submission_id=f"sub-{uuid.uuid4().hex[:8]}", agent="bench",
        task_hash=uuid.uuid4().hex * 2, submission_hash=uuid.uuid4().hex * 2, fingerprint=fingerprint,
        leaves=leaves, stages=[StageScore(stage="implementation", score=50.0, leaves_total=n_leaves,
                                          leaves_scored=n_leaves, leaves_passed=n_leaves // 3)],
        overall_score=50.0, metrics=ExpBenchMetrics(D=50.0, I=50.0, E=None, C=None, design_correct=False,
                                                    implementation_correct=False, all_correct=False,
                                                    all_correct_executed=None, thresholds={}))



async def store_synthetic_grade(store: Store, tenant: str, grade: Grade, diff: str) -> str:
    """Store `grade` as tenant's, with a finished job holding `diff` (the review page shows evidence in it), and
    its review index rows.

    Returns:
        The grade's id.
    """
    job_id = uuid.uuid4().hex
    payload = json.dumps({"rubric": "expbench-v1", "items": [
        {"task": {"task_id": grade.task_id}, "submission": {"submission_id": grade.submission_id,
                                                            "task_id": grade.task_id, "diff": diff}}]})
    await store.jobs.create(tenant=tenant, kind="grade", payload_json=payload, total=1, request_hash=job_id,
                            job_id=job_id)
    await store.grades.save(tenant, f"run-{job_id}", grade, job_id=job_id)
    await store.jobs.record_item(job_id, 0, ItemOutcome(state="done", grade_id=grade.grade_id))
    await store.review.index_new_grades(tenant, [grade])  # as a job does once its grades are stored
    return grade.grade_id
