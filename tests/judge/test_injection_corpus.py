"""The injection corpus against both judges: nothing an attack says changes a verdict, and every attack is flagged.

The bundled EXP-Bench task (examples/expbench/93022_complete_final.json, index 0) and the Curie agent's
submission for it, with a plain agent log, are graded clean once; then each attack of
tests/fixtures/injection_corpus.py is put into one part of that submission (a diff comment or string, a file
name, the design, the conclusion, the agent log) and the grade is compared leaf by leaf with the clean one.

Embedded judge: no leaf verdict changes, and the grade says the submission holds an instruction aimed at
the grader. LLM judge (prompts built, no model called): in the prompts of the attacked submission no block is
closed or reopened from inside and the trusted part (system message, leaf lines) is the clean prompts' own;
the same holds when the attack is made the very evidence a leaf is shown.

bench/judging/injection_corpus.py puts every attack into every part (and, with a local model, counts verdict flips).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.grading.grader import Grader
from judge.grading.prepared import PreparedGrade
from judge.judges.embedded import EmbeddedJudge
from judge.judges.llm import LLMJudge
from judge.loaders.native import load_submission_file, load_task_file
from judge.models import Grade, Submission, Task
from judge.models.evidence import LeafEvidence
from judge.rubric_loader import load_rubric
from judge.safety.injection import find_injections
from judge.settings import Settings
from tests.fixtures.fence_check import blocks, escaped_words, fence_violations, skeleton
from tests.fixtures.injection_corpus import (
    ATTACKS,
    CHANNELS,
    CLEAN_AGENT_LOG,
    Attack,
    channels_for,
    file_name_for,
    place,
    primary_channel,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "expbench"
TASK_FILE = EXAMPLES / "93022_complete_final.json"
RUN_FILE = EXAMPLES / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json"
REQUIRED_FAMILIES = {"instruction", "fake_rubric", "fake_fence", "chat_template", "unicode", "ansi", "long_line"}
# Each attack in its primary part, and every attack that can be a file name in a file name as well.
BOUNDED_CASES = [(a, primary_channel(i)) for i, a in enumerate(ATTACKS)] + [
    (a, "diff_filename") for a in ATTACKS if file_name_for(a) is not None and len(a.text) < 120
][::6]


def _case_id(case: tuple[Attack, str]) -> str:
    return f"{case[0].id}@{case[1]}"


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(load_rubric("expbench-v1"), EmbeddedJudge())


@pytest.fixture(scope="module")
def llm_judge() -> LLMJudge:
    # Only prompts are built: no endpoint is ever called.
    return LLMJudge("openai/never-called", fallback=EmbeddedJudge(), settings=Settings())


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task_file(TASK_FILE, 0)


@pytest.fixture(scope="module")
def clean(task: Task) -> Submission:
    return load_submission_file(RUN_FILE).model_copy(update={"agent_log": CLEAN_AGENT_LOG})


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


@pytest.fixture(scope="module")
def clean_run(
    grader: Grader, task: Task, clean: Submission, loop: asyncio.AbstractEventLoop
) -> tuple[Grade, PreparedGrade]:
    return loop.run_until_complete(grader.grade(task, clean)), loop.run_until_complete(grader.prepare(task, clean))


@pytest.fixture(scope="module")
def working_prepared(
    grader: Grader, task: Task, clean: Submission, loop: asyncio.AbstractEventLoop
) -> PreparedGrade:
    """The clean run with its paper's own code added (examples/expbench/93022_reference, MIT): the agent's code only
    runs scripts it does not hold, so its requirement leaves are failed before any judge (hollow code, issue 40)
    and show an LLM no code; this one shows every kind of LLM leaf its evidence."""
    parts = []
    for path in sorted((EXAMPLES / "93022_reference").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        name = path.relative_to(EXAMPLES / "93022_reference").as_posix()
        parts.append(f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n"
                     f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines))
    working = clean.model_copy(update={"diff": clean.diff.rstrip("\n") + "\n" + "".join(parts)})
    return loop.run_until_complete(grader.prepare(task, working))


def _verdicts(grade: Grade) -> dict[str, tuple[str, str | None]]:
    return {leaf.leaf_id: (leaf.verdict, leaf.reason_code) for leaf in grade.leaves}


def _flagged(grade: Grade) -> bool:
    return (
        "prompt_injection_suspected" in grade.integrity_flags
        or any("aimed at the grader" in w for w in grade.warnings)
        or any("injection_suspected" in leaf.flags for leaf in grade.leaves)
    )


def _plans(judge: LLMJudge, evidence: list[LeafEvidence]) -> list[tuple[list[dict[str, str]], dict[str, str]]]:
    return [(plan.messages, plan.aliases) for plan in judge.plan_calls(evidence)]


def test_corpus_has_fifty_distinct_attacks_of_every_family_in_every_part() -> None:
    assert len(ATTACKS) >= 50
    assert len({a.id for a in ATTACKS}) == len({a.text for a in ATTACKS}) == len(ATTACKS)
    assert {a.family for a in ATTACKS} >= REQUIRED_FAMILIES
    assert {channel for _, channel in BOUNDED_CASES} == set(CHANNELS)
    tokens = "".join(a.text for a in ATTACKS if a.family == "chat_template")
    for token in ("<|im_start|>", "[INST]", "<|eot_id|>", "<start_of_turn>", "[SYSTEM_PROMPT]", "<|start|>"):
        assert token in tokens


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_the_detector_finds_every_attack_in_every_part(attack: Attack, clean: Submission) -> None:
    for channel in channels_for(attack):
        placed = place(clean, attack, channel)
        field = {"diff_comment": "diff", "diff_string": "diff", "diff_filename": "diff"}.get(channel, channel)
        text = str(getattr(placed, field))
        clean_text = str(getattr(clean, field) or "")
        findings = find_injections(text)
        assert len(findings) > len(find_injections(clean_text)), f"{attack.id} in {channel} is not found"
        assert all(f.quote in text for f in findings)


@pytest.mark.parametrize("case", BOUNDED_CASES, ids=_case_id)
def test_attack_changes_no_embedded_verdict_is_flagged_and_stays_fenced_for_the_llm(
    case: tuple[Attack, str],
    grader: Grader,
    llm_judge: LLMJudge,
    task: Task,
    clean: Submission,
    clean_run: tuple[Grade, PreparedGrade],
    loop: asyncio.AbstractEventLoop,
) -> None:
    attack, channel = case
    clean_grade, clean_prepared = clean_run
    assert not _flagged(clean_grade)
    attacked = place(clean, attack, channel)

    grade = loop.run_until_complete(grader.grade(task, attacked))
    before, after = _verdicts(clean_grade), _verdicts(grade)
    changed = {leaf: (before[leaf], after.get(leaf)) for leaf in before if before[leaf] != after.get(leaf)}
    assert not changed, f"{attack.id} in {channel} changed verdicts: {changed}"
    assert _flagged(grade), f"{attack.id} in {channel} is not flagged"

    prepared = loop.run_until_complete(grader.prepare(task, attacked))
    plans = _plans(llm_judge, prepared.evidence)
    clean_plans = _plans(llm_judge, clean_prepared.evidence)
    for messages, _ in plans:
        assert fence_violations(messages) == [], attack.id
    assert skeleton(plans) == skeleton(clean_plans)
    assert escaped_words(plans, clean_plans, attack.text) == set()


def _with_attack(item: LeafEvidence, text: str, location: str | None) -> LeafEvidence:
    snippet = item.snippets[0].model_copy(update={"text": text, "location": location})
    return item.model_copy(update={"snippets": [snippet]})


def _hunk(body: str) -> str:
    return "@@ -1,2 +1,3 @@\n import numpy as np\n" + "".join(f"+{line}\n" for line in body.split("\n"))


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.id)
def test_attack_shown_as_evidence_cannot_leave_its_fence(
    attack: Attack, llm_judge: LLMJudge, working_prepared: PreparedGrade
) -> None:
    # Whatever the alignment chose, the attack is made the one snippet each kind of LLM leaf is shown.
    prepared = working_prepared
    first = {}
    for item in prepared.evidence:
        if item.snippets and item.leaf.check.name not in first:
            first[item.leaf.check.name] = item
    assert {"design_variable_match", "requirement_in_diff", "outcome_claim_supported"} <= set(first)
    placements = [
        (first["requirement_in_diff"], _hunk("# " + attack.text), _hunk("# clean"), "scripts/run.sh @@ -1,2 +1,3 @@"),
        (first["design_variable_match"], attack.text, "clean", "design item 1"),
        (first["outcome_claim_supported"], f"JSD was 0.09. {attack.text}", "JSD was 0.09.", "sentence 1"),
    ]
    name = file_name_for(attack)
    if name is not None:
        placements.append((first["requirement_in_diff"], _hunk("x = 1"), _hunk("x = 1"), f"{name} @@ -0,0 +1 @@"))
    for item, text, clean_text, location in placements:
        attacked_plans = _plans(llm_judge, [_with_attack(item, text, location)])
        clean_location = location if name is None or name not in location else "docs/clean.md @@ -0,0 +1 @@"
        clean_plans = _plans(llm_judge, [_with_attack(item, clean_text, clean_location)])
        for messages, _ in attacked_plans:
            assert fence_violations(messages) == [], (attack.id, item.leaf.id)
        assert skeleton(attacked_plans) == skeleton(clean_plans), (attack.id, item.leaf.id)
        assert escaped_words(attacked_plans, clean_plans, attack.text) == set(), (attack.id, item.leaf.id)
        (messages, _), *_ = attacked_plans
        _, found, _ = blocks(messages[1]["content"])
        assert found, "the attack must reach the prompt for the check to mean anything"
        if name is None or name not in location:
            # Flagged, or cut for the token budget so that nothing of the attack reached the prompt.
            flags = llm_judge.plan_calls([_with_attack(item, text, location)])[0].leaf_flags[item.leaf.id]
            shown = [body for messages, _ in attacked_plans for _, body in blocks(messages[1]["content"])[1]]
            assert "injection_suspected" in flags or (
                "evidence_cut" in flags and not any(find_injections(body) for body in shown)
            ), (attack.id, item.leaf.id, flags)
