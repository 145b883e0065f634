"""The CPU one upstream call costs in the LLM client stack alone, as a floor for the service figures.

Measures, in this process against a running OpenAI-compatible stub, the CPU time per call of
  1. a bare `litellm.acompletion` with the judge's tool schema (what any litellm caller pays), and
  2. `LLMTransport.call` (litellm through instructor, with tenacity and metering: what a judge call pays).
No grading, store or HTTP service is involved, so no service can do a call for less than this with
the chosen stack (litellm + instructor); the service figures of the benches are read against it.

Used by bench/api_overhead.py and bench/regrade_throughput.py; runs alone as
    .venv/bin/python bench/client_floor.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from judge.devtools.local_services import start_openai_stub  # noqa: E402
from judge.judges.llm_schemas import build_answer_model  # noqa: E402
from judge.judges.llm_transport import LLMTransport, TransportConfig  # noqa: E402
from judge.settings import Settings  # noqa: E402

MODEL = "openai/stub-floor"
# A call of the shape the judge sends: eight binary leaves, ~1,600 prompt tokens.
MESSAGES = [{"role": "system", "content": "Grade each leaf. " * 100},
            {"role": "user", "content": "Evidence block line. " * 300}]


async def _cpu_per_call(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    for _ in range(5):  # connections, imports, caches
        await call()
    started = time.process_time()
    for _ in range(calls):
        await call()
    return 1000 * (time.process_time() - started) / calls


async def measure_floor(api_base: str, calls: int = 200) -> dict[str, float]:
    """CPU ms per call of bare litellm and of the judge's transport, against `api_base` (an /v1 URL)."""
    import litellm

    answer = build_answer_model({f"L{i}": ("pass", "fail") for i in range(1, 9)})
    tool = {"type": "function", "function": {"name": "GradeLeaves", "parameters": answer.model_json_schema()}}
    transport = LLMTransport(TransportConfig.from_settings(MODEL, Settings(llm_api_key="sk-stub"), api_base=api_base))

    async def bare() -> Any:
        return await litellm.acompletion(model=MODEL, api_base=api_base, api_key="sk-stub", messages=MESSAGES,
                                         tools=[tool], tool_choice={"type": "function",
                                                                    "function": {"name": "GradeLeaves"}})

    async def judged() -> Any:
        return await transport.call(MESSAGES, answer, seed=0, max_tokens=500)

    return {"litellm": await _cpu_per_call(bare, calls), "transport": await _cpu_per_call(judged, calls)}


def floor_line(floor: dict[str, float]) -> str:
    """One printed line with both figures."""
    return (f"client floor (this process, no service): litellm.acompletion {floor['litellm']:.2f} ms CPU per call; "
            f"litellm + instructor (LLMTransport.call) {floor['transport']:.2f} ms CPU per call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    stub, base = start_openai_stub(Path(tempfile.mkdtemp(prefix="floor-")), "--latency-ms", "0")
    try:
        print(floor_line(asyncio.run(measure_floor(f"{base}/v1", args.calls))))
    finally:
        stub.stop()


if __name__ == "__main__":
    main()
