"""What `exit_status` and `expected_artifacts` record: the run's log class, exit code and taxonomy label, and
(for artefacts) what the task expects and what the run did not produce. Both checks are decided mechanically,
never by an LLM; the facts are declared shown to an LLM all the same (they are mechanical findings, no agent
prose), should a rubric ever let one decide."""

from __future__ import annotations

from typing import Annotated

from judge.models.evidence import SHOWN_TO_LLM, CheckFacts
from judge.submission.execution_errors import ExecutionClass


class ExecutionFacts(CheckFacts):
    """Attributes:
    error_class: The log's class ("success", "no_record", or a failure class).
    exit_code: The recorded exit code (None when unknown).
    taxonomy_label: EXP-Bench's label of the failure class (None for success and no record).
    """

    error_class: Annotated[ExecutionClass, SHOWN_TO_LLM]
    exit_code: Annotated[int | None, SHOWN_TO_LLM]
    taxonomy_label: Annotated[str | None, SHOWN_TO_LLM]


class ArtifactFacts(ExecutionFacts):
    """Attributes:
    expected: The artefacts and metrics the task expects.
    missing: Those the run neither produced nor named in its logs.
    """

    expected: Annotated[list[str], SHOWN_TO_LLM]
    missing: Annotated[list[str], SHOWN_TO_LLM]
