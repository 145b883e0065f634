"""Time the review pages server-side: a 1,000-leaf grade page, and paging the queue over 10,000 leaves.

The service app runs in-process (FastAPI TestClient, so the figures are the server's: routing, store
reads, grade parsing, evidence lookup in the diff, template rendering; no browser, no network). The
store holds 10 synthetic grades of 1,000 leaves each; every requirement leaf cites 3 lines of its own
hunk of a 1,000-hunk diff kept in the job that made the grade, and (unless --no-compared) every
failed leaf records what it was compared with (issue 25): a requirement the code unit of the next hunk, a
design or conclusion leaf a text item, so the page shows each inside its file or text. Targets (issue 16):
the grade page under 1 s; the queue paged over all 10,000 leaves without loading them.

    .venv/bin/python bench/service/review_pages.py [--grades 10] [--leaves 1000] [--repeat 5] [--no-compared]
        [--database-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from functools import partial
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from fastapi.testclient import TestClient  # noqa: E402

from api.app import create_app  # noqa: E402
from judge.grading.grader import fingerprint_for  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.models import EvidenceQuote, ExpBenchMetrics, Grade, LeafResult, StageScore  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.store import ItemOutcome  # noqa: E402
from judge.store.review_records import KeyIdentity  # noqa: E402

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


def big_grade(n_leaves: int, fingerprint: object, compared: bool = True) -> Grade:
    """A grade of `n_leaves` leaves; implementation leaves cite lines of hunk i, failed ones record a near miss."""
    leaves = []
    for i in range(n_leaves):
        stage = STAGES[i % 3]
        verdict = ("pass", "fail", "partial")[i % 3]
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


def timed(fn: object, repeat: int, cpu: list[float] | None = None) -> list[float]:
    """Wall seconds of each of `repeat` calls; the process CPU seconds of each go to `cpu`."""
    out = []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(time.process_time() - start_cpu)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grades", type=int, default=10)
    parser.add_argument("--leaves", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-compared", action="store_true", help="leaves record nothing they were compared with "
                        "(the workload before issue 25)")
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    args = parser.parse_args()
    url = args.database_url or f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='review-bench-')}/store.db"
    fingerprint = fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge())
    diff = big_diff(args.leaves)
    tenant = f"bench-{uuid.uuid4().hex[:6]}"
    settings = Settings(database_url=url, auth_enabled=True)
    with TestClient(create_app(settings)) as client:
        store = client.app.state.service.store  # type: ignore[attr-defined]
        portal = client.portal
        assert portal is not None
        # The app imports the LLM client in a start-up thread (seconds of CPU): let it finish first, or its
        # work is counted in the store's time and the pages' process CPU time (through the GIL).
        for thread in threading.enumerate():
            if thread.name == "llm-client-warm-up":
                thread.join()
        started = time.perf_counter()
        grade_ids = []
        for _ in range(args.grades):
            grade, job_id = big_grade(args.leaves, fingerprint, not args.no_compared), uuid.uuid4().hex
            payload = json.dumps({"rubric": "expbench-v1", "items": [
                {"task": {"task_id": grade.task_id}, "submission": {"submission_id": grade.submission_id,
                                                                    "task_id": grade.task_id, "diff": diff}}]})
            portal.call(partial(store.jobs.create, tenant=tenant, kind="grade", payload_json=payload, total=1,
                                request_hash=job_id, job_id=job_id))
            portal.call(partial(store.grades.save, tenant, f"run-{job_id}", grade, job_id=job_id))
            portal.call(partial(store.jobs.record_item, job_id, 0,
                                ItemOutcome(state="done", grade_id=grade.grade_id)))
            grade_ids.append(grade.grade_id)
        stored = time.perf_counter() - started
        _record, secret = portal.call(partial(store.api_keys.create, tenant, "ann", "reviewer"))
        client.get("/review/login")
        token = client.cookies.get("ej_login")
        client.post("/review/login", data={"api_key": secret, "login_token": token}, follow_redirects=False)

        grade_url = f"/review/grades/{grade_ids[0]}"
        first = client.get(grade_url)
        assert first.status_code == 200 and first.text.count('<section class="leaf') == args.leaves
        assert first.text.count(' hit">') >= args.leaves // 3 * 3  # every requirement's quoted lines found
        warm_cpu: list[float] = []
        cold_cpu: list[float] = []
        warm = timed(lambda: client.get(grade_url).raise_for_status(), args.repeat, warm_cpu)
        cold_grades = [f"/review/grades/{gid}" for gid in grade_ids[1:args.repeat + 1]]
        cold = [t for u in cold_grades for t in timed(lambda u=u: client.get(u).raise_for_status(), 1, cold_cpu)]

        who = KeyIdentity(tenant=tenant, role="reviewer", key_id="bench", rater_id="ann")
        pages, seen, cursor, sql = 0, 0, None, []
        while True:
            start = time.perf_counter()
            page = portal.call(partial(store.review.queue, who, limit=20, cursor=cursor, count=False))
            sql.append(time.perf_counter() - start)
            pages, seen, cursor = pages + 1, seen + len(page.items), page.next_cursor
            if cursor is None:
                break
        http, http_cpu, url_next = [], [], "/review/queue"
        for _ in range(min(50, pages)):
            start, start_cpu = time.perf_counter(), time.process_time()
            response = client.get(url_next)
            http.append(time.perf_counter() - start)
            http_cpu.append(time.process_time() - start_cpu)
            marker = response.text.find('rel="next"')
            if marker < 0:
                break
            url_next = response.text[response.text.rfind('href="', 0, marker) + 6:response.text.rfind('"', 0, marker)]
            url_next = url_next.replace("&amp;", "&")

    def ms(xs: list[float]) -> str:
        return f"median {statistics.median(xs) * 1000:.0f} ms, max {max(xs) * 1000:.0f} ms"

    def cpu(xs: list[float]) -> str:
        return f"CPU median {statistics.median(xs) * 1000:.0f} ms"

    load = os.getloadavg()[0]
    print(f"store: {store.dialect}, {args.grades} grades x {args.leaves} leaves stored in {stored:.1f} s; "
          f"load average {load:.1f} on {os.cpu_count()} cores (wall times include waiting for a core)")
    print(f"grade page, {args.leaves} leaves ({len(first.text) / 1e6:.1f} MB of HTML), server-side:")
    print(f"  same grade again (parsed diff cached): wall {ms(warm)}, {cpu(warm_cpu)} over {len(warm)}")
    print(f"  first view of a grade (diff read from its job and indexed): wall {ms(cold)}, {cpu(cold_cpu)} "
          f"over {len(cold)}   target < 1 s")
    print(f"queue over {seen} leaves: {pages} keyset pages of 20 in SQL, wall {ms(sql)} per page")
    print(f"queue page over HTTP (20 leaves with evidence, rendered): wall {ms(http)}, {cpu(http_cpu)} "
          f"over the first {len(http)} pages")
    print(f"command: .venv/bin/python bench/service/review_pages.py --grades {args.grades} --leaves {args.leaves} "
          f"--repeat {args.repeat}" + (" --no-compared" if args.no_compared else "")
          + (f" --database-url {args.database_url}" if args.database_url else ""))


if __name__ == "__main__":
    main()
