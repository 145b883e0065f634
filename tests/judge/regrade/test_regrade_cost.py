"""Cost before work: dry-run token counts (LLM judge > 0, embedded 0, no upstream call) and --max-cost,
which stops before the budget is exceeded and keeps what was graded, so a later regrade finishes the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judge.grading.grader import Grader
from judge.judges.llm import LLMJudge
from judge.judges.token_counts import count_prompt_tokens
from judge.loaders.native import parse_submission
from judge.models import Submission
from judge.regrade import RegradeOptions, Regrader
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

# A model litellm's local price map lists; the stub answers for it (api_base points there).
PRICED_MODEL = "openai/gpt-4o-mini"


def _options(tmp_path: Path, runs: Path, stub: Stub, **changes: object) -> RegradeOptions:
    values: dict[str, object] = {
        "paths": [runs], "out_dir": tmp_path / "out", "judge": PRICED_MODEL, "api_base": stub.api_base,
        "database_url": sqlite_url(tmp_path / "store.db"), "concurrency": 1,
        "settings": Settings(llm_api_key="sk-stub"),
    }
    values.update(changes)
    return RegradeOptions(**values)  # type: ignore[arg-type]


async def test_dry_run_counts_tokens_for_the_llm_judge_and_none_for_embedded(tmp_path: Path, fresh_stub: Stub) -> None:
    lines = variations(expbench_task(SMALL_TASKS[0]), limit=3)
    runs = write_jsonl(tmp_path / "runs.jsonl", lines)

    regrader = Regrader(_options(tmp_path, runs, fresh_stub, dry_run=True))
    result = await regrader.run()
    assert fresh_stub.stats().get("requests", 0) == 0  # counted, not sent
    assert len(result.estimates) == 3 and all(e.status == "to grade" for e in result.estimates)
    assert all(e.prompt_tokens > 0 and e.calls > 0 and e.cost_usd > 0 for e in result.estimates)
    assert result.price is not None and result.price.known
    # The estimate covers at least the messages the judge would send, as render_requests shows them.
    judge = regrader.judge
    assert isinstance(judge, LLMJudge)
    task = expbench_task(SMALL_TASKS[0])
    prepared = await Grader(regrader.rubric, judge).prepare(task, regrader_submission(lines[0]))
    requests = judge.render_requests(prepared.context, prepared.evidence)
    rendered = sum(count_prompt_tokens(PRICED_MODEL, messages) for messages in requests)
    first = next(e for e in result.estimates if e.run_id == lines[0]["submission"]["run_id"])
    assert 0 < rendered <= first.prompt_tokens
    assert (tmp_path / "out" / "estimate.csv").read_text().count("\n") == 4
    assert grade_rows(tmp_path / "store.db") == []  # a dry run stores nothing

    embedded = await Regrader(_options(tmp_path, runs, fresh_stub, dry_run=True, judge="embedded")).run()
    assert len(embedded.estimates) == 3
    assert all(e.prompt_tokens == 0 and e.cost_usd == 0 for e in embedded.estimates)


def regrader_submission(line: dict[str, Any]) -> Submission:
    return parse_submission(line["submission"])


async def test_max_cost_stops_cleanly_and_a_later_regrade_finishes(tmp_path: Path, fresh_stub: Stub) -> None:
    lines = variations(expbench_task(SMALL_TASKS[0]), limit=4)
    estimate = await Regrader(_options(tmp_path, write_jsonl(tmp_path / "plan.jsonl", lines), fresh_stub,
                                       dry_run=True, database_url=sqlite_url(tmp_path / "plan.db"))).run()
    costs = {e.run_id: e.cost_usd for e in estimate.estimates}
    # Runs start in run-id order (one at a time here): rename them so the cheapest starts first.
    ranked = sorted(lines, key=lambda line: costs[line["submission"]["run_id"]])
    for rank, line in enumerate(ranked):
        run_id = f"{rank}-{line['submission']['run_id']}"
        line["submission"] = {**line["submission"], "run_id": run_id, "submission_id": run_id}
    runs = write_jsonl(tmp_path / "runs.jsonl", ranked)
    ordered = [line["submission"]["run_id"] for line in ranked]
    # Room for the cheapest run's estimate; the next one's estimate (no smaller) no longer fits once the
    # first has cost anything at all.
    budget = min(costs.values())

    result = await Regrader(_options(tmp_path, runs, fresh_stub, max_cost=budget)).run()
    assert result.stopped_by_budget
    assert result.counters.graded == 1 and result.counters.not_started == 3 and result.counters.failed == 0
    assert 0 < result.counters.cost_usd <= budget
    assert [run_id for _key, run_id in grade_rows(tmp_path / "store.db")] == [ordered[0]]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped_by_budget"] and summary["not_started"] == 3

    rest = await Regrader(_options(tmp_path, runs, fresh_stub)).run()
    assert rest.counters.done == 1 and rest.counters.graded == 3 and not rest.stopped_by_budget
    assert sorted(run_id for _key, run_id in grade_rows(tmp_path / "store.db")) == ordered
