"""Builders for LLM-judge tests: leaves, evidence, a grading context and a scripted model.

The scripted model stands in for `litellm.acompletion` only: it returns real litellm
`ModelResponse` objects with a tool call, so instructor's parsing, the answer schema's
validation, the transport's retries, the vote and the quote checks all run for real.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import litellm

from judge.checks.outcome_claim.payload import OutcomeFacts, UngroundedReading
from judge.models import (
    CheckSpec,
    DesignVariable,
    Leaf,
    LeafTemplate,
    Level,
    MetricThresholds,
    Rubric,
    StageSpec,
    Submission,
    Task,
)
from judge.models.evidence import AlignedSnippet, GradingContext, LeafEvidence
from judge.models.submission import Execution

DIFF = """\
diff --git a/train.py b/train.py
--- a/train.py
+++ b/train.py
@@ -10,6 +10,8 @@ def main():
     parser = argparse.ArgumentParser()
     parser.add_argument("--epochs", type=int, default=10)
+    parser.add_argument("--lr", type=float, default=3e-4)
+    parser.add_argument("--warmup_steps", type=int, default=500)
     args = parser.parse_args()
@@ -40,4 +42,6 @@ def main():
     for epoch in range(args.epochs):
         loss = train_one_epoch(model, loader)
+        acc = evaluate(model, val_loader)
+        print(f"epoch {epoch} val_acc={acc:.4f}")
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1,2 +1,3 @@
 # Project
+Run `python train.py --lr 3e-4`.
"""
HUNK_ARGS = DIFF.split("@@ -10,6")[1].split("@@ -40")[0]
HUNK_ARGS = "@@ -10,6" + HUNK_ARGS
HUNK_EVAL = "@@ -40" + DIFF.split("@@ -40")[1].split("diff --git a/README.md")[0]
HUNK_README = "@@ -1,2" + DIFF.split("@@ -1,2")[1]
DESIGN = (
    "Independent variable: learning rate (1e-4, 3e-4, 1e-3).\n"
    "Dependent variable: validation accuracy after each epoch.\n"
    "Constant: 10 epochs, batch size 64."
)
CONCLUSION = "Validation accuracy peaked at 0.91 with lr=3e-4. Higher learning rates diverged after epoch 3."

LR_QUOTE_TEXT = 'parser.add_argument("--lr", type=float, default=3e-4)'

ORDINAL_LEVELS = [
    Level(score=1.0, label="implemented", anchor="A hunk does what the requirement asks."),
    Level(score=0.5, label="partial", anchor="The diff starts on it but leaves an essential part out."),
    Level(score=0.0, label="missing", anchor="No hunk does what the requirement asks."),
]
_CRITERIA = {
    "design_variable_match": "Does the design contain this ground-truth variable, in the same role, with its values?",
    "requirement_in_diff": "Do the hunks shown implement this requirement?",
    "outcome_claim_supported": "Does the conclusion support this claim of the expected outcome?",
    "claim_vs_diff": "Is this claim about the diff correct?",
    "exit_status": "Did the agent's reproduce script run to completion?",
}
_STAGE_SOURCE = {"design": "design", "implementation": "diff", "conclusion": "conclusion", "execution": "execution"}


def make_leaf(
    leaf_id: str,
    *,
    check: str,
    stage: str,
    target: str,
    kind: str = "binary",
    levels: list[Level] | None = None,
    error_category: str | None = None,
    target_meta: dict[str, Any] | None = None,
) -> Leaf:
    """A leaf as a rubric template would expand it."""
    return Leaf(
        id=leaf_id,
        template_id=leaf_id.split(".")[0],
        stage=stage,
        title=f"{check} {leaf_id}",
        criterion=_CRITERIA[check],
        kind=kind,
        levels=levels or [],
        weight=1.0,
        evidence=[_STAGE_SOURCE[stage]],
        check=CheckSpec(name=check),
        target=target,
        target_meta=target_meta or {},
        error_category=error_category,
    )


def snip(text: str, *, source: str = "diff", location: str | None = None, similarity: float = 0.7) -> AlignedSnippet:
    """An aligned snippet."""
    return AlignedSnippet(source=source, text=text, location=location, similarity=similarity)


def requirement(index: int, target: str, *snippets: AlignedSnippet, kind: str = "binary") -> LeafEvidence:
    """An implementation leaf with its aligned hunks."""
    leaf = make_leaf(
        f"requirement.{index}",
        check="requirement_in_diff",
        stage="implementation",
        target=target,
        kind=kind,
        levels=ORDINAL_LEVELS if kind == "ordinal" else None,
        error_category="missing essential components",
    )
    return LeafEvidence(leaf=leaf, snippets=list(snippets))


def outcome_facts(*, log_check: list[str] | None = None) -> OutcomeFacts:
    """The facts the outcome check records for a claim stating a number, with an execution record in."""
    return OutcomeFacts(needs_measured_result="states 0.9", record_present=True,
                        ungrounded_reading=UngroundedReading(verdict="pass", score=1.0), statement=[],
                        log_check=log_check or [])


def args_hunk() -> AlignedSnippet:
    return snip(HUNK_ARGS, location="train.py @@ -10,6 +10,8 @@")


def eval_hunk() -> AlignedSnippet:
    return snip(HUNK_EVAL, location="train.py @@ -40,4 +42,6 @@")


def small_rubric() -> Rubric:
    """A minimal valid rubric (the judge reads leaves, not the rubric tree)."""
    template = LeafTemplate(
        id="requirement",
        title="Requirement",
        evidence=["diff"],
        check=CheckSpec(name="requirement_in_diff"),
        criterion=_CRITERIA["requirement_in_diff"],
    )
    return Rubric(
        id="test-rubric",
        version="1",
        thresholds=MetricThresholds(design_correct_at=70, implementation_correct_at=70, conclusion_correct_at=60),
        stages=[StageSpec(stage="implementation", leaves=[template])],
    )


def make_context(*, diff: str = DIFF, design: str = DESIGN, conclusion: str = CONCLUSION) -> GradingContext:
    """A grading context whose source texts are the submission's parts (as the evidence layer fills them)."""
    task = Task(
        task_id="t:0",
        design_variables=[DesignVariable(name="learning_rate", role="independent", values=["1e-4", "3e-4", "1e-3"])],
        requirements=["Add a --lr flag", "Log validation accuracy every epoch"],
        expected_outcome="Accuracy peaks near 0.9 with a moderate learning rate.",
    )
    submission = Submission(
        submission_id="s1",
        design=design,
        diff=diff,
        conclusion=conclusion,
        execution=Execution(exit_code=0, logs="epoch 9 val_acc=0.9100\n"),
    )
    return GradingContext(
        task=task,
        submission=submission,
        rubric=small_rubric(),
        source_texts={
            "design": design,
            "diff": diff,
            "conclusion": conclusion,
            "execution": "epoch 9 val_acc=0.9100\n",
        },
    )


