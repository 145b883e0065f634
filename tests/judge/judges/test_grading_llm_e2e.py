"""The whole grading pipeline (CLI -> Grader -> LLMJudge -> litellm) against the real local model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.grading.grader import Grader
from judge.judges.registry import build_judge
from judge.local_llm import LocalModelServer
from judge.models import DesignVariable, Submission, Task
from judge.rubric_loader import load_rubric
from judge.schemas import SCHEMAS_DIR

pytestmark = pytest.mark.llm
RUBRIC = Path(__file__).resolve().parents[3] / "rubrics" / "expbench-v1.yaml"

TASK = Task(
    task_id="tiny:0", question="Does a larger learning rate speed up training?",
    design_variables=[DesignVariable(name="learning_rate", role="independent", values=["0.01", "0.1"]),
                      DesignVariable(name="final_loss", role="dependent", description="training loss after 5 epochs")],
    requirements=["Step 1: add a --lr command-line argument to train.py",
                  "Step 2: log the final training loss to results.txt"],
    expected_outcome="The run with learning rate 0.1 reaches a lower final loss than the run with 0.01.",
)
DIFF = """diff --git a/train.py b/train.py
--- a/train.py
+++ b/train.py
@@ -1,3 +1,5 @@
 import argparse
 parser = argparse.ArgumentParser()
+parser.add_argument("--lr", type=float, default=0.01)
+# log the final loss
 args = parser.parse_args()
"""
SUBMISSION = Submission(
    submission_id="tiny-run", design="Independent variable: learning rate (0.01, 0.1). Dependent variable: final loss.",
    diff=DIFF, conclusion="With learning rate 0.1 the final loss was lower than with 0.01.",
)


def test_cli_grades_through_the_local_model(local_llm: LocalModelServer, tmp_path: Path) -> None:
    task_file, sub_file = tmp_path / "task.json", tmp_path / "submission.json"
    task_file.write_text(TASK.model_dump_json())
    sub_file.write_text(SUBMISSION.model_dump_json())
    _register_commands()
    result = CliRunner().invoke(app, ["grade", "--task", str(task_file), "--submission", str(sub_file),
                                      "--judge", local_llm.model, "--api-base", local_llm.api_base,
                                      "--concurrency", "1", "--json"])
    assert result.exit_code == 0, result.stderr
    grade = json.loads(result.stdout)
    jsonschema.validate(grade, json.loads((SCHEMAS_DIR / "grade.schema.json").read_text()))
    assert grade["fingerprint"]["model"] == local_llm.model and grade["fingerprint"]["prompt_hash"]
    assert grade["usage"]["llm_calls"] >= 1 and grade["usage"]["prompt_tokens"] > 0  # stages share a call
    llm_leaves = [leaf for leaf in grade["leaves"] if leaf["judge"] == "llm"]
    assert len(llm_leaves) == 5  # 2 variables, 2 requirements, 1 claim
    for leaf in llm_leaves:
        if leaf["verdict"] == "unscored":
            assert leaf["reason_code"] and leaf["reason"] and leaf["score"] is None
        else:
            assert leaf["votes"] and leaf["confidence"] is not None


def _implementation_only(tmp_path: Path) -> Path:
    """expbench-v1 cut to its implementation stage (its gates with it)."""
    data = yaml.safe_load(RUBRIC.read_text())
    data["id"] = "implementation-only"
    data["stages"] = [s for s in data["stages"] if s["stage"] == "implementation"]
    path = tmp_path / "implementation-only.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_empty_patch_fails_implementation_without_a_call(local_llm: LocalModelServer, tmp_path: Path) -> None:
    path = _implementation_only(tmp_path)
    judge = build_judge(local_llm.model, api_base=local_llm.api_base, max_concurrency=1)
    grader = Grader(load_rubric(str(path)), judge)
    for empty in ("", None):
        grade = asyncio.run(grader.grade(TASK, SUBMISSION.model_copy(update={"diff": empty})))
        assert grade.usage.llm_calls == 0 and grade.usage.prompt_tokens == 0
        assert [(lf.verdict, lf.reason_code, lf.judge) for lf in grade.leaves] == [("fail", "gate", "gate")] * 2
        assert grade.metrics.I == 0.0


def test_a_patch_where_no_code_acts_fails_implementation_without_a_call(local_llm: LocalModelServer,
                                                                        tmp_path: Path) -> None:
    path = _implementation_only(tmp_path)
    grader = Grader(load_rubric(str(path)), build_judge(local_llm.model, api_base=local_llm.api_base,
                                                        max_concurrency=1))
    restated = ("diff --git a/steps.py b/steps.py\nnew file mode 100644\n--- /dev/null\n+++ b/steps.py\n"
                "@@ -0,0 +1,6 @@\n+# add a --lr command-line argument to train.py\n+def add_lr_argument():\n"
                '+    """Add a --lr command-line argument."""\n+    raise NotImplementedError\n+\n'
                '+LOG_FINAL_LOSS = "log the final training loss to results.txt"\n')
    grade = asyncio.run(grader.grade(TASK, SUBMISSION.model_copy(update={"diff": restated})))
    assert grade.usage.llm_calls == 0
    assert [(lf.verdict, lf.reason_code, lf.judge) for lf in grade.leaves] == [("fail", "gate", "gate")] * 2
    assert "no code in the agent's diff does anything" in (grade.leaves[0].reason or "")
    acting = asyncio.run(grader.grade(TASK, SUBMISSION))  # the same rubric still asks the model about real code
    assert acting.usage.llm_calls >= 1 and {lf.judge for lf in acting.leaves} == {"llm"}
