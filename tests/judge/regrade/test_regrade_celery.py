"""`--workers celery`: the runs go to a Celery worker through the Redis broker at 127.0.0.1:6379 as jobs of the
job system, land once per run key, and a second regrade finds them done without sending anything."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.devtools.local_services import ChildProcess, expjudge_command, offline_env, scratch_redis, wait_until
from judge.regrade import RegradeOptions, Regrader
from tests.conftest import CURIE_RUNS, EXPBENCH_TASKS
from tests.judge.regrade.conftest import grade_rows, sqlite_url

pytestmark = pytest.mark.redis


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis database number nobody uses right now; flushed afterwards."""
    with scratch_redis("expjudge-regrade-test", highest=14) as url:
        yield url


async def test_celery_workers_grade_each_run_once(tmp_path: Path, redis_url: str) -> None:
    db = tmp_path / "store.db"
    env = offline_env(EXPJUDGE_DATABASE_URL=sqlite_url(db), EXPJUDGE_BROKER_URL=redis_url)
    node = f"regrade-{uuid.uuid4().hex[:6]}@test"
    worker = ChildProcess([*expjudge_command(), "worker", "--node", node, "--concurrency", "2"], env,
                          tmp_path / "worker.log")
    try:
        wait_until(lambda: "ready." in worker.output() or not worker.alive(), 180, "the Celery worker")
        assert worker.alive(), worker.output()
        runs = sorted(CURIE_RUNS.glob("*_eval_gen.json"))[5:7]  # two runs with empty patches: few texts to embed
        options = RegradeOptions(paths=runs, out_dir=tmp_path / "out", workers="celery", broker_url=redis_url,
                                 database_url=sqlite_url(db), tasks_dir=EXPBENCH_TASKS)
        result = await Regrader(options).run()
        assert result.counters.graded == 2 and result.counters.failed == 0, result.records
        assert not result.warnings  # the worker graded under this regrade's fingerprint
        rows = grade_rows(db)
        assert sorted(key for key, _ in rows) == sorted(result.run_keys.values())
        assert "Task expjudge.run_job" in worker.output()

        again = await Regrader(options).run()
        assert again.counters.done == 2 and again.counters.graded == 0
        assert len(grade_rows(db)) == 2
        connection = sqlite3.connect(db)
        try:
            jobs = list(connection.execute("SELECT kind, state FROM jobs"))
        finally:
            connection.close()
        assert jobs == [("regrade", "succeeded")] * 2  # one job per run, none made again
    finally:
        worker.stop()
