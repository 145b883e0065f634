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
from judge.models.process_inputs import LEGACY_METADATA_KEYS, FinalTest, ImprovementRange, ProcessInputs
from judge.models.reference import ReferenceFile, ReferenceLocation, ReferenceOrigin, ReferenceSpan
from judge.models.reference_use import ReferenceUse
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
    "LEGACY_METADATA_KEYS",
    "STAGES",
    "VARIABLE_ROLES",
    "CalibrationStatus",
    "CheckSpec",
    "DesignVariable",
    "EvidenceQuote",
    "EvidenceSource",
    "Execution",
    "ExpBenchMetrics",
    "FinalTest",
    "Gate",
    "Grade",
    "ImprovementRange",
    "JudgeFingerprint",
    "Leaf",
    "LeafResult",
    "LeafTemplate",
    "Level",
    "MetricThresholds",
    "ProcessInputs",
    "ReasonCode",
    "ReferenceFile",
    "ReferenceLocation",
    "ReferenceOrigin",
    "ReferenceSpan",
    "ReferenceUse",
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
