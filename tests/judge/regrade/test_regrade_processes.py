"""`RegradeOptions.processes`: a regrade's misses graded by child processes, recorded as one regrade's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.errors import InputError
from judge.regrade import RegradeOptions, Regrader
from judge.regrade.process_pool import child_options, shares, split_limit
from judge.settings import Settings
from tests.judge.regrade.conftest import (
    SMALL_TASKS,
    Stub,
    expbench_task,
    grade_rows,
    sqlite_url,
    variations,
    write_jsonl,
)


def test_children_share_the_limits_and_the_budget(tmp_path: Path) -> None:
    options = RegradeOptions(paths=[], out_dir=tmp_path, concurrency=5, rpm=100, tpm=7, max_cost=3.0, processes=2)
    first, second = child_options(options, 2, 0), child_options(options, 2, 1)
    assert (first.concurrency, second.concurrency) == (3, 2)  # the in-flight calls of the whole regrade
    assert first.rpm == second.rpm == 50 and first.tpm == second.tpm == 3
    assert first.max_cost == second.max_cost == 1.5
    assert first.processes == second.processes == 1 and first.run_filter is None
    assert split_limit(None, 2) is None and split_limit(1, 4) == 1  # never a limit of 0


def test_runs_are_dealt_round_robin() -> None:
    runs = list(range(7))
    assert shares(runs, 3) == [[0, 3, 6], [1, 4], [2, 5]]


def test_processes_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as raised:
        Regrader(RegradeOptions(paths=[], out_dir=tmp_path, processes=0))
    assert raised.value.field == "--processes"


async def test_two_processes_grade_every_run_once(tmp_path: Path, fresh_stub: Stub) -> None:
    lines = variations(expbench_task(SMALL_TASKS[0]), limit=12)
    runs = write_jsonl(tmp_path / "runs.jsonl", lines)
    db, out = tmp_path / "store.db", tmp_path / "out"
    options = RegradeOptions(paths=[runs], out_dir=out, judge="openai/stub-processes", api_base=fresh_stub.api_base,
                             database_url=sqlite_url(db), concurrency=4, processes=2,
                             settings=Settings(llm_api_key="sk-stub"))
    result = await Regrader(options).run()

    counters = result.counters
    assert counters.graded == len(lines) and counters.failed == 0, [r.error for r in result.records if r.error]
    assert counters.llm_calls + counters.cache_hits > 0  # the children's usage is the regrade's
    assert counters.llm_calls == fresh_stub.stats()["requests"]
    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    expected = sorted(line["submission"]["run_id"] for line in lines)
    assert sorted(g["run_id"] for g in grades) == expected  # written here, once each
    assert sorted(run_id for _key, run_id in grade_rows(db)) == expected  # stored by the children, once each
    assert sorted(r.run_id for r in result.records) == expected

    again = await Regrader(options).run()  # a rerun finds every grade stored
    assert again.counters.done == len(lines) and again.counters.graded == 0
