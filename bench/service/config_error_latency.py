"""How fast a grade naming an LLM judge whose provider key is missing is refused, right after `expjudge serve`
starts (while the service still imports litellm in the background) and once it is warm.

Target (issue 41.8): under 1 s, also right after start. Before, such a request waited for the background litellm
import (2.3-2.5 s on the shared 2-CPU machine); the known providers' keys are now checked from the environment.

Each round starts a real `expjudge serve` on a free loopback port (SQLite, auth off, no provider key in its
environment), sends the request as soon as /healthz answers, then again once the log says "LLM client ready".

Run: .venv/bin/python bench/service/config_error_latency.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.devtools.local_services import offline_env, start_service, wait_until  # noqa: E402

TARGET_SECONDS = 1.0
EXAMPLE = ROOT / "examples" / "grade_request.json"


def _refusal(base: str, body: dict[str, Any]) -> tuple[int, float]:
    started = time.perf_counter()
    response = httpx.post(f"{base}/v1/grade", json=body, timeout=120)
    seconds = time.perf_counter() - started
    assert response.status_code == 422 and "OPENAI_API_KEY" in response.text, response.text
    return response.status_code, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    body = {**json.loads(EXAMPLE.read_text(encoding="utf-8")), "judge": "openai/gpt-4o-mini"}
    cold: list[float] = []
    warm: list[float] = []
    imports: list[float] = []
    before_ready = 0
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as root:
            env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{root}/expjudge.db",
                              EXPJUDGE_AUTH_ENABLED="false")
            for name in [k for k in env if k.endswith("_API_KEY") or k.startswith(("EXPJUDGE_LLM_", "OPENAI_"))]:
                del env[name]
            child, base = start_service(Path(root), env)
            try:
                _, seconds = _refusal(base, body)
                cold.append(seconds)
                before_ready += "LLM client ready" not in child.output()
                wait_until(lambda c=child: "LLM client ready" in c.output(), 120, "the LLM client warm-up")
                found = re.search(r"litellm imported in ([\d.]+) s", child.output())
                if found:
                    imports.append(float(found[1]))
                warm.append(_refusal(base, body)[1])
            finally:
                child.stop()
    print(f"missing provider key refused right after start: median {statistics.median(cold):.3f} s, "
          f"max {max(cold):.3f} s over {len(cold)} starts ({before_ready} answered before the litellm import ended)")
    print(f"missing provider key refused once warm:           median {statistics.median(warm):.3f} s, "
          f"max {max(warm):.3f} s")
    if imports:
        print(f"the background litellm import it no longer waits for: median {statistics.median(imports):.1f} s")
    print(f"target: < {TARGET_SECONDS:.1f} s -> {'met' if max(cold + warm) < TARGET_SECONDS else 'NOT met'}")
    print("reproduce: .venv/bin/python bench/service/config_error_latency.py --rounds 3")


if __name__ == "__main__":
    main()
