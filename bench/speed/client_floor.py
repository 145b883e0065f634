"""The CPU one upstream call costs in the LLM client stack alone, as a floor for the service figures.

Measures, in this process against a running OpenAI-compatible stub, the CPU time per call of
  1. a bare `litellm.acompletion` of the request the judge sends (its messages, tool schema, tool choice,
     temperature, seed, max_tokens, timeout, no litellm retries, and the per-request zero prices the
     transport sends for a model litellm does not price): what any litellm caller pays, and
  2. `LLMTransport.call` (litellm through instructor, with tenacity and metering: what a judge call pays).
The two alternate in rounds (the machine's speed swings); each figure is the median of its rounds.
No grading, store or HTTP service is involved, so no service can do a call for less than this with
the chosen stack (litellm + instructor); the service figures of the benches are read against it.

Used by bench/service/api_overhead.py and bench/speed/regrade_throughput.py; runs alone as
    .venv/bin/python bench/speed/client_floor.py [--calls 200] [--rounds 5]
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from judge.devtools.local_services import start_openai_stub  # noqa: E402
from judge.judges.llm_schemas import build_answer_model  # noqa: E402
from judge.judges.llm_transport import UNPRICED_REQUEST_PRICING, LLMTransport, TransportConfig  # noqa: E402
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


async def measure_floor(api_base: str, calls: int = 200, rounds: int = 1) -> dict[str, float]:
    """CPU ms per call of bare litellm and of the judge's transport, against `api_base` (an /v1 URL)."""
    import statistics

    import litellm

    answer = build_answer_model({f"L{i}": ("pass", "fail") for i in range(1, 9)})
    tool = {"type": "function", "function": {"name": "GradeLeaves", "parameters": answer.model_json_schema()}}
    config = TransportConfig.from_settings(MODEL, Settings(llm_api_key="sk-stub"), api_base=api_base)
    transport = LLMTransport(config)

    async def bare() -> Any:
        return await litellm.acompletion(
            model=MODEL, api_base=api_base, api_key="sk-stub", messages=[dict(m) for m in MESSAGES], tools=[tool],
            tool_choice={"type": "function", "function": {"name": "GradeLeaves"}}, temperature=config.temperature,
            timeout=config.timeout_seconds, seed=0, max_tokens=500, num_retries=0, max_retries=0,
            **UNPRICED_REQUEST_PRICING)

    async def judged() -> Any:
        return await transport.call(MESSAGES, answer, seed=0, max_tokens=500)

    bare_ms: list[float] = []
    judged_ms: list[float] = []
    for _ in range(rounds):
        bare_ms.append(await _cpu_per_call(bare, calls))
        judged_ms.append(await _cpu_per_call(judged, calls))
    return {"litellm": statistics.median(bare_ms), "transport": statistics.median(judged_ms)}


def floor_line(floor: dict[str, float]) -> str:
    """One printed line with both figures and their ratio."""
    return (f"client floor (this process, no service): litellm.acompletion {floor['litellm']:.2f} ms CPU per call; "
            f"litellm + instructor (LLMTransport.call) {floor['transport']:.2f} ms CPU per call = "
            f"{floor['transport'] / floor['litellm']:.2f}x bare litellm (target <= 1.2x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    stub, base = start_openai_stub(Path(tempfile.mkdtemp(prefix="floor-")), "--latency-ms", "0")
    try:
        print(floor_line(asyncio.run(measure_floor(f"{base}/v1", args.calls, args.rounds))))
        print(f"reproduce: .venv/bin/python bench/speed/client_floor.py --calls {args.calls} --rounds {args.rounds}")
    finally:
        stub.stop()


if __name__ == "__main__":
    main()