def tool_response(
    arguments: str | dict[str, Any],
    *,
    prompt_tokens: int = 120,
    completion_tokens: int = 30,
    finish_reason: str = "tool_calls",
) -> litellm.ModelResponse:
    """A chat completion whose message calls the GradeLeaves tool with `arguments`."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return litellm.ModelResponse(
        model="scripted",
        choices=[
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "GradeLeaves", "arguments": args}}
                    ],
                },
            }
        ],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    )


def answer(verdicts: dict[str, tuple[str, list[str]]]) -> dict[str, Any]:
    """Tool arguments: alias -> (verdict, quotes)."""
    return {
        "verdicts": [
            {"leaf_id": alias, "quotes": quotes, "rationale": f"because {alias}", "verdict": verdict}
            for alias, (verdict, quotes) in verdicts.items()
        ]
    }


@dataclass
class Request:
    """One request the scripted model received."""

    kwargs: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.kwargs["messages"])

    @property
    def seed(self) -> int | None:
        return self.kwargs.get("seed")

    @property
    def aliases(self) -> list[str]:
        """The leaf ids of the answer schema's slots, in order."""
        slots = self.kwargs["tools"][0]["function"]["parameters"]["properties"]["verdicts"]["prefixItems"]
        return [slot["properties"]["leaf_id"]["const"] for slot in slots]

    def labels(self) -> dict[str, list[str]]:
        """Alias -> the verdict labels its slot admits."""
        slots = self.kwargs["tools"][0]["function"]["parameters"]["properties"]["verdicts"]["prefixItems"]
        return {slot["properties"]["leaf_id"]["const"]: slot["properties"]["verdict"]["enum"] for slot in slots}

    def targets(self) -> dict[str, str]:
        """Alias -> ground-truth target, read from the prompt's leaf lines."""
        user = self.messages[1]["content"]
        return {
            m.group(1): json.loads(m.group(2)) for m in re.finditer(r'^(L\d+) \[C\d+\] target: (".*?") ', user, re.M)
        }


Step: TypeAlias = dict[str, Any] | litellm.ModelResponse | BaseException | Callable[["Request"], Any]


@dataclass
class ScriptedModel:
    """Replays `steps` in order (the last step repeats); each step answers one request."""

    steps: list[Step]
    requests: list[Request] = field(default_factory=list)

    async def __call__(self, **kwargs: Any) -> litellm.ModelResponse:
        request = Request(kwargs)
        self.requests.append(request)
        step: Any = self.steps[min(len(self.requests) - 1, len(self.steps) - 1)]
        if callable(step) and not isinstance(step, BaseException | litellm.ModelResponse):
            step = step(request)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, litellm.ModelResponse):
            return step
        return tool_response(step)


class SleepRecorder:
    """Stands in for asyncio.sleep in transport retries: records each wait, returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
