"""Restatements the requirement model never trained on (bench/judging/restatement_forms.py) do not act, and the code
that does something still does: the gate's rules one by one, then whole grades of the toy task."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from judge.checks.requirement.acts import SubmissionActs, doc_blocks_act
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.models import Submission
from judge.reference.behaviour import Scope, behaviour_of
from judge.rubric_loader import load_rubric
from judge.safety.leak_detection import LeakDetector, redact
from judge.submission.code_line_roles import is_prose
from judge.submission.view import SubmissionView
from tests.judge.checks.test_requirement_behaviour import TRAIN, _grade, _implementation, _task

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[3] / "bench").iterdir()) if d.is_dir())
from reference_variants import RESTATEMENTS, added_diff
from restatement_forms import FORMS


def _acting(files: dict[str, str]) -> dict[str, bool]:
    """`path:first line` of each unit -> whether it acts."""
    view = SubmissionView.build(Submission(submission_id="s", task_id="t", diff=added_diff(files)))
    acts = SubmissionActs.of(view)
    return {f"{u.file_path}:{u.start_line}": acts.acts(n) for n, u in enumerate(acts.units)}


@pytest.mark.parametrize("body", [
    '    state["load_model"] = "load the pre-trained model from its checkpoint"\n    return state',
    "    state = {}\n    return state",
    "    results = []\n    status = None\n    return results",
    "    assert True",
    '    assert "the model is trained with label smoothing"',
    '    raise RuntimeError("unavailable in this environment")',
    "    raise NotImplementedError",
    '    state["load_pretrained"] = True\n    return state',
    "    text = str(state)\n    print(text)\n    return text",
])
def test_bodies_that_store_sentences_flags_or_empties_assert_literals_raise_or_convert_do_not_act(body: str) -> None:
    verdicts = _acting({"steps.py": f"def load_pretrained_model(state):\n{body}\n"})
    assert verdicts == {"steps.py:1": False}


@pytest.mark.parametrize("body", [
    "    assert model.training is False, 'eval mode'",
    '    plt.rcParams["font.size"] = 12',
    "    results = []\n    results.append(model(state))\n    return results",
    "    state['lr'] = 0.001\n    return train(model, lr=state['lr'])",
    '    os.environ["CUDA_VISIBLE_DEVICES"] = "0"',
    "    return float(model(state).mean())",
    "    if state is None:\n        raise ValueError('no state')\n    return model(state)",
])
def test_code_that_checks_configures_or_computes_still_acts(body: str) -> None:
    assert _acting({"steps.py": f"import os\n\n\ndef step(model, state):\n{body}\n"})["steps.py:4"] is True


def test_a_flag_set_under_a_key_acts_once_some_code_reads_that_key() -> None:
    unread = "class Pipeline:\n    def load(self):\n        self.state['loaded'] = True\n        return self\n"
    assert _acting({"pipeline.py": unread}) == {"pipeline.py:1": False}
    read = unread + "\n\ndef run(p):\n    if p.load().state['loaded']:\n        return train(p)\n"
    assert _acting({"pipeline.py": read})["pipeline.py:1"] is True


def test_a_sentence_bound_to_a_name_code_reads_acts_one_set_as_an_item_does_not() -> None:
    # A prompt or a template a program reads is part of what it does; a sentence filed under a key is a note.
    read = Scope(reads=frozenset({"PROMPT", "state", "step"}))
    assert behaviour_of('PROMPT = "You are a careful grader. Answer yes or no."', "python", read).acts == 1
    assert behaviour_of('PROMPT = "You are a careful grader. Answer yes or no."', "python", Scope(reads=frozenset())
                        ).acts == 0
    assert behaviour_of('state["step"] = "we load the data from its checkpoint"', "python", read).acts == 0
    assert behaviour_of('state["step"] = 3', "python", read).acts == 1


def test_imports_alone_do_not_act_the_code_that_uses_them_does() -> None:
    verdicts = _acting({"config.py": "from dataclasses import dataclass\nimport torch\n\n\n@dataclass\nclass Config:\n"
                                     "    device: str = str(torch.device('cpu'))\n"})
    assert verdicts["config.py:1"] is False
    assert verdicts["config.py:5"] is True  # `torch.device(...)`: a call


def test_a_documents_python_block_is_read_as_python_and_a_command_block_line_by_line() -> None:
    stub = "## Step 1\n\nLoad the model.\n\n```python\ndef load_model(path):\n    ...\n```\n"
    real = "## Step 1\n\n```python\ndef load_model(path):\n    return torch.load(path)\n```\n"
    command = "## Run\n\n```bash\npython train.py --lr 0.1\n```\n"
    echo = "## Run\n\n```bash\necho 'training the model'\n```\n"
    assert not doc_blocks_act("```python\ndef load_model(path):\n    ...\n```")
    assert _acting({"PLAN.md": stub}) == {"PLAN.md:1": False}
    assert _acting({"PLAN.md": real}) == {"PLAN.md:1": True}
    assert _acting({"README.md": command}) == {"README.md:1": True}
    assert _acting({"README.md": echo}) == {"README.md:1": False}


def test_what_is_left_of_blanked_copies_reads_as_prose_not_as_code() -> None:
    # The evidence layer blanks copied ground truth with spaces (offsets kept): the rest of a sentence must not
    # turn into a key, a name or (in Markdown, by its indent) a code block.
    assert is_prose(b'"                                        saving options"')
    assert is_prose(b'"                      s"') and is_prose(b'"                "')
    assert not is_prose(b'"font.size"') and not is_prose(b'"cuda:0"')
    assert doc_blocks_act("python train.py --epochs 3")
    assert not doc_blocks_act("                                                  saving options")


def test_a_copied_requirement_blanked_out_leaves_nothing_that_acts() -> None:
    task = _task(False)
    files = FORMS["call_chain"](list(task.requirements))
    detector = LeakDetector.for_task(task)
    submission = Submission(submission_id="s", task_id=task.task_id, diff=added_diff(files))
    findings = detector.scan_submission(submission)
    assert findings  # the sentences copy the requirements
    blanked = submission.model_copy(update={"diff": redact(submission.diff or "", findings, "diff")})
    acts = SubmissionActs.of(SubmissionView.build(blanked))
    assert not any(acts.acts(n) for n in range(len(acts.units)))


@pytest.fixture(scope="module", params=["expbench-v1", "expbench-v2"])
def grader(request: pytest.FixtureRequest) -> Grader:
    return Grader(load_rubric(str(request.param)), EmbeddedJudge())


# Forms the rules above stop; `unrelated_calls`, `shell_script`, `argparse_flags` and `class_state_flags` still
# pass leaves without the reference on some papers (names and flags made of the requirement's words, a flag
# key that is also a method's name): bench/judging/restatement_forms.py reports them.
STOPPED = ("markdown_plan", "identity_fns", "call_chain", "test_stubs", "dataclass_fields", "notebook", "json_spec",
           "raise_unavailable", "str_wrappers", "registry_decorators", "yaml_pipeline")


@pytest.mark.parametrize("reference", [True, False])
@pytest.mark.parametrize("form", STOPPED)
def test_unseen_restatement_forms_never_pass(grader: Grader, form: str, reference: bool) -> None:
    task = _task(reference)
    verdicts = _implementation(_grade(grader, task, added_diff(FORMS[form](list(task.requirements)))))
    assert verdicts and set(verdicts.values()) == {"fail"}, verdicts


@pytest.mark.parametrize("form", sorted(set(FORMS) - set(STOPPED)))
def test_forms_still_open_fail_against_the_reference(grader: Grader, form: str) -> None:
    task = _task(True)
    verdicts = _implementation(_grade(grader, task, added_diff(FORMS[form](list(task.requirements)))))
    assert verdicts and set(verdicts.values()) == {"fail"}, verdicts


def test_the_papers_own_code_beside_a_restated_plan_still_passes(grader: Grader) -> None:
    task = _task(True)
    files = {"train.py": TRAIN, **FORMS["markdown_plan"](list(task.requirements))}
    assert set(_implementation(_grade(grader, task, added_diff(files))).values()) == {"pass"}


@pytest.mark.parametrize("form", ["comments", "docstrings", "stubs", "constants", "prints"])
def test_a_diff_where_nothing_acts_is_failed_by_the_gate_before_any_judge(grader: Grader, form: str) -> None:
    task = _task(False)
    grade = _grade(grader, task, added_diff(RESTATEMENTS[form](list(task.requirements))))
    implementation = [leaf for leaf in grade.leaves if leaf.stage == "implementation"]
    assert implementation and all((leaf.verdict, leaf.judge, leaf.reason_code) == ("fail", "gate", "gate")
                                  for leaf in implementation)


def test_config_alone_or_code_beside_restatements_is_left_to_the_judge(grader: Grader) -> None:
    task = _task(False)
    requirements = list(task.requirements)
    beside = {"train.py": TRAIN, **RESTATEMENTS["comments"](requirements)}
    for files in (RESTATEMENTS["config"](requirements), beside):
        grade = _grade(grader, task, added_diff(files))
        assert {leaf.judge for leaf in grade.leaves if leaf.stage == "implementation"} == {"embedded"}
