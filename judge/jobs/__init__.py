"""Jobs: one job function (`run_job`), run by an in-process pool or by Celery workers."""

from judge.grading.scoring import upstream_down
from judge.jobs.dispatch import CeleryDispatcher, Dispatcher, InProcessPool, make_dispatcher
from judge.jobs.payload import GradeItem, JobPayload, JudgeSelection
from judge.jobs.runner import JobRun, run_claimed, run_job, runner_id
from judge.jobs.runtime import GradingRuntime, ItemResult, run_key
from judge.jobs.submit import IdempotencyKeyReusedError, JobBusyError, SyncGrade, create_job, grade_now

__all__ = [
    "CeleryDispatcher",
    "Dispatcher",
    "GradeItem",
    "GradingRuntime",
    "IdempotencyKeyReusedError",
    "InProcessPool",
    "ItemResult",
    "JobBusyError",
    "JobPayload",
    "JobRun",
    "JudgeSelection",
    "SyncGrade",
    "create_job",
    "grade_now",
    "make_dispatcher",
    "run_claimed",
    "run_job",
    "run_key",
    "runner_id",
    "upstream_down",
]
