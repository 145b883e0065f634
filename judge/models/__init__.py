"""Domain models: tasks (ground truth), submissions, rubrics and grades."""

from judge.models.grade import (
    CalibrationStatus,
    EvidenceQuote,
    ExpBenchMetrics,
    Grade,
    JudgeFingerprint,
    LeafResult,
    ReasonCode,
    StageScore,
    Usage,
    Verdict,
)
from judge.models.hashing import canonical_json, content_hash
from judge.models.rubric import (
    STAGES,
    CheckSpec,
    EvidenceSource,
    Gate,
    Leaf,
    LeafTemplate,
    Level,
    MetricThresholds,
    Rubric,
    Stage,
    StageSpec,
)
from judge.models.submission import Execution, Submission, TrajectoryStep
from judge.models.task import VARIABLE_ROLES, DesignVariable, Task, VariableRole

__all__ = [
    "STAGES",
    "VARIABLE_ROLES",
    "CalibrationStatus",
    "CheckSpec",
    "DesignVariable",
    "EvidenceQuote",
    "EvidenceSource",
    "Execution",
    "ExpBenchMetrics",
    "Gate",
    "Grade",
    "JudgeFingerprint",
    "Leaf",
    "LeafResult",
    "LeafTemplate",
    "Level",
    "MetricThresholds",
    "ReasonCode",
    "Rubric",
    "Stage",
    "StageScore",
    "StageSpec",
    "Submission",
    "Task",
    "TrajectoryStep",
    "Usage",
    "VariableRole",
    "Verdict",
    "canonical_json",
    "content_hash",
]
