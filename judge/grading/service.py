"""One way to grade, for every caller: the API's jobs, regrade, and `expjudge grade`.

A grade is looked up in the content-addressed grade cache (submission hash + task hash + judge
fingerprint) and the fingerprint's calibration status is read in the same store round trip; a hit is
copied once, here, with this request's ids, time and cost; a miss is graded with that calibration
status. The fingerprint is computed once, when the service is built for a rubric and a judge.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from judge.embeddings.encoder import Embedder
from judge.grading.grader import Grader, reference_use
from judge.grading.prepared import ContentHashes, PreparedGrade
from judge.judges.base import Judge
from judge.models import CalibrationStatus, Grade, JudgeFingerprint, Rubric, Submission, Task, Usage
from judge.store import Store
from judge.store.calibrations import calibration_status_on
from judge.store.clock import utcnow
from judge.store.grades import cached_grade_on

# A grade holding these came from a failing judge: it is kept, but never served again from the cache.
TRANSIENT_REASONS = frozenset({"judge_error", "invalid_judge_output"})


def cacheable(grade: Grade) -> bool:
    """True when no leaf failed for a transient reason (a retry could grade it differently)."""
    return not any(leaf.reason_code in TRANSIENT_REASONS for leaf in grade.leaves)


_NOTHING_SPENT: dict[str, Any] = Usage().model_dump(mode="json")


def cache_hit_fields(hit_usage: Usage | dict[str, Any], *, submission_id: str, agent: str | None,
                     run_id: str | None, calibration: CalibrationStatus | dict[str, Any],
                     task_id: str | None = None) -> dict[str, Any]:
    """What a cached grade takes from the request that reuses it (JSON values; the one rule for every caller).

    Same content and same judge, so the verdicts carry over; the ids, the agent and run (the cached
    grade's agent is another run's), the time, the calibration status and the cost (nothing spent:
    every call it saved is a cache hit) are this request's. `task_id` None keeps the cached one.
    `calibration` may be given as its JSON object already (a caller reusing many grades dumps it once).
    """
    usage = hit_usage.model_dump() if isinstance(hit_usage, Usage) else hit_usage
    saved_calls = int(usage.get("llm_calls", 0)) + int(usage.get("cache_hits", 0))
    fields: dict[str, Any] = {
        "grade_id": uuid.uuid4().hex,
        "submission_id": submission_id,
        "agent": agent,
        "run_id": run_id,
        "calibration": calibration.model_dump(mode="json") if isinstance(calibration, CalibrationStatus)
        else calibration,
        "usage": {**_NOTHING_SPENT, "cache_hits": saved_calls},
        "created_at": utcnow().isoformat(),
    }
    if task_id is not None:
        fields["task_id"] = task_id
    return fields


def cache_hit_copy(hit: Grade, task: Task, submission: Submission, calibration: CalibrationStatus) -> Grade:
    """A cached grade as this request's grade (see `cache_hit_fields`)."""
    fields = cache_hit_fields(hit.usage, submission_id=submission.submission_id, agent=submission.agent,
                              run_id=submission.run_id, calibration=calibration, task_id=task.task_id)
    if hit.reference is None:  # cached before grades stated their reference: the task (same hash) says it
        fields["reference"] = reference_use(task).model_dump(mode="json")
    return Grade.model_validate({**hit.model_dump(mode="json"), **fields})


@dataclass
class ServedGrade:
    """A grade and whether it came from the grade cache."""

    grade: Grade
    from_cache: bool


class GradingService:
    """Grades under one rubric with one judge, with the store's caches when there is a store.

    Args:
        rubric: The rubric.
        judge: The judge (build it with `build_judge(..., cache=store.response_cache())` so LLM answers
            are cached too).
        store: Where the grade cache and calibration runs live; None grades without either.
        tenant: Whose calibration runs are visible (None: shared runs only).
        embedder: Embeddings for alignment (default: the shared offline model).
    """

    def __init__(self, rubric: Rubric, judge: Judge, *, store: Store | None = None, tenant: str | None = None,
                 embedder: Embedder | None = None) -> None:
        self.grader = Grader(rubric, judge, embedder=embedder)
        self.digest = self.grader.fingerprint.digest  # the fingerprint is fixed once built: hashed once, not per grade
        self.store = store
        self.tenant = tenant

    @property
    def fingerprint(self) -> JudgeFingerprint:
        """The judge fingerprint of every grade this service makes."""
        return self.grader.fingerprint

    async def look_up(self, task: Task, submission: Submission, *, refresh: bool = False,
                      hashes: ContentHashes | None = None) -> tuple[CalibrationStatus, Grade | None]:
        """The fingerprint's calibration status and a cached grade of the same content (None on a miss,
        with `refresh`, or without a store), in one store round trip; `hashes`: the content hashes, when
        the caller computed them already."""
        if self.store is None:
            return CalibrationStatus(calibrated=False), None
        digest = self.digest
        hashes = hashes or ContentHashes.of(task, submission)
        keys = (hashes.submission, hashes.task, digest)

        def read(connection: Connection) -> tuple[CalibrationStatus, Grade | None]:
            cached = None if refresh else cached_grade_on(connection, *keys)
            return calibration_status_on(connection, digest, self.tenant), cached

        return await self.store.run_read(read, point=True)

    async def grade(self, task: Task, submission: Submission, *, refresh: bool = False) -> ServedGrade:
        """The grade of `submission` against `task`: from the cache when the same content was graded by the
        same judge, else graded now (not written anywhere: the caller stores it, see `remember`).

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed (bad input, not a grade).
        """
        hashes = ContentHashes.of(task, submission)  # once: the look-up and the grade both key on them
        calibration, hit = await self.look_up(task, submission, refresh=refresh, hashes=hashes)
        if hit is not None:
            return ServedGrade(cache_hit_copy(hit, task, submission, calibration), from_cache=True)
        return await self.grade_miss(task, submission, calibration, hashes=hashes)

    async def grade_miss(self, task: Task, submission: Submission, calibration: CalibrationStatus, *,
                         hashes: ContentHashes | None = None) -> ServedGrade:
        """Grade now, without a cache look-up: for a caller that looked the content up already (regrade
        looks up its runs in bulk) and read the fingerprint's calibration status.

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed (bad input, not a grade).
        """
        grade = await self.grader.grade(task, submission, calibration=calibration, hashes=hashes)
        return ServedGrade(grade, from_cache=False)

    async def prepare(self, task: Task, submission: Submission) -> PreparedGrade:
        """A grade up to the judge call (dry runs and cost estimates; see `Grader.prepare`).

        Raises:
            MalformedDiffError: when the submission's diff cannot be parsed (bad input, not a grade).
        """
        return await self.grader.prepare(task, submission)

    async def remember(self, served: ServedGrade, *, replace: bool = False) -> bool:
        """Put a freshly made, cacheable grade in the grade cache; True when it was put there."""
        if self.store is None or served.from_cache or not cacheable(served.grade):
            return False
        await self.store.grades.put_cached(served.grade, replace=replace)
        return True
