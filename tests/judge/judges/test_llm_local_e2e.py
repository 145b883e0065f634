"""The LLM judge end to end through litellm: the real local model, and a real failing HTTP server.

SmolLM2-135M is far too small to grade well; these tests prove the path (prompting, grammar-
constrained structured output, parsing, voting, quote checks, caching, failure handling),
not the quality of its verdicts.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import litellm
import pytest
from llm_test_support import (
    CONCLUSION,
    DESIGN,
    ORDINAL_LEVELS,
    SleepRecorder,
    args_hunk,
    eval_hunk,
    make_context,
    make_leaf,
    outcome_facts,
    requirement,
    snip,
)

from judge.judges.embedded import EmbeddedJudge
from judge.judges.llm import LLMJudge
from judge.judges.response_cache import InMemoryResponseCache
from judge.local_llm import LocalModelServer
from judge.models import LeafResult, Level
from judge.models.evidence import LeafEvidence
from judge.settings import Settings

pytestmark = pytest.mark.llm

SETTINGS = Settings(llm_max_transport_retries=2, llm_max_validation_retries=1, llm_timeout_seconds=120)
DESIGN_LEVELS = [
    Level(score=1.0, label="matched", anchor="In the design, same role, same values."),
    Level(score=0.5, label="partial", anchor="There, but wrong role or values."),
    Level(score=0.0, label="missing", anchor="Not in the design."),
]
REASONS = {"unsupported_evidence", "invalid_judge_output", "no_majority", "judge_error"}


def example_evidence() -> list[LeafEvidence]:
    design = make_leaf(
        "design_variable.0",
        check="design_variable_match",
        stage="design",
        kind="ordinal",
        levels=DESIGN_LEVELS,
        target="learning rate: 1e-4; 3e-4; 1e-3",
        target_meta={"role": "independent"},
    )
    claim = make_leaf(
        "outcome_claim.0",
        check="outcome_claim_supported",
        stage="conclusion",
        target="Accuracy peaks near 0.9 with a moderate learning rate.",
    )
    return [
        LeafEvidence(leaf=design, snippets=[snip(DESIGN.splitlines()[0], source="design", similarity=0.8)]),
        requirement(0, "Add a --lr command-line flag", args_hunk(), kind="ordinal"),
        requirement(1, "Log validation accuracy every epoch", eval_hunk(), kind="ordinal"),
        LeafEvidence(
            leaf=claim,
            snippets=[snip(CONCLUSION.split(". ")[0], source="conclusion")],
            facts=outcome_facts(log_check=["grounded: 0.91 in the logs"]),
        ),
    ]


def assert_valid(result: LeafResult, evidence: LeafEvidence) -> None:
    assert LeafResult.model_validate_json(result.model_dump_json()) == result
    assert result.judge == "llm" and result.leaf_id == evidence.leaf.id
    if result.verdict == "unscored":
        assert result.reason_code in REASONS and result.reason and result.score is None
    else:
        allowed = {lv.score for lv in evidence.leaf.levels} or {0.0, 1.0}  # binary leaves: pass or fail
        assert result.score in allowed
        assert result.votes and result.confidence == 1.0


async def test_local_model_grades_design_implementation_and_conclusion(local_llm: LocalModelServer) -> None:
    sent: list[dict[str, int]] = []

    async def recording_completion(**kwargs: Any) -> Any:
        response = await litellm.acompletion(**kwargs)
        sent.append(
            {"prompt_tokens": response.usage.prompt_tokens, "completion_tokens": response.usage.completion_tokens}
        )
        return response

    cache = InMemoryResponseCache()
    judge = LLMJudge(
        local_llm.model,
        api_base=local_llm.api_base,
        api_key="local",
        fallback=EmbeddedJudge(),
        settings=SETTINGS,
        cache=cache,
        completion=recording_completion,
    )
    evidence = example_evidence()
    outcome = await judge.judge_leaves(make_context(), evidence)

    for result, item in zip(outcome.results, evidence, strict=True):
        assert_valid(result, item)
    assert len(judge.plan_calls(evidence)) == 1  # the three stages fit one call
    assert len(sent) >= 1  # plus any validation re-asks
    assert outcome.usage.llm_calls == len(sent)
    assert outcome.usage.prompt_tokens == sum(s["prompt_tokens"] for s in sent) > 0
    assert outcome.usage.cost_usd == 0.0 and outcome.usage.latency_seconds > 0
    print(
        "\nlocal model calls (prompt, completion tokens):", [(s["prompt_tokens"], s["completion_tokens"]) for s in sent]
    )
    print("verdicts:", [(r.leaf_id, r.verdict, r.reason_code) for r in outcome.results])

    # A rerun answers every call that validated from the cache; a failed call is asked again.
    failed = {"judge_error", "invalid_judge_output"}
    by_id = {r.leaf_id: r for r in outcome.results}
    plans = judge.plan_calls(evidence)
    ok = [p for p in plans if not any(by_id[i].reason_code in failed for i in p.aliases.values())]
    sent.clear()
    again = await judge.judge_leaves(make_context(), evidence)
    assert again.usage.cache_hits == len(ok) and (again.usage.llm_calls == 0) == (len(ok) == len(plans))
    for plan in ok:
        assert [by_id[i].verdict for i in plan.aliases.values()] == [
            r.verdict for r in again.results if r.leaf_id in plan.aliases.values()
        ]


class _FakeOpenAI(BaseHTTPRequestHandler):
    """Chat-completions endpoint whose behaviour is chosen by the first path segment."""

    hits: ClassVar[Counter[str]] = Counter()

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        scenario = self.path.strip("/").split("/")[0]
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.hits[scenario] += 1
        if scenario == "error500":
            self._send(500, {"error": {"message": "internal failure", "type": "server_error"}})
        elif scenario == "ratelimit" and self.hits[scenario] == 1:
            self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "1"})
        else:
            self._send(200, self._completion(request, valid=scenario != "invalid"))

    @staticmethod
    def _completion(request: dict[str, Any], *, valid: bool) -> dict[str, Any]:
        slots = request["tools"][0]["function"]["parameters"]["properties"]["verdicts"]["prefixItems"]
        aliases = [slot["properties"]["leaf_id"]["const"] for slot in slots]
        verdicts = [{"leaf_id": a, "quotes": [], "rationale": "not shown", "verdict": "missing"} for a in aliases]
        arguments = json.dumps({"verdicts": verdicts}) if valid else '{"verdicts": [{"leaf_id": "L1", "quo'
        return {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "fake",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_0",
                                "type": "function",
                                "function": {"name": "GradeLeaves", "arguments": arguments},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
        }


@pytest.fixture
def fake_server() -> Iterator[str]:
    _FakeOpenAI.hits = Counter()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize(
    ("scenario", "verdict", "reason_code", "hits", "waits"),
    [
        ("invalid", "unscored", "invalid_judge_output", 2, []),  # 1 + llm_max_validation_retries
        ("error500", "unscored", "judge_error", 3, [1.0, 2.0]),  # 1 + llm_max_transport_retries
        ("ratelimit", "fail", None, 2, [1.0]),  # waits what Retry-After asks, then grades
    ],
)
async def test_failing_server_gives_unscored_leaves_with_reasons(
    fake_server: str, scenario: str, verdict: str, reason_code: str | None, hits: int, waits: list[float]
) -> None:
    sleep = SleepRecorder()
    judge = LLMJudge(
        "openai/fake",
        api_base=f"{fake_server}/{scenario}/v1",
        api_key="test",
        fallback=EmbeddedJudge(),
        settings=SETTINGS,
        sleep=sleep,
    )
    evidence = [
        requirement(0, "Add a --lr flag", args_hunk(), kind="ordinal"),
        requirement(1, "Log validation accuracy", eval_hunk(), kind="ordinal"),
    ]
    outcome = await judge.judge_leaves(make_context(), evidence)
    assert [(r.verdict, r.reason_code) for r in outcome.results] == [(verdict, reason_code)] * 2
    assert all(r.score is None for r in outcome.results) == (verdict == "unscored")
    if reason_code:
        assert all(r.reason for r in outcome.results)
    assert _FakeOpenAI.hits[scenario] == hits
    assert sleep.waits == waits
    assert ORDINAL_LEVELS[-1].label == "missing"


def test_cli_serves_the_local_model_until_interrupted() -> None:
    import signal
    import subprocess
    import sys

    import httpx

    from judge.local_llm import free_loopback_port

    port = free_loopback_port()
    cli = subprocess.Popen(
        [sys.executable, "-c", "from judge.cli.main import main; main()", "local-llm", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert cli.stdout is not None
        lines = [cli.stdout.readline() for _ in range(2)]
        assert lines[0].strip() == "model: openai/local"
        assert lines[1].strip() == f"api base: http://127.0.0.1:{port}/v1"
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).json()["data"][0]["id"] == "local"
        cli.send_signal(signal.SIGINT)
        assert cli.wait(timeout=30) == 0
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2)


def test_answer_schema_compiles_to_a_llama_grammar_with_one_slot_per_leaf() -> None:
    from llama_cpp import llama_grammar

    from judge.judges.llm_schemas import build_answer_model

    labels = {"L1": ("pass", "fail"), "L2": tuple(lv.label for lv in ORDINAL_LEVELS)}
    grammar = llama_grammar.json_schema_to_gbnf(json.dumps(build_answer_model(labels).model_json_schema()))
    assert '::= "\\"L1\\""' in grammar and '::= "\\"L2\\""' in grammar
    assert '"\\"implemented\\""' in grammar and "verdicts-tuple-1" in grammar


def test_a_block_citing_schema_compiles_to_a_grammar_admitting_only_each_leaf_s_blocks() -> None:
    from llama_cpp import llama_grammar

    from judge.judges.llm_schemas import build_answer_model

    labels = {"L1": ("pass", "fail"), "L2": ("pass", "fail")}
    model = build_answer_model(labels, {"L1": ("E1", "E2"), "L2": ()})
    grammar = llama_grammar.json_schema_to_gbnf(json.dumps(model.model_json_schema()))
    assert '"\\"E1\\""' in grammar and '"\\"E2\\""' in grammar and "quotes" not in grammar


async def test_local_model_grades_citing_blocks(local_llm: LocalModelServer) -> None:
    # Citing blocks through the real server: the grammar holds each slot to its leaf's own block ids, so every
    # citation the model makes is one of the blocks it was shown for that leaf.
    judge = LLMJudge(local_llm.model, api_base=local_llm.api_base, api_key="local", fallback=EmbeddedJudge(),
                     settings=SETTINGS, citations="blocks")
    evidence = example_evidence()
    outcome = await judge.judge_leaves(make_context(), evidence)
    for result, item in zip(outcome.results, evidence, strict=True):
        assert_valid(result, item)
        shown = {(s.source, s.location) for s in item.snippets}
        assert all((e.source, e.location) in shown for e in result.evidence), result
    print("verdicts:", [(r.leaf_id, r.verdict, r.reason_code, len(r.evidence)) for r in outcome.results])
