"""Time the review pages: a 5,000-leaf grade's first page (server-side and in Chromium), and the queue.

The service app runs in-process (FastAPI TestClient, so the figures are the server's: routing, store
reads, grade parsing, evidence lookup in the diff, template rendering; no browser, no network). The
store holds 10 synthetic grades of 1,000 leaves each; every requirement leaf cites 3 lines of its own
hunk of a 1,000-hunk diff kept in the job that made the grade, and (unless --no-compared) every
failed leaf records what it was compared with (issue 25): a requirement the code unit of the next hunk, a
design or conclusion leaf a text item, so the page shows each inside its file or text. Targets (issue 16):
the grade page under 1 s; the queue paged over all 10,000 leaves without loading them.

The grade page shows a page of leaves (issue 42: a 5,015-leaf grade was one 58 MB page that headless
Chromium could not render). Then a real `expjudge serve` on the same store is opened in headless
Chromium: the time from asking for a grade's page to its first page shown (its leaves on screen and
review.js ready), for grades this server has not read yet (parsed and their diff indexed on that view)
and for one it has, with the page's bytes; target (issue 42): at most 2 s at 5,000 leaves. The floor, measured
in the same run and interleaved with them: the same Chromium showing the first page's HTML as the server sent it
(and the same CSS and JavaScript) from a static file server, which builds nothing: what the browser alone costs.

    .venv/bin/python bench/service/review_pages.py [--grades 6] [--leaves 5000] [--repeat 5] [--no-compared]
        [--no-browser] [--database-url URL]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()
# No warm spare grading process (judge/jobs/isolated_grading.py) loading its model beside the pages measured here:
# nothing is graded in this bench.
os.environ["EXPJUDGE_ISOLATED_SPARE"] = "false"

from fastapi.testclient import TestClient  # noqa: E402

from api.app import create_app  # noqa: E402
from api.review.leaf_paging import PAGE_LEAVES  # noqa: E402
from judge.devtools.local_services import offline_env, start_service  # noqa: E402
from judge.devtools.synthetic_grades import big_diff, big_grade, store_synthetic_grade  # noqa: E402
from judge.grading.grader import fingerprint_for  # noqa: E402
from judge.judges.embedded import EmbeddedJudge  # noqa: E402
from judge.rubric_loader import load_rubric  # noqa: E402
from judge.settings import Settings  # noqa: E402
from judge.store.review_records import KeyIdentity  # noqa: E402


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


# What the browser reports of the page it shows: navigation timing, first contentful paint, its bytes.
_TIMING = """const n = performance.getEntriesByType('navigation')[0];
const p = performance.getEntriesByName('first-contentful-paint')[0];
return [n.responseStart / 1000, p ? p.startTime / 1000 : null, n.decodedBodySize];"""


def static_copy(first_page: str, folder: Path) -> Path:
    """The grade's first page as served, and the review assets it loads, as files (`/page.html`, `/review/static/`)."""
    static = folder / "review" / "static"
    static.mkdir(parents=True)
    for asset in ("review.css", "review.js"):
        (static / asset).write_bytes((REPO_ROOT / "api" / "review" / "static" / asset).read_bytes())
    (folder / "page.html").write_text(first_page, encoding="utf-8")
    return folder


