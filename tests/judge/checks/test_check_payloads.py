"""Checks record typed facts and snippet metadata; what an LLM judge may see is declared on the model.

The grade's warning about a diff too big to embed whole reads the checks' `diff_shortlist`, so it is tested
here end to end: a claim against a diff of many hunks, and requirements against a diff that only deletes lines.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest

from judge.checks.claim_vs_diff.evidence import ClaimEvidenceSettings, build_claim_evidence
from judge.checks.claim_vs_diff.payload import ClaimFacts
from judge.checks.requirement.payload import HunkMeta, RequirementHunkFacts
from judge.embeddings.encoder import default_embedder
from judge.embeddings.shortlist import EMBED_ALL_UP_TO
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.judges.prompts import _render_facts
from judge.models import CheckSpec, Leaf, Submission, Task
from judge.models.evidence import SHOWN_TO_LLM, CheckFacts, SnippetMeta
from judge.rubric_loader import load_rubric
from judge.submission.view import SubmissionView

HUNKS = EMBED_ALL_UP_TO + 20


class _Facts(CheckFacts):
    said: Annotated[str, SHOWN_TO_LLM]
    found: Annotated[list[str], SHOWN_TO_LLM]
    count: int


def test_only_fields_declared_shown_reach_the_prompt() -> None:
    facts = _Facts(said="x < 1", found=[], count=3)
    assert _Facts.llm_fields() == ("said", "found")
    assert facts.for_llm() == {"said": "x < 1", "found": []}
    assert _render_facts(facts) == ' | facts: {"said":"x < 1"}'  # the empty finding is not worth the tokens
    assert _render_facts(CheckFacts()) == ""  # a leaf no check evidenced shows nothing


def test_a_payload_is_read_back_as_the_model_its_check_wrote() -> None:
    meta = HunkMeta(best_other=0.2, file_match=True)
    assert HunkMeta.of(meta) is meta
    with pytest.raises(TypeError, match="HunkMeta"):
        HunkMeta.of(SnippetMeta())
    with pytest.raises(ValueError, match="extra"):  # a misspelt key fails where it is written
        HunkMeta.model_validate({"best_other": 0.2, "file_match": True, "fil_match": False})


def _many_hunks(line: str, *, added: int = 1) -> str:
    """A diff of one file with HUNKS hunks, each removing one line and adding `added` (`line` has a {n} field)."""
    body = "".join(f"@@ -{10 * n + 1},1 +{10 * n + 1},{added} @@\n{line.format(n=n)}\n" for n in range(HUNKS))
    return f"--- a/src/big.py\n+++ b/src/big.py\n{body}"


def test_a_claim_against_a_diff_too_big_to_embed_whole_records_the_shortlist() -> None:
    diff = _many_hunks("-old_{n} = {n}\n+new_{n} = {n}")
    view = SubmissionView.build(Submission(submission_id="s", diff=diff))
    leaf = Leaf(id="claim", template_id="claim", stage="implementation", title="claim", criterion="c",
                kind="binary", weight=1.0, evidence=["diff"], check=CheckSpec(name="claim_vs_diff"),
                target="The value new_7 replaces old_7.")
    [evidence] = build_claim_evidence(default_embedder(), [leaf], view, [ClaimEvidenceSettings()])
    facts = ClaimFacts.of(evidence.facts)
    assert facts.hunks == HUNKS and facts.diff_shortlist is not None
    assert facts.diff_shortlist.unit == "windows" and facts.diff_shortlist.in_diff == HUNKS
    assert facts.diff_shortlist.narrowed
    assert "diff_shortlist" not in facts.for_llm() and "signals" not in facts.for_llm()


def test_requirements_against_a_big_deleting_diff_warn_that_a_lexical_pass_chose_the_hunks() -> None:
    task = Task(task_id="t:0", question="q", requirements=["Remove the legacy_7 setting", "Drop legacy_9"])
    submission = Submission(submission_id="s", task_id="t:0", diff=_many_hunks("-legacy_{n} = {n}", added=0))
    grader = Grader(load_rubric("expbench-v1"), EmbeddedJudge(), detect_copies=False)
    prepared = asyncio.run(grader.prepare(task, submission))
    requirement = next(e for e in prepared.evidence if e.leaf.id == "requirement.0")
    facts = RequirementHunkFacts.of(requirement.facts)
    assert facts.diff_shortlist is not None and facts.diff_shortlist.narrowed
    grade = asyncio.run(grader.grade(task, submission))
    shortlist = facts.diff_shortlist
    assert (f"a diff of {HUNKS} hunks: a lexical pass chose the {shortlist.embedded} compared with the "
            "requirements by embedding") in grade.warnings
