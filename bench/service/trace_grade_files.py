"""List the repository files one embedded `POST /v1/grade` really executes, from a trace (not by hand).

The service app runs in this process (its lifespan, a scratch SQLite store, auth off), a first grade warms
it up (imports, the embedding model, the rubric cache), then a second grade of other content (a grade-cache
miss and a conclusion no embedding cache holds yet: the whole way) is traced: every function call in every
thread (`sys.settrace` and `threading.settrace`, installed before any thread exists) whose code lies in
`judge/`, `api/` or `calibration/` is recorded; module bodies (imports) are not calls of the grade and are left out.

With `--check docs/architecture.md`, also says whether the document names every executed file, by its
path or by a folder all of whose files are executed, and names no file (or folder file) the grade does
not execute; exit code 1 when it does not. The section headed "## The library's layout" maps folders to
what they hold, not to this grade, and is not read.

Run: .venv/bin/python bench/service/trace_grade_files.py [--check docs/architecture.md] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import threading
import uuid
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("judge", "api", "calibration")
_PREFIXES = tuple(f"{ROOT / p}{os.sep}" for p in PACKAGES)
_recording = False
_calls: Counter[str] = Counter()


def _tracer(frame: FrameType, event: str, arg: Any) -> None:
    # A global trace function: called on every new frame; returning None asks for no line events.
    if _recording and event == "call":
        code = frame.f_code
        if code.co_name != "<module>" and code.co_filename.startswith(_PREFIXES):
            _calls[code.co_filename] += 1


sys.settrace(_tracer)
threading.settrace(_tracer)  # every thread started from now on (the executors grades run their parts in)
sys.path.insert(0, str(ROOT))


async def _grade_twice(request: dict[str, Any]) -> dict[str, Any]:
    global _recording
    import httpx

    from api.app import create_app
    from judge.settings import Settings

    folder = tempfile.mkdtemp(prefix="trace-grade-")
    # No warm spare grading process: its warm-up is the service's start, not the grade (a grade this small is
    # made in the service), and its callback could land inside the traced grade, whenever the model loads.
    settings = Settings(database_url=f"sqlite+aiosqlite:///{folder}/trace.db", auth_enabled=False,
                        isolated_spare=False)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://trace", timeout=600) as client:
            warm = await client.post("/v1/grade", json=request)
            warm.raise_for_status()
            submission = request["submission"]
            # New text every run: the persistent embedding cache must miss, as it does for a new submission.
            fresh = f"{submission.get('conclusion') or ''} (traced {uuid.uuid4().hex})"
            traced = {**request, "submission": {**submission, "submission_id": "traced", "conclusion": fresh}}
            _recording = True
            try:
                response = await client.post("/v1/grade", json=traced)
            finally:
                _recording = False
            response.raise_for_status()
            grade: dict[str, Any] = response.json()
            return grade


def traced_files(request_path: Path) -> list[str]:
    """Repository-relative paths of the files one traced grade executes, sorted."""
    from judge.settings import configure_offline_environment

    configure_offline_environment()
    request = json.loads(request_path.read_text(encoding="utf-8"))
    request["judge"] = "embedded"
    grade = asyncio.run(_grade_twice(request))
    if grade["usage"].get("cache_hits"):
        raise SystemExit("the traced grade came from the cache; it must be a miss to trace the whole way")
    return sorted(str(Path(f).relative_to(ROOT)) for f in _calls)


def check_document(files: list[str], document: Path) -> list[str]:
    """What the document gets wrong: executed files it does not name, named files the grade does not run."""
    text = re.sub(r"^## The library's layout\n.*?(?=^## )", "", document.read_text(encoding="utf-8"),
                  flags=re.S | re.M)
    named = set(re.findall(r"`((?:judge|api|calibration)/[\w/.-]*)`", text))
    folders = {n for n in named if n.endswith("/")}
    paths = {n for n in named if n.endswith(".py")}
    executed = set(files)
    problems = [f"executed, not named: {f}" for f in files
                if f not in paths and not any(f.startswith(folder) for folder in folders)]
    problems += [f"named, not executed: {p}" for p in sorted(paths - executed)]
    for folder in sorted(folders):
        idle = sorted(str(p.relative_to(ROOT)) for p in (ROOT / folder).glob("*.py")
                      if str(p.relative_to(ROOT)) not in executed)
        problems += [f"named folder {folder} holds a file not executed: {p}" for p in idle]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--request", type=Path, default=ROOT / "examples" / "grade_request.json")
    parser.add_argument("--check", type=Path, default=None, help="a document that must name exactly these files")
    parser.add_argument("--json", type=Path, default=None, help="write the list here as JSON")
    args = parser.parse_args()
    files = traced_files(args.request)
    by_package = Counter(f.split("/", 1)[0] for f in files)
    for f in files:
        print(f"{_calls[str(ROOT / f)]:8d}  {f}")
    print(f"{len(files)} files executed by one embedded POST /v1/grade: "
          + ", ".join(f"{n} in {p}/" for p, n in sorted(by_package.items())))
    if args.json is not None:
        args.json.write_text(json.dumps(files, indent=1) + "\n", encoding="utf-8")
    if args.check is None:
        return 0
    problems = check_document(files, args.check)
    for problem in problems:
        print(f"  {problem}")
    print(f"{args.check}: {'names exactly the executed files' if not problems else f'{len(problems)} problems'}")
    print(f"reproduce: .venv/bin/python bench/service/trace_grade_files.py --check {args.check}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