def static_server(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    """A file server of `folder` on loopback (a thread): the floor's server, which builds nothing."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def chromium_figures(url: str, secret: str, grade_ids: list[str], first_page: str, args: argparse.Namespace) -> None:
    """Open grade pages in headless Chromium against `expjudge serve` on the store at `url`, and print the times;
    the floor: the same Chromium showing `first_page` (the first page's HTML as served) from a static file server."""
    from tests.browser_support import browser_missing, headless_chromium, log_in, wait_for

    missing = browser_missing()
    if missing:
        print(f"Chromium figures skipped: {missing}")
        return
    folder = Path(tempfile.mkdtemp(prefix="review-bench-browser-"))
    service, base = start_service(folder, offline_env(EXPJUDGE_DATABASE_URL=url, EXPJUDGE_AUTH_ENABLED="true"))
    files, static_base = static_server(static_copy(first_page, folder / "static"))
    driver = headless_chromium(folder / "profile")
    try:
        log_in(driver, base, secret)

        def shown(path: str, where: str = base) -> tuple[float, float, float, int]:
            start = time.perf_counter()
            driver.get(where + path)  # returns once the page has loaded
            wait_for(lambda: driver.execute_script("return document.body.dataset.ready === 'true' && "
                                                   "document.querySelector('section.leaf') !== null"), path, 60)
            wall = time.perf_counter() - start
            answered, painted, size = driver.execute_script(_TIMING)
            return wall, answered, painted or wall, int(size)

        pages = -(-args.leaves // PAGE_LEAVES)
        cold, warm, last, floor = [], [], [], []
        for gid in grade_ids[1:args.repeat + 1]:  # interleaved: a change of the machine's load hits each alike
            cold.append(shown(f"/review/grades/{gid}"))
            warm.append(shown(f"/review/grades/{grade_ids[1]}"))
            last.append(shown(f"/review/grades/{grade_ids[1]}?page={pages}"))
            floor.append(shown("/page.html", static_base))
    finally:
        driver.quit()
        service.stop()
        files.shutdown()

    def line(name: str, runs: list[tuple[float, float, float, int]]) -> str:
        walls, answers, paints = ([run[i] for run in runs] for i in range(3))
        return (f"  {name}: shown in median {statistics.median(walls):.2f} s, max {max(walls):.2f} s (first paint "
                f"{statistics.median(paints):.2f} s, server's answer began {statistics.median(answers):.2f} s) over "
                f"{len(runs)}; {statistics.median(run[3] for run in runs) / 1e3:.0f} kB of HTML   target <= 2 s")

    print(f"Chromium (headless, `expjudge serve` on loopback), grade of {args.leaves} leaves, {PAGE_LEAVES} a page; "
          f"load average {os.getloadavg()[0]:.1f}; before (issue 42): one 58 MB page, Chromium timed out:")
    print(line("first page, grade not yet read by this server (parsed, diff indexed)", cold))
    print(line("first page again (grade and diff cached)", warm))
    print(line(f"last page ({pages})", last))
    print(line("floor: the same first page's HTML from a static file server (nothing built)", floor))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grades", type=int, default=6)
    parser.add_argument("--leaves", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-compared", action="store_true", help="leaves record nothing they were compared with "
                        "(the workload before issue 25)")
    parser.add_argument("--no-browser", action="store_true", help="server-side figures only (no Chromium)")
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
            grade = big_grade(args.leaves, fingerprint, not args.no_compared)
            portal.call(store_synthetic_grade, store, tenant, grade, diff)
            grade_ids.append(grade.grade_id)
        stored = time.perf_counter() - started
        _record, secret = portal.call(partial(store.api_keys.create, tenant, "ann", "reviewer"))
        client.get("/review/login")
        token = client.cookies.get("ej_login")
        client.post("/review/login", data={"api_key": secret, "login_token": token}, follow_redirects=False)

        grade_url = f"/review/grades/{grade_ids[0]}"
        first = client.get(grade_url)
        assert first.status_code == 200 and first.text.count('<section class="leaf') == min(args.leaves, PAGE_LEAVES)
        cited = first.text.count('<span class="stage">implementation</span>')
        assert first.text.count(' hit">') >= cited * 3  # every requirement's quoted lines found
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
    if not args.no_browser:
        chromium_figures(url, secret, grade_ids, first.text, args)
    print(f"command: .venv/bin/python bench/service/review_pages.py --grades {args.grades} --leaves {args.leaves} "
          f"--repeat {args.repeat}" + (" --no-compared" if args.no_compared else "")
          + (" --no-browser" if args.no_browser else "")
          + (f" --database-url {args.database_url}" if args.database_url else ""))


if __name__ == "__main__":
    main()
